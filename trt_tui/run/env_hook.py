"""The import hook `trt-tui hook install` puts in an environment: each Python process of it reports its
TensorRT builds to the app, when one listens.

The `.pth` file that `trt-tui hook install` (`cli.commands.hook`) writes adds, at every interpreter
start, a one-line finder (`hook.pth_text`) that answers for nothing but `tensorrt` and `tensorrt_rtx`;
when the program imports one of them it runs this file (not imported: importing it would import the
`trt_tui` package first) and hands the import to this file's `TensorRTFinder`.
Run at start itself, as the `.pth` of an earlier trt-tui does, this file adds its own finder.
When the program imports TensorRT, and only if this user's collector socket exists
then (one `stat`), TensorRT is patched as `trt-tui run` patches it (`hook`) and each build reports
through the process's reporter (`reporter`, whose fallback becomes the collector's). Without a
listening app nothing of trt-tui is imported and TensorRT is left as it is. Under `trt-tui run`, whose
own hook reports, this one steps aside, and so it does where trt-tui itself imports TensorRT to build.

Only the standard library's `os` and `sys` here, and no names leak into the program's modules.
"""

import os
import sys

TYPE_CHECKING = False  # `typing`'s, without importing it at every interpreter start (mypy reads the name)
if TYPE_CHECKING:
    from types import FrameType

_TARGETS = ("tensorrt", "tensorrt_rtx")
_RUN_ADDRESS = "TRT_TUI_RUN_ADDRESS"  # inject.ENV_ADDRESS: `trt-tui run`'s hook is in charge


def collector_socket() -> str:
    """As `collector.place.socket_path()` (kept equal by a test; that module is not imported here)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "trt-tui", "collector.sock")
    tmp = os.environ.get("TMPDIR")
    return os.path.join(tmp if tmp and os.path.isabs(tmp) else "/tmp", f"trt-tui-{os.getuid()}", "collector.sock")


def _patch(module) -> None:
    from trt_tui.run import hook, reporter
    from trt_tui.run.collector.client import collector_reporter

    if reporter.fallback is None:
        reporter.fallback = collector_reporter
    hook.patch(module)


def _imported_by_trt_tui() -> bool:
    """trt-tui's own builds (the app's, their build processes', `trt-tui build`'s) import TensorRT
    through `core.build.backend`; the app shows those already, and must not see them twice."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "trt_tui.core.build.backend":
            return True
        frame = frame.f_back
    return False


class _HookedLoader:
    """The real loader, plus trt-tui's patches once the module has run, if an app listens."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        if not os.path.exists(collector_socket()) or _imported_by_trt_tui():
            return
        try:
            _patch(module)
        except Exception as exc:  # observing is a convenience: never stop the program over it
            sys.stderr.write(f"trt-tui: cannot report {module.__name__} builds to the app: {exc}\n")

    def __getattr__(self, name):
        return getattr(self._loader, name)


class TensorRTFinder:
    """Finds `tensorrt` / `tensorrt_rtx` as the other finders would, and wraps the loader."""

    def find_spec(self, name, path=None, target=None):
        if name not in _TARGETS or os.environ.get(_RUN_ADDRESS):
            return None
        for finder in sys.meta_path:
            # by name: the `.pth`'s finder, which hands the import to this one, is another class
            if type(finder).__name__ == "TensorRTFinder" or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    # typeshed asks for an `importlib.abc.Loader`; the import system needs only the methods
                    # (importing `importlib.abc` here would cost every interpreter start)
                    spec.loader = _HookedLoader(spec.loader)  # type: ignore[assignment]
                return spec
        return None


if __name__ == "trt_tui_env_hook" and not any(type(f).__name__ == "TensorRTFinder" for f in sys.meta_path):
    sys.meta_path.insert(0, TensorRTFinder())  # run by the `.pth` (imported as a module, it only defines)
