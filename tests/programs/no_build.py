"""Imports TensorRT, builds nothing, exits with the code it is given."""

import sys

import tensorrt_rtx  # noqa: F401

print("nothing to build")
print("a warning of its own", file=sys.stderr)
sys.exit(int(sys.argv[1]))
