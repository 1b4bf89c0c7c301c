"""The engine cache: skip a build whose engine is already current.

Each engine gets a sidecar `<engine>.build.json` (see `sidecar`) recording what it was built from: a
hash of the ONNX bytes and its external data files, the build options, the backend and its version,
the target. A build whose recorded key equals the key it would build with, and whose engine file still
holds the bytes recorded (size and SHA-256), is answered SKIPPED without touching TensorRT.

Hashes are of content, so touching a file rebuilds nothing; a (size, mtime, inode) memo avoids
re-reading unchanged files on every check.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from . import sidecar
from .atomic import remove_quietly
from .build import BuildSpec, Outcome
from .events import State
from .modelinfo import ModelInfoError, read_model_info
from .sidecar import CHUNK, sidecar_path

__all__ = ["CacheKey", "ContentHasher", "EngineCache", "model_files", "sidecar_path"]


def model_files(model: Path) -> list[Path]:
    """The model and the external data files it names (weights beside the model count as the model)."""
    try:
        external = list(read_model_info(model).external_data)
    except ModelInfoError:
        external = []
    return [model, *external]


class ContentHasher:
    def __init__(self) -> None:
        self._memo: dict[str, tuple[tuple[int, int, int], str]] = {}
        self._lock = threading.Lock()

    def file_hash(self, path: Path) -> str:
        st = path.stat()
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        key = os.path.abspath(path)
        with self._lock:
            memo = self._memo.get(key)
        if memo is not None and memo[0] == stamp:
            return memo[1]
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
        value = digest.hexdigest()
        with self._lock:
            self._memo[key] = (stamp, value)
        return value

    def model_hash(self, model: Path) -> str:
        """One hash over the model and its external data, each named by its path relative to the model."""
        digest = hashlib.sha256()
        for path in model_files(model):
            name = os.path.relpath(path, model.parent) if path != model else "<model>"
            digest.update(name.encode() + b"\0")
            digest.update(self.file_hash(path).encode() if path.exists() else b"missing")
        return digest.hexdigest()


@dataclass(frozen=True)
class CacheKey:
    model_hash: str
    options: dict
    backend: str
    backend_version: str

    def as_dict(self) -> dict:
        return {"model_hash": self.model_hash, "options": self.options, "backend": self.backend,
                "backend_version": self.backend_version}


class EngineCache:
    def __init__(self, hasher: ContentHasher | None = None) -> None:
        self.hasher = hasher or ContentHasher()

    def key(self, spec: BuildSpec) -> CacheKey:
        from .backend import load_backend

        backend = load_backend(spec.options.backend)
        return CacheKey(self.hasher.model_hash(spec.model), spec.options.describe(), backend.name, backend.version)

    def check(self, spec: BuildSpec) -> Outcome | None:
        """SKIPPED when the engine is current, else None (build it). Never raises: when in doubt, build."""
        if spec.force:
            return None
        try:
            recorded = sidecar.read(spec.output)
            if recorded is None or not spec.output.is_file() or spec.output.is_symlink():
                return None
            if recorded.get("key") != self.key(spec).as_dict():
                return None
            # Same size is not the same engine: another tool may have written one just as long.
            if not sidecar.written_by_us(spec.output, recorded, self.hasher.file_hash(spec.output)):
                return None
        except (OSError, ValueError, KeyError, AttributeError, ModelInfoError):
            return None
        except Exception:
            return None
        return Outcome(State.SKIPPED, detail="engine is up to date", engine_bytes=recorded["engine_bytes"])

    def record(self, spec: BuildSpec, key: CacheKey, outcome: Outcome) -> None:
        """Write the sidecar atomically after a successful build. Never raises: the engine is in
        place and good, and the sidecar only spares a later rebuild, so failing to write it (a full
        disk, a vanished directory) must not turn the build into a failure; the half-written
        temporary is removed, and so is the old sidecar (it names another engine)."""
        try:
            digest = outcome.engine_sha256 or self.hasher.file_hash(spec.output)
            sidecar.write(spec.output, key.as_dict(), outcome.engine_bytes, digest)
        except OSError:
            remove_quietly(sidecar_path(spec.output))
