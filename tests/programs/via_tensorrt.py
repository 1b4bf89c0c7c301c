"""Builds with `import tensorrt`, whichever module that is on the path (see shim_*/tensorrt.py).

Usage: via_tensorrt.py MODEL.onnx ENGINE.
"""

import sys

import tensorrt as trt

logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
assert parser.parse_from_file(sys.argv[1])
engine = builder.build_serialized_network(network, builder.create_builder_config())
with open(sys.argv[2], "wb") as f:
    f.write(engine)
