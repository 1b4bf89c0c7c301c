"""Prints a line, builds a model, prints a line: its output and its build, in that order.

Usage: ordered.py MODEL.onnx ENGINE.
"""

import sys

import tensorrt_rtx as trt

print("before the build")
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
assert parser.parse_from_file(sys.argv[1])
engine = builder.build_serialized_network(network, builder.create_builder_config())
print("after the build")
with open(sys.argv[2], "wb") as f:
    f.write(engine)
