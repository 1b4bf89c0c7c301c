"""trt-tui: observable, cancelable TensorRT engine builds."""

__version__ = "0.1.0"
