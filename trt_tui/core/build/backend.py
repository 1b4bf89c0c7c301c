"""Which TensorRT to build with.

Both backends expose the same Python API for everything trt-tui uses; the differences that matter
(compute-capability targets in RTX, timing caches and precision flags only in full TensorRT) are
answered here so that the build code asks the backend instead of checking module names.

Importing TensorRT costs a noticeable part of a short build's CPU time. The process executor's
parent never builds, so it asks `find_backend` and `backend_version`, which answer from the installed
files and their metadata, and leaves the import to the build's own process.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path
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
        return has_timing_cache(self.name)

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


def has_timing_cache(name: str) -> bool:
    """TensorRT-RTX accepts a timing cache but ignores it, so trt-tui does not pretend to use one."""
    return name != "tensorrt-rtx"


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
    raise _missing(choice)


def loaded_backend(choice: str) -> Backend | None:
    """The backend `load_backend(choice)` already loaded in this process, else None; never imports."""
    return _loaded.get(choice)


def _missing(choice: str) -> BackendError:
    if choice == "auto":
        return BackendError(
            "no TensorRT found: install TensorRT for RTX (pip install tensorrt-rtx) "
            "or full TensorRT (pip install 'trt-tui[tensorrt]')"
        )
    return BackendError(f"backend {choice} is not installed (python module {BACKENDS[choice]} not importable)")


def _spec(module: str):
    """Where `module` would be imported from, found without running it (None: not installed)."""
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def find_backend(choice: str = "auto") -> str:
    """The name of the backend `load_backend(choice)` loads, without importing TensorRT where the
    installed files already say: a named backend that is installed, or `auto` where only TensorRT-RTX
    is. `auto` with full TensorRT installed imports it, since only the import tells whether it works
    (`load_backend` falls back to TensorRT-RTX when it does not). Raises `BackendError`, with
    `load_backend`'s message, when none is installed; a module that is installed but fails to import
    is the build's to report."""
    if choice in _loaded:
        return _loaded[choice].name
    if choice not in CHOICES:
        raise BackendError(f"unknown backend {choice!r}: choose one of {', '.join(CHOICES)}")
    names = list(BACKENDS) if choice == "auto" else [choice]
    installed = [name for name in names if _spec(BACKENDS[name]) is not None]
    if not installed:
        raise _missing(choice)
    if choice == "auto" and installed[0] == "tensorrt":
        return load_backend(choice).name
    return installed[0]


def backend_version(name: str) -> str:
    """`Backend.version` of the backend called `name` (a `find_backend` answer), without importing it
    where a PyPI distribution of it is installed beside the module: its metadata carries the same
    version as `trt.__version__`. The distribution is named as the backend, or for a CUDA variant
    with a suffix (`tensorrt_rtx_cu13`, alone where the wheels were installed without the
    `tensorrt-rtx` front package, as on the GPU host). Anywhere else (no metadata beside the module,
    a build from source) only the import says, so it imports."""
    loaded = next((b for b in _loaded.values() if b.name == name), None)
    if loaded is not None:
        return loaded.version
    spec = _spec(BACKENDS[name])
    if spec is not None and spec.origin:
        # the module (a package's directory, or one file) sits where the distribution was installed
        origin = Path(spec.origin).resolve()
        site = origin.parent.parent if spec.submodule_search_locations is not None else origin.parent
        version = _version_installed_in(site, name)
        if version is not None:
            return version
    return load_backend(name).version


def _version_installed_in(site: Path, name: str) -> str | None:
    """The version a `.dist-info` directory in `site` names (`tensorrt_rtx-1.7.1.116.dist-info`; the
    wheel format puts the distribution's name and version there, as its METADATA has them): one
    listing of `site`, where importlib.metadata reads every distribution's METADATA at each
    build's check. Read again each time, so that a long-running app whose
    TensorRT is upgraded keys its next engines with the new version."""
    wanted = _normalized(name)
    found = []
    try:
        entries = [entry.name for entry in site.iterdir()]
    except OSError:
        entries = []
    for entry in entries:
        if not entry.endswith(".dist-info"):
            continue
        dist_name, _, version = entry.removesuffix(".dist-info").rpartition("-")
        dist_name = _normalized(dist_name)
        if not version or not (dist_name == wanted or re.fullmatch(re.escape(wanted) + r"-cu\d+", dist_name)):
            continue
        if (site / entry / "METADATA").is_file():  # else not a whole install: only the import can say
            found.append((len(dist_name), version))
    return min(found)[1] if found else None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # as PyPI compares distribution names (PEP 503)
