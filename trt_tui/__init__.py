"""trt-tui: observable, cancelable TensorRT engine builds.

`trt_tui.observe(config)` shows, cancels and records a build made in your own Python (see
`trt_tui.api`); `trt_tui.logger()` is the `ILogger` that gives it the build's log. Both are imported
on first use, so `import trt_tui` imports neither TensorRT nor the terminal UI. It does follow what
this process's TensorRT parses from here on (`core.build.model_source`), so that a build observed later
is named by the ONNX file it was parsed from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .core.build import model_source
from .version import __version__ as __version__  # re-exported: `trt_tui.__version__`

__all__ = ["Observation", "logger", "observe"]

if TYPE_CHECKING:
    from .api import Observation, logger, observe

model_source.install()


def __getattr__(name: str):
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'trt_tui' has no attribute {name!r}")
