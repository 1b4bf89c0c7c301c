"""A project's own `tensorrt` that puts TensorRT-RTX in its place."""

import sys

import tensorrt_rtx

sys.modules[__name__] = tensorrt_rtx
