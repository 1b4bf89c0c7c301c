"""A build script using trt-tui's public API, as a user writes one.

Usage: api_build.py MODEL.onnx ENGINE [--plain-call] [--own-monitor] [--cancel-from-thread]
[--no-history] [--no-observe] [--slow-steps SECONDS] [--display MODE]. Builds MODEL with TensorRT-RTX inside
`trt_tui.observe(config)` (`--no-observe`: without it), writes ENGINE only when a build came back,
then prints `RESULT` and one line of JSON about the observation (and, with `--own-monitor`, how often
its own monitor was called; `--slow-steps` makes that monitor sleep in each step, so a short build
lasts long enough to be seen). Ctrl-C reaches it as a KeyboardInterrupt: it prints
`interrupted: returned=True|False engine=None|bytes raised at: LINE` and exits 130.
"""

import json
import linecache
import sys
import threading
import time

import tensorrt_rtx as trt

import trt_tui


class CountingMonitor(trt.IProgressMonitor):
    def __init__(self, step_seconds=0.0):
        trt.IProgressMonitor.__init__(self)
        self.calls = 0
        self.step_seconds = step_seconds

    def phase_start(self, phase_name, parent_phase, num_steps):
        self.calls += 1

    def step_complete(self, phase_name, step):
        self.calls += 1
        time.sleep(self.step_seconds)
        return True

    def phase_finish(self, phase_name):
        self.calls += 1


def main():
    model, engine_path = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    display = options[options.index("--display") + 1] if "--display" in options else "auto"
    builder = trt.Builder(trt_tui.logger(trt))
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_tui.logger(trt))
    if not parser.parse_from_file(model):
        sys.exit(f"{model}: cannot parse")
    config = builder.create_builder_config()
    own = None
    slow = float(options[options.index("--slow-steps") + 1]) if "--slow-steps" in options else 0.0
    if "--own-monitor" in options or slow:
        own = CountingMonitor(slow)
        config.progress_monitor = own
    engine = None
    returned = False
    history = "--no-history" not in options
    if "--no-observe" in options:
        engine = builder.build_serialized_network(network, config)
        print("RESULT " + json.dumps({"engine": engine.nbytes, "own_calls": None if own is None else own.calls}))
        return
    try:
        if "--plain-call" in options:
            observation = trt_tui.observe(config, display=display, name="mnist", history=history)
            engine, returned = builder.build_serialized_network(network, config), True
        else:
            with trt_tui.observe(config, display=display, name="mnist", history=history) as observation:
                if "--cancel-from-thread" in options:
                    threading.Thread(target=observation.cancel).start()
                engine, returned = builder.build_serialized_network(network, config), True
    except KeyboardInterrupt as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None and tb.tb_next.tb_frame.f_code is main.__code__:
            tb = tb.tb_next
        line = linecache.getline(__file__, tb.tb_lineno).strip()
        print(f"interrupted: returned={returned} engine={None if engine is None else engine.nbytes}"
              f" raised at: {line}", flush=True)
        sys.exit(130)
    if "--plain-call" in options:
        observation.close()  # already over (its top phase finished); waits for its record
    if engine is not None:
        with open(engine_path, "wb") as f:
            f.write(engine)
    report = {"state": observation.state, "error": observation.error, "phases": observation.phases,
              "log": observation.log, "peak_rss": observation.peak_rss, "history_id": observation.history_id,
              "engine": None if engine is None else engine.nbytes,
              "monitor_kept": config.progress_monitor is own,
              "own_calls": None if own is None else own.calls}
    print("RESULT " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
