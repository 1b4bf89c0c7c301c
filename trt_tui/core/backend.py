"""Which TensorRT to build with.

Both backends expose the same Python API for everything trt-tui uses; the differences that matter
(compute-capability targets in RTX, timing caches and precision flags only in full TensorRT) are
answered here so that the build code asks the backend instead of checking module names.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

BACKENDS = {"tensorrt": "tensorrt", "tensorrt-rtx": "tensorrt_rtx"}
CHOICES = ("auto", *BACKENDS)


class BackendError(RuntimeError):
    """No usable TensorRT: the message says what to install."""


@dataclass(frozen=True)
class Backend:
    name: str  # "tensorrt" or "tensorrt-rtx"
    trt: ModuleType

    @property
    def version(self) -> str:
        return getattr(self.trt, "__version__", "unknown")

    @property
    def is_rtx(self) -> bool:
        return self.name == "tensorrt-rtx"

    @property
    def has_compute_capabilities(self) -> bool:
        return hasattr(self.trt, "ComputeCapability")

    @property
    def has_timing_cache(self) -> bool:
        """TensorRT-RTX accepts a timing cache but ignores it, so trt-tui does not pretend to use one."""
        return not self.is_rtx

    def compute_capability(self, text: str):
        """'8.9', '89', 'sm89' or 'SM89' → `trt.ComputeCapability.SM89`."""
        if not self.has_compute_capabilities:
            raise BackendError(f"{self.name} has no compute-capability targets")
        key = text.strip().upper().removeprefix("SM").replace(".", "")
        members = self.trt.ComputeCapability.__members__
        choice = "SM" + key
        if key in ("CURRENT", "NONE"):
            choice = key
        if choice not in members:
            valid = ", ".join(m.removeprefix("SM") for m in members if m.startswith("SM"))
            raise BackendError(f"unknown compute capability {text!r} (this backend knows {valid})")
        return members[choice]


def _import(module: str) -> ModuleType | None:
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


_loaded: dict[str, Backend] = {}


def load_backend(choice: str = "auto") -> Backend:
    """`auto` prefers full TensorRT when importable, else TensorRT-RTX."""
    if choice in _loaded:
        return _loaded[choice]
    if choice not in CHOICES:
        raise BackendError(f"unknown backend {choice!r}: choose one of {', '.join(CHOICES)}")
    names = list(BACKENDS) if choice == "auto" else [choice]
    for name in names:
        module = _import(BACKENDS[name])
        if module is not None:
            backend = _loaded[choice] = Backend(name, module)
            return backend
    if choice == "auto":
        raise BackendError(
            "no TensorRT found: install TensorRT for RTX (pip install tensorrt-rtx) "
            "or full TensorRT (pip install 'trt-tui[tensorrt]')"
        )
    raise BackendError(f"backend {choice} is not installed (python module {BACKENDS[choice]} not importable)")
