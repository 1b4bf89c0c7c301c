"""trt-tui's hook in a program run by `trt-tui run`: only this directory is put on its PYTHONPATH.

It installs an import hook for `tensorrt` and `tensorrt_rtx` (nothing is imported until the program
imports one of them), then runs the `sitecustomize` this one shadows, if any, so the program's
environment is otherwise what it would have been.
"""

import importlib.machinery
import importlib.util
import os
import sys

_TARGETS = ("tensorrt", "tensorrt_rtx")
_HERE = os.path.dirname(os.path.abspath(__file__))


class _PatchingLoader:
    """The real loader, plus trt-tui's patches once the module has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            _hook().patch(module)
        except Exception as exc:  # observing is a convenience: never stop the program over it
            sys.stderr.write(f"trt-tui: cannot observe {module.__name__} builds: {exc}\n")

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _TensorRTFinder:
    """Finds `tensorrt` / `tensorrt_rtx` as the other finders would and wraps the loader."""

    def find_spec(self, name, path=None, target=None):
        if name not in _TARGETS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    # Imported here, not at start-up: by now the program is importing TensorRT.
                    from importlib.abc import Loader
                    from typing import cast

                    # A loader by duck typing: what it does not define comes from the real one.
                    spec.loader = cast(Loader, _PatchingLoader(spec.loader))
                return spec
        return None


def _hook():
    try:
        from trt_tui.run import hook
    except ImportError:  # the program's Python does not have trt_tui on its path: lend it ours
        root = os.environ.get("TRT_TUI_RUN_ROOT")
        if not root:
            raise
        sys.path.append(root)
        from trt_tui.run import hook
    return hook


def _chain():
    """Run the sitecustomize this one hides (a distribution's or a venv's own)."""
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == __file__:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _mark():
    """Tell trt-tui a Python process of the program started (so could report), beside its socket."""
    try:
        os.close(os.open(os.path.join(os.path.dirname(os.environ["TRT_TUI_RUN_ADDRESS"]), "python"),
                         os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass


if os.environ.get("TRT_TUI_RUN_ADDRESS"):
    sys.meta_path.insert(0, _TensorRTFinder())
    _mark()
_chain()
