"""An engine and its sidecar go into place as one step, under a lock every trt-tui respects.

Two builds of one engine path (two processes, two rows of the app) each write their engine to a
temporary of its own; each then takes the engine's lock (`sidecar.locked`) and, holding it, renames
its engine over the path and its sidecar over the sidecar's. The sidecar names the bytes this build
wrote: their SHA-256, computed from the buffer that was written, and the stamp of the file written,
read from its own descriptor after the rename; never from whatever is at the path by then, which
may be another build's engine. A later rewrite of the sidecar (the cache adding its key) takes the
same lock, and writes only where the sidecar still names this build's bytes and the engine at the
path is the one it names.

The sidecar's temporary is written in full before the engine is renamed, its engine stamp left as
blank room that the stamp then overwrites in place: a disk that fills fails the build while the old
engine and its sidecar still stand, and after the rename come only a rewrite of bytes already on
disk and renames. Should one of those fail all the same, the new engine is taken back: an engine
without the record that says trt-tui wrote it would make the next build ask for `--force`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..files import atomic
from . import sidecar
from .sidecar import as_stamp, sidecar_path, stamp, stamp_of

# Bytes kept blank in the sidecar's temporary for the engine's stamp: four integers of up to 20
# digits each, with their separators and indentation, and room to spare.
STAMP_ROOM = 160


def install(data, output: Path, digest: Callable[[], str], before_replace: Callable[[], None] = lambda: None
            ) -> tuple[int, str]:
    """Write `data` (bytes or a buffer) as the engine `output`, with its sidecar; returns the size and
    the SHA-256 (`digest()`, of the bytes written). `before_replace()` runs once the engine is on
    disk and before anything is replaced: raising there leaves nothing. Raises OSError; then neither
    file was replaced, or the new engine was removed again."""
    view = memoryview(data)
    with atomic.Staged(output) as engine:
        engine.file.write(view)
        engine.sync()
        before_replace()
        size, sha256 = view.nbytes, digest()
        with atomic.Staged(sidecar_path(output)) as record:
            try:
                blank = sidecar.document(None, size, sha256, None) + b" " * STAMP_ROOM
                record.file.write(blank)
                record.sync()
            except OSError as exc:
                raise _record_error(exc, output) from None
            with sidecar.locked(output):
                written = engine.commit()
                try:
                    final = sidecar.document(None, size, sha256, stamp(written))
                    record.file.seek(0)
                    record.file.write(final.ljust(len(blank)))
                    record.commit()
                except BaseException as exc:
                    engine.remove_target()  # ours: nobody could replace it while we hold the lock
                    atomic.remove_quietly(sidecar_path(output))  # it names the engine that was there
                    if isinstance(exc, OSError):
                        raise _record_error(exc, output) from None
                    raise
    return size, sha256


def _record_error(exc: OSError, output: Path) -> OSError:
    what = exc.strerror or str(exc)
    return OSError(exc.errno, f"{what} (writing its build record {sidecar_path(output).name}); no engine was installed")


def add_key(engine: Path, engine_sha256: str | None, key: dict | None, model_stamps: list | None = None,
            **extra) -> bool:
    """Rewrite the sidecar of the engine a build installed (`engine_sha256`) with what the cache knows
    of it (`key`, the model's stamps, the fingerprint), keeping the engine's size and stamp; only
    where the sidecar still names those bytes and the engine at the path still has the recorded
    stamp (another build may have installed its own since). Never raises: where it cannot write,
    the sidecar the build wrote stays, still right. True where it was rewritten."""
    if engine_sha256 is None:
        return False
    try:
        with sidecar.locked(engine):
            current = sidecar.read(engine)
            if not current or current.get("engine_sha256") != engine_sha256:
                return False
            stamps = current.get("stamps")
            then = as_stamp(stamps.get("engine")) if isinstance(stamps, dict) else None
            if then is None or then != stamp_of(engine):
                return False
            sidecar.write(engine, key, current["engine_bytes"], engine_sha256, then, model_stamps, **extra)
            return True
    except (OSError, KeyError):
        return False
