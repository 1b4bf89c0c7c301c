"""The build programs' own monitor that sleeps in each step: a short build then lasts long enough to be
seen and cancelled from outside. Beside the programs, so each imports it as a plain module (its directory
is the script's), with no trt_tui import."""

import time

import tensorrt_rtx as trt


class SlowMonitor(trt.IProgressMonitor):
    def __init__(self, step_seconds):
        trt.IProgressMonitor.__init__(self)
        self.step_seconds = step_seconds

    def phase_start(self, phase_name, parent_phase, num_steps):
        pass

    def step_complete(self, phase_name, step):
        time.sleep(self.step_seconds)
        return True

    def phase_finish(self, phase_name):
        pass
