"""The record trt-tui keeps beside each engine it writes: `NAME.engine.build.json`.

It says what the engine was built from (the cache key) and which bytes trt-tui wrote (size and
SHA-256), so that the cache can tell a current engine from a stale or replaced one, and a build can
tell an engine of ours, which it may replace, from a user's file of the same name, which it must not.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from . import atomic

SIDECAR_SUFFIX = ".build.json"
CHUNK = 1 << 20


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


def write(engine: Path, key: dict | None, engine_bytes: int, engine_sha256: str, **extra) -> None:
    atomic.write_text(sidecar_path(engine), json.dumps(
        {"key": key, "engine_bytes": engine_bytes, "engine_sha256": engine_sha256, **extra}, indent=1))


def written_by_us(engine: Path, record: dict | None = None, sha256: str | None = None) -> bool:
    """True when `engine` holds exactly the bytes trt-tui recorded writing there."""
    record = read(engine) if record is None else record
    if not record or not isinstance(record.get("engine_sha256"), str):
        return False
    try:
        if engine.stat().st_size != record.get("engine_bytes"):
            return False
        return (sha256 or file_sha256(engine)) == record["engine_sha256"]
    except OSError:
        return False
