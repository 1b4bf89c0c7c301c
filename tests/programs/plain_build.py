"""A build script that knows nothing of trt-tui: plain TensorRT-RTX, its own logger and monitor.

Usage: plain_build.py MODEL.onnx ENGINE [--slow-steps SECONDS]. Prints which trt-tui modules are loaded
(none, unless the environment's hook reported the build to a running app), then whether an engine
came back; writes ENGINE only then. Exits 0 when built, 3 when not.
"""

import sys

import tensorrt_rtx as trt
from slow_monitor import SlowMonitor


class Logger(trt.ILogger):
    def __init__(self):
        trt.ILogger.__init__(self)

    def log(self, severity, msg):
        if severity <= trt.ILogger.Severity.WARNING:
            print(f"[plain] {severity.name}: {msg}", file=sys.stderr)


def main():
    model, engine_path = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    slow = float(options[options.index("--slow-steps") + 1]) if "--slow-steps" in options else 0.0
    logger = Logger()
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(model):
        sys.exit(f"{model}: cannot parse")
    config = builder.create_builder_config()
    config.progress_monitor = SlowMonitor(slow)
    engine = builder.build_serialized_network(network, config)
    print("trt-tui modules:", sorted(name for name in sys.modules if name.startswith("trt_tui")))
    print("engine:", "built" if engine is not None else "none")
    if engine is not None:
        with open(engine_path, "wb") as f:
            f.write(engine)
    sys.exit(0 if engine is not None else 3)


if __name__ == "__main__":
    main()
