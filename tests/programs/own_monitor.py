"""A plain build script with its own progress monitor and logger, as people write them.

Usage: own_monitor.py MODEL.onnx ENGINE [--cancel-at N | --stubborn | --pause-at N SECONDS]
[--slow-steps SECONDS]. Prints
how often its monitor and its logger were called, then exits 0 when an engine was written, 3 when
TensorRT returned none. `--stubborn` ignores SIGINT and, after its build, sleeps for a minute: only
SIGTERM or worse ends it. `--pause-at` sleeps inside its monitor's Nth call, as a build stuck in
TensorRT looks from outside: no callback, an idle CPU. `--slow-steps` sleeps in each step, so that a
build that takes a fraction of a second on a fast machine is still under way when a test signals it.
"""

import signal
import sys
import threading
import time

import tensorrt_rtx as trt


class CountingMonitor(trt.IProgressMonitor):
    def __init__(self, cancel_at=None, pause=None, slow=0.0):
        trt.IProgressMonitor.__init__(self)
        self.slow = slow
        self.lock = threading.Lock()
        self.calls = 0
        self.cancel_at = cancel_at
        self.pause = pause  # (at call N, seconds)

    def phase_start(self, phase_name, parent_phase, num_steps):
        with self.lock:
            self.calls += 1

    def step_complete(self, phase_name, step):
        with self.lock:
            self.calls += 1
            if self.pause is not None and self.calls == self.pause[0]:
                time.sleep(self.pause[1])
        if self.slow:
            time.sleep(self.slow)
        with self.lock:
            return self.cancel_at is None or self.calls < self.cancel_at

    def phase_finish(self, phase_name):
        with self.lock:
            self.calls += 1


class CountingLogger(trt.ILogger):
    def __init__(self):
        trt.ILogger.__init__(self)
        self.lines = 0

    def log(self, severity, msg):
        self.lines += 1


def main():
    slow = 0.0
    if "--slow-steps" in sys.argv:
        at = sys.argv.index("--slow-steps")
        slow = float(sys.argv[at + 1])
        del sys.argv[at:at + 2]
    model, engine = sys.argv[1], sys.argv[2]
    cancel_at = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--cancel-at" else None
    stubborn = sys.argv[3:4] == ["--stubborn"]
    pause = (int(sys.argv[4]), float(sys.argv[5])) if sys.argv[3:4] == ["--pause-at"] else None
    if stubborn:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    logger = CountingLogger()
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(model):
        print("parse failed")
        return 2
    config = builder.create_builder_config()
    monitor = CountingMonitor(cancel_at, pause, slow)
    config.progress_monitor = monitor
    assert config.progress_monitor is monitor, "the program must read back its own monitor"
    serialized = builder.build_serialized_network(network, config)
    print(f"monitor calls: {monitor.calls}")
    print(f"logger lines: {logger.lines}")
    if stubborn:
        time.sleep(60)
    if serialized is None:
        print("no engine", file=sys.stderr)
        return 3
    with open(engine, "wb") as f:
        f.write(serialized)
    print(f"engine bytes: {serialized.nbytes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
