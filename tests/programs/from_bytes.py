"""Builds a model it parses from bytes (`OnnxParser.parse`, not `parse_from_file`): trt-tui cannot
know which file it was, so the build is named by the program and a counter.

Usage: from_bytes.py MODEL.onnx ENGINE.
"""

import sys

import tensorrt_rtx as trt

logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
with open(sys.argv[1], "rb") as f:
    if not parser.parse(f.read()):
        sys.exit(f"cannot parse {sys.argv[1]}")
engine = builder.build_serialized_network(network, builder.create_builder_config())
if engine is None:
    sys.exit("no engine")
with open(sys.argv[2], "wb") as f:
    f.write(engine)
