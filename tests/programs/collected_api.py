"""A build script using `trt_tui.observe`, for the collector's tests: the app that listens shows it.

Usage: collected_api.py MODEL.onnx ENGINE [--slow-steps SECONDS]. Builds MODEL with TensorRT-RTX inside
`trt_tui.observe(config, display="none")`; its own monitor sleeps SECONDS in each step, so that a short
build lasts long enough to be cancelled from the app. ENGINE is written only when an engine came back.
Prints `RESULT` and the observation's state as JSON; exits 0 when built, 3 when cancelled.
"""

import json
import sys

import tensorrt_rtx as trt
from slow_monitor import SlowMonitor

import trt_tui


def main():
    model, engine_path = sys.argv[1], sys.argv[2]
    options = sys.argv[3:]
    slow = float(options[options.index("--slow-steps") + 1]) if "--slow-steps" in options else 0.0
    builder = trt.Builder(trt_tui.logger(trt))
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_tui.logger(trt))
    if not parser.parse_from_file(model):
        sys.exit(f"{model}: cannot parse")
    config = builder.create_builder_config()
    config.progress_monitor = SlowMonitor(slow)
    with trt_tui.observe(config, display="none", history=False) as observation:
        engine = builder.build_serialized_network(network, config)
    if engine is not None:
        with open(engine_path, "wb") as f:
            f.write(engine)
    print("RESULT " + json.dumps({"state": observation.state, "error": observation.error}), flush=True)
    sys.exit(0 if observation.state == "succeeded" else 3)


if __name__ == "__main__":
    main()
