"""Watch directories with watchfiles and report complete ONNX files (what a change means for builds
is `core.execution.rebuild`'s).

Directories are watched, not files: editors and exporters save by writing a temporary file and
renaming it over the old one, which replaces the inode a file watch would follow (watchfiles#127).

A file is reported only once it is complete: no event for `settle` seconds and the same size and mtime
at two looks `settle` apart. A slow copy or an exporter still writing therefore never produces a
failed build, and a burst of writes gives one report. A file that is complete but does not read as an
ONNX model (empty, cut short, garbage) is reported too, once per version of it, so that its build
fails with the reason the user needs instead of the file being silently ignored. External data
files (weights beside the model) count as the model that names them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .modelinfo import ModelInfoError, read_model_info


@dataclass(frozen=True)
class ModelChange:
    kind: str  # "added", "changed", "removed"
    path: Path
    last_write: float  # time.monotonic() of the last filesystem event that led to this report


class ModelWatcher:
    """Runs a thread that calls `on_change(changes)` with batches of `ModelChange`."""

    def __init__(self, paths: Iterable[Path], on_change: Callable[[list[ModelChange]], object],
                 settle: float = 0.25, poll: float = 0.05) -> None:
        self.roots = [Path(p).resolve() for p in paths]
        self.dirs = sorted({r if r.is_dir() else r.parent for r in self.roots})
        self.files = {r for r in self.roots if not r.is_dir()}
        self.on_change = on_change
        self.settle = settle
        self.poll = poll
        self.known: dict[Path, tuple[int, int]] = {}  # complete models: path -> (size, mtime_ns)
        self.invalid: dict[Path, tuple[int, int]] = {}  # complete files that are not models, as reported
        self.external: dict[Path, set[Path]] = {}  # external data file -> models that name it
        # model -> (time of its last event, its size/mtime then, whether an external data file moved)
        self._pending: dict[Path, tuple[float, tuple[int, int] | None, bool]] = {}
        self._stop = threading.Event()
        self._armed = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []
        for model in self._scan():
            if not self._learn(model) and (stamp := self._stamp(model)) is not None:
                self.invalid[model] = stamp  # the caller builds what is there at start, and says why it fails

    # -- public ---------------------------------------------------------------------------------

    def start(self, timeout: float = 5.0) -> None:
        """Returns once the directories are really being watched (or `timeout` passed), so that a
        caller announcing "watching" tells the truth: a file written right after is not missed."""
        self._thread = threading.Thread(target=self._run, name="trt-tui-watch", daemon=True)
        self._thread.start()
        self._armed.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- internals ------------------------------------------------------------------------------

    def _scan(self) -> list[Path]:
        found = [f for f in self.files if f.is_file()]
        for root in self.roots:
            if root.is_dir():
                found.extend(p for p in root.rglob("*.onnx") if p.is_file())
        return sorted(set(found))

    def _watched(self, path: Path) -> bool:
        if path.suffix == ".onnx":
            return not self.files or path in self.files or any(path.is_relative_to(r) for r in self.roots if r.is_dir())
        return path in self.external

    def _learn(self, model: Path) -> bool:
        """Remember a complete model and the external data it names; False if it does not read."""
        try:
            info = read_model_info(model)
            st = model.stat()
        except (ModelInfoError, OSError):
            return False
        self.known[model] = (st.st_size, st.st_mtime_ns)
        for ext in info.external_data:
            self.external.setdefault(Path(ext), set()).add(model)
        return True

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _run(self) -> None:
        import watchfiles

        try:
            for batch in watchfiles.watch(*self.dirs, stop_event=self._stop, debounce=50, step=int(self.poll * 1000),
                                          rust_timeout=int(self.poll * 1000), yield_on_timeout=True,
                                          recursive=True, ignore_permission_denied=True):
                now = time.monotonic()
                if not self._armed.is_set():
                    self._catch_up(now)
                    self._armed.set()
                for _, raw in batch:
                    path = Path(raw)
                    if self._watched(path):
                        via_external = path.suffix != ".onnx"
                        for model in self.external.get(path, ()) if via_external else (path,):
                            earlier = self._pending.get(model)
                            self._pending[model] = (now, self._stamp(model), via_external or bool(earlier and earlier[2]))
                self._settle(now)
        except Exception as exc:  # a vanished directory, an inotify limit: say so, do not kill the app
            self.errors.append(f"watching stopped: {exc}")
        finally:
            self._armed.set()

    def _catch_up(self, now: float) -> None:
        """watchfiles yields first once its watch is set up: what appeared or changed between the
        first scan and then produced no event, so look for it now."""
        for model in self._scan():
            stamp = self._stamp(model)
            if stamp not in (self.known.get(model), self.invalid.get(model)) and model not in self._pending:
                self._pending[model] = (now, stamp, False)

    def _settle(self, now: float) -> None:
        ready: list[ModelChange] = []
        for model, (last_event, stamp, via_external) in list(self._pending.items()):
            if now - last_event < self.settle:
                continue
            current = self._stamp(model)
            if current is None:
                del self._pending[model]
                self.invalid.pop(model, None)
                if self.known.pop(model, None) is not None:
                    ready.append(ModelChange("removed", model, last_event))
                continue
            if current != stamp:  # still being written: look again after another quiet spell
                self._pending[model] = (now, current, via_external)
                continue
            del self._pending[model]
            if self.known.get(model) == current and not via_external:
                continue  # an event that changed nothing (e.g. a chmod)
            was_known = model in self.known
            if not self._learn(model):
                if self.invalid.get(model) == current:
                    continue  # reported already, unchanged since
                self.invalid[model] = current
                self.known.pop(model, None)
                ready.append(ModelChange("changed" if was_known else "added", model, last_event))
                continue
            self.invalid.pop(model, None)
            ready.append(ModelChange("changed" if was_known else "added", model, last_event))
        if ready:
            try:
                self.on_change(ready)
            except Exception as exc:
                self.errors.append(f"change handler failed: {exc}")
