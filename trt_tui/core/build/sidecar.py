"""The record trt-tui keeps beside each engine it writes: `NAME.engine.build.json`.

It says what the engine was built from (the cache key) and which bytes trt-tui wrote (size and
SHA-256), so that the cache can tell a current engine from a stale or replaced one, and a build can
tell an engine of ours, which it may replace, from a user's file of the same name, which it must not.

It also keeps the `stamp` each file had when its hash was taken (`stamps`: the engine's, and the
model's and its data files'): a file whose stamp is unchanged holds the bytes hashed then, so a
check of an unchanged model and engine reads neither (both used to be read and hashed whole at every
`trt-tui build` of an engine already up to date). Any change to a file changes its stamp, and
the file is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..files import atomic, filelock

SIDECAR_SUFFIX = ".build.json"
CHUNK = 1 << 20


Stamp = tuple[int, int, int, int]


def stamp(st: os.stat_result) -> Stamp:
    """(size, mtime, inode, ctime): what changes when a file's bytes do. The kernel sets ctime on
    every write, and it cannot be set back as mtime can."""
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)


def stamp_of(path: Path) -> Stamp | None:
    """The file's `stamp`, or None where it cannot be read."""
    try:
        return stamp(os.stat(path))
    except OSError:
        return None


def as_stamp(value) -> Stamp | None:
    """A stamp read back from JSON (a list of four integers), or None for anything else."""
    if isinstance(value, list) and len(value) == 4 and all(type(v) is int for v in value):
        return tuple(value)
    return None


def sidecar_path(engine: Path) -> Path:
    return engine.with_name(engine.name + SIDECAR_SUFFIX)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read(engine: Path) -> dict | None:
    """The sidecar's record, or None where there is none or it is not one of ours."""
    try:
        record = json.loads(sidecar_path(engine).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) else None


def document(key: dict | None, engine_bytes: int, engine_sha256: str, engine_stamp: Stamp | None,
             model_stamps: list | None = None, **extra) -> bytes:
    """The sidecar's bytes: `engine_stamp` is the stamp of the engine file this build wrote (taken
    from that file, never from whatever is at the engine's path when the sidecar is written)."""
    stamps = {"engine": list(engine_stamp) if engine_stamp is not None else None}
    if model_stamps is not None:
        stamps["model"] = model_stamps
    return json.dumps({"key": key, "engine_bytes": engine_bytes, "engine_sha256": engine_sha256, **extra,
                       "stamps": stamps}, indent=1).encode()


def write(engine: Path, key: dict | None, engine_bytes: int, engine_sha256: str, engine_stamp: Stamp | None,
          model_stamps: list | None = None, **extra) -> None:
    """Write the sidecar atomically; the caller holds the engine's lock (`locked`)."""
    atomic.write_bytes(sidecar_path(engine), document(key, engine_bytes, engine_sha256, engine_stamp,
                                                      model_stamps, **extra))


def lock_path(engine: Path) -> Path:
    return engine.with_name(f".{engine.name}.trt-tui.lock")


def locked(engine: Path):
    """The engine's lock (`flock` on a hidden file beside it, so other trt-tui processes respect it
    too, and removed as it is let go): held while an engine and its sidecar go into place, or a
    sidecar is rewritten."""
    return filelock.locked(lock_path(engine), remove=True)


def restamp(engine: Path, record: dict, engine_stamp: Stamp | None, model_stamps: list | None) -> bool:
    """Rewrite `record` (the sidecar as read) with new stamps for files found to hold the bytes it
    records after all (touched, copied back, restored by a checkout): `engine_stamp` is the stamp the
    engine had when it was hashed, and counts only if the engine still has it; `model_stamps` replace
    the model's where given. Without this a touched model would be read and hashed at every check
    until the next build. Nothing is written where the sidecar changed since it was read (a build
    wrote its own) or nothing would change; never raises: the old record is still right, only slower
    to check. True where it was rewritten."""
    old_stamps = record.get("stamps")
    stamps = dict(old_stamps) if isinstance(old_stamps, dict) else {}
    if engine_stamp is not None:
        stamps["engine"] = list(engine_stamp) if stamp_of(engine) == engine_stamp else None
    if model_stamps is not None:
        stamps["model"] = model_stamps
    if stamps == record.get("stamps"):
        return False
    try:
        with locked(engine):
            if read(engine) != record:
                return False
            atomic.write_text(sidecar_path(engine), json.dumps({**record, "stamps": stamps}, indent=1))
    except OSError:
        return False
    return True


def written_by_us(engine: Path, record: dict | None = None, sha256=None) -> bool:
    """True when `engine` holds exactly the bytes trt-tui recorded writing there: its stamp is the one
    recorded, or its SHA-256 (`sha256`: the digest, or a function of the path giving it) is."""
    record = read(engine) if record is None else record
    if not record or not isinstance(record.get("engine_sha256"), str):
        return False
    try:
        now = stamp(engine.stat())
        if now[0] != record.get("engine_bytes"):
            return False
        stamps = record.get("stamps")
        if isinstance(stamps, dict) and as_stamp(stamps.get("engine")) == now:
            return True
        digest = sha256(engine) if callable(sha256) else sha256 or file_sha256(engine)
        return digest == record["engine_sha256"]
    except OSError:
        return False
