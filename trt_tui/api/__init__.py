"""trt-tui's public Python API: observe, cancel and record a TensorRT build made in your own code.

`observe(config)` shows the next build made with a TensorRT or TensorRT-RTX `IBuilderConfig` (bars
in a terminal, a widget in Jupyter), cancels it on Ctrl-C or `Observation.cancel()`, and records it
in `trt-tui history`; `logger()` is the `ILogger` that gives each observation its build's log.
Imported on first use of `trt_tui.observe`: `import trt_tui` stays cheap.
"""

from .observation import Display, Observation, logger, observe

__all__ = ["Display", "Observation", "logger", "observe"]
