"""A project's own `tensorrt` that re-exports TensorRT-RTX, so that `import tensorrt` works."""

from tensorrt_rtx import *  # noqa: F403
from tensorrt_rtx import __version__  # noqa: F401
