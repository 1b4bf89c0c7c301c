"""The engine cache: skip a build whose engine is already current.

Each engine gets a sidecar `<engine>.build.json` recording what it was built from: its fingerprint
(`fingerprint.py`: a hash of the ONNX bytes and its external data files, digests of its initializers
and nodes, the build options, the backend and its version, the host) and the key part of it. A build
whose recorded key equals the key it would build with, and whose engine file still holds the bytes
recorded (size and SHA-256, see `sidecar`), is answered SKIPPED without touching TensorRT; any other
says why it builds.

Hashes are of content, so touching a file rebuilds nothing; each file's `stamp` (size, mtime, inode,
ctime) when it was hashed avoids reading it again while it is unchanged: in this process (a memo),
and in the next one too, since the engine's record keeps the stamps (`sidecar`). A check of an
engine that is up to date reads neither the model nor the engine; one that had to read a touched
file and found its bytes unchanged records its new stamp (`sidecar.restamp`).

Where the build happens whatever the files hold (`--force`, no engine yet, no record of it), nothing
waits for the hashing: the fingerprint is taken beside the build (`Fingerprinting`), so reading and
hashing a large model no longer comes before the build's first phase.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from ..build import engine_file, sidecar
from ..build.driver import BuildSpec, Outcome
from ..build.events import State
from ..build.sidecar import CHUNK, Stamp, as_stamp, sidecar_path, stamp, stamp_of
from ..model.modelinfo import ModelInfoError, read_model_info
from .fingerprint import Fingerprint, certain_reason, fingerprint_of, model_part, read_digests, rebuild_reason

__all__ = ["ContentHasher", "Decision", "EngineCache", "Fingerprinting", "model_files", "sidecar_path"]

MODEL = "<model>"  # the model's own name among its files; its data files go by their path beside it


def model_files(model: Path) -> list[Path]:
    """The model and the external data files it names (weights beside the model count as the model)."""
    try:
        external = list(read_model_info(model).external_data)
    except ModelInfoError:
        external = []
    return [model, *external]


class ContentHasher:
    def __init__(self) -> None:
        self._memo: dict[str, tuple[Stamp, str]] = {}
        self._lock = threading.Lock()

    def file_hash(self, path: Path) -> str:
        return self.hash_and_stamp(path)[0]

    def hash_and_stamp(self, path: Path) -> tuple[str, Stamp]:
        """The file's SHA-256 and the stamp it had before its bytes were read for it."""
        now = stamp(path.stat())
        key = os.path.abspath(path)
        with self._lock:
            memo = self._memo.get(key)
        if memo is not None and memo[0] == now:
            return memo[1], now
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                digest.update(chunk)
        value = digest.hexdigest()
        with self._lock:
            self._memo[key] = (now, value)
        return value, now

    def model_hash(self, model: Path, external: list[Path] | None = None, stamps: list | None = None) -> str:
        """One hash over the model and its external data (`external`, else read from the model), each
        named by its path relative to the model. `stamps` gets [name, stamp] of each file as it was
        hashed (None where it is missing)."""
        digest = hashlib.sha256()
        files = model_files(model) if external is None else [model, *external]
        for path in files:
            name = os.path.relpath(path, model.parent) if path != model else MODEL
            digest.update(name.encode() + b"\0")
            if path.exists():
                value, now = self.hash_and_stamp(path)
                digest.update(value.encode())
            else:
                digest.update(b"missing")
                now = None
            if stamps is not None:
                stamps.append([name, list(now) if now is not None else None])
        return digest.hexdigest()


def unchanged_model(model: Path, recorded: dict | None) -> tuple[dict, list, list[Path]] | None:
    """The model part of the fingerprint an engine's record holds, its stamps and its files, where
    every one of those files still has the stamp it had when it was hashed (a file missing then is
    missing still); else None, and the model is read again."""
    if not recorded or not isinstance(recorded.get("stamps"), dict):
        return None
    part = (recorded.get("fingerprint") or {}).get("model") if isinstance(recorded.get("fingerprint"), dict) else None
    stamps = recorded["stamps"].get("model")
    if not isinstance(part, dict) or not part.get("hash") or not isinstance(stamps, list) or not stamps:
        return None
    files = []
    for entry in stamps:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            return None
        name, then = entry
        path = model if name == MODEL else model.parent / name
        if (None if then is None else as_stamp(then) or "unreadable") != stamp_of(path):
            return None
        files.append(path)
    if files[0] != model:
        return None
    return part, stamps, files


@dataclass(frozen=True)
class Decision:
    """What the cache says about one build: `skip` (the SKIPPED outcome) where the engine is current;
    else `reason`, one line saying why it builds. `fingerprint` is what it is (or would be) built
    from; None only where the model could not even be hashed (the build says why)."""

    skip: Outcome | None
    reason: str
    fingerprint: Fingerprint | None
    # The build happens whatever the files hold, so the fingerprint was not taken: take it beside
    # the build with `EngineCache.beside`.
    deferred: bool = False


UP_TO_DATE = "engine is up to date"


class EngineCache:
    def __init__(self, hasher: ContentHasher | None = None) -> None:
        self.hasher = hasher or ContentHasher()

    def fingerprint(self, spec: BuildSpec) -> Fingerprint:
        """Hashed before the build reads the model, so an edit during the build makes the engine stale
        (taken beside the build, `Fingerprinting` checks the same). The backend's name and version
        come without importing TensorRT (`find_backend`): with the process executor the build imports
        it in its own process, and this one need not."""
        return self._fingerprint(spec)[0]

    def _fingerprint(self, spec: BuildSpec, recorded: dict | None = None) -> tuple[Fingerprint, list[Path]]:
        """The fingerprint and the files it hashed (the model, then its external data). The model
        part comes from `recorded` (the engine's record) where none of its files changed since."""
        from ..build.backend import backend_version, find_backend

        backend = find_backend(spec.options.backend)
        known = unchanged_model(spec.model, recorded)
        if known is not None:
            part, stamps, files = known
        else:
            before = stamp_of(spec.model)
            try:  # hashed first: its digests may be kept from an earlier process (model_hash reuses it)
                hashed = self.hasher.hash_and_stamp(spec.model)
            except OSError:
                hashed = None
            digests = read_digests(spec.model, hashed)  # one read of the model gives the digests and its data files
            external = list(digests.info.external_data) if digests is not None else []
            stamps = []
            part = model_part(digests, self.hasher.model_hash(spec.model, external, stamps))
            files = [spec.model, *external]
            if as_stamp(stamps[0][1]) != before:
                stamps = None  # changed between the digests and the hash: nothing to vouch for
        fingerprint = fingerprint_of(part, spec.options.describe(), backend, backend_version(backend))
        return replace(fingerprint, stamps=stamps), files

    def decide(self, spec: BuildSpec) -> Decision:
        """Skip or build, and why. Never raises: when in doubt, build. Where nothing the files hold can
        make it a skip, nothing is hashed: the Decision is `deferred`."""
        recorded = sidecar.read(spec.output)
        try:
            engine_exists = spec.output.is_file() and not spec.output.is_symlink()
        except OSError:
            engine_exists = False
        certain = certain_reason(force=spec.force, engine_exists=engine_exists, recorded=recorded)
        if certain is not None:
            return Decision(None, certain, None, deferred=True)
        try:
            fingerprint = self._fingerprint(spec, recorded)[0]
        except Exception as exc:
            return Decision(None, f"cannot fingerprint the model ({type(exc).__name__})", None)
        # Same size is not the same engine: another tool may have written one just as long. The stamp
        # it had when written says so without reading it; else its hash.
        hashed: list[Stamp] = []  # the engine's stamp, where it had to be read

        def engine_hash(path: Path) -> str:
            value, then = self.hasher.hash_and_stamp(path)
            hashed.append(then)
            return value

        engine_matches = sidecar.written_by_us(spec.output, recorded, engine_hash)
        old = None
        if recorded is not None and isinstance(recorded.get("fingerprint"), dict):
            old = Fingerprint.from_dict(recorded["fingerprint"])
        old_key = recorded.get("key") if recorded is not None and isinstance(recorded.get("key"), dict) else None
        try:
            reason = rebuild_reason(force=spec.force, engine_exists=engine_exists, recorded=recorded,
                                    engine_matches=engine_matches, old=old, old_key=old_key, new=fingerprint)
        except Exception:
            reason = "build record unreadable"
        if reason == "up to date" and recorded is not None:  # up to date: there is a record
            model_stamps = recorded.get("stamps", {}).get("model") if isinstance(recorded.get("stamps"), dict) else None
            sidecar.restamp(spec.output, recorded, hashed[0] if hashed else None,
                            fingerprint.stamps if fingerprint.stamps not in (None, model_stamps) else None)
            return Decision(Outcome(State.SKIPPED, detail=UP_TO_DATE, engine_bytes=recorded["engine_bytes"]),
                            reason, fingerprint)
        return Decision(None, reason, fingerprint)

    def beside(self, spec: BuildSpec) -> Fingerprinting:
        """The fingerprint of a build that happens anyway (a `deferred` Decision), taken on a thread
        while it runs; call this before the build reads the model."""
        return Fingerprinting(self, spec)

    def check(self, spec: BuildSpec) -> Outcome | None:
        """SKIPPED when the engine is current, else None (build it). Never raises."""
        return self.decide(spec).skip

    def record(self, spec: BuildSpec, fingerprint: Fingerprint, outcome: Outcome) -> None:
        """Add the key to the sidecar of the engine a build installed (`engine_file.add_key`: only
        while the engine at the path is still that build's). Never raises: where it cannot be
        written (a full disk, a vanished directory), the build's own sidecar stays, naming the
        engine as ours, and the next check builds it again."""
        engine_file.add_key(spec.output, outcome.engine_sha256, fingerprint.key(), fingerprint.stamps,
                            fingerprint=fingerprint.as_dict())

    def record_changed(self, spec: BuildSpec, outcome: Outcome) -> None:
        """After a successful build whose model changed while it ran (`Fingerprinting.changed`): the
        engine is ours, of bytes nobody hashed, so it gets no key, and the next check says why it
        builds again. Never raises, as `record`."""
        engine_file.add_key(spec.output, outcome.engine_sha256, None, model_changed_while_built=True)


class Fingerprinting:
    """A build's fingerprint taken on a thread of its own while the build runs (hashlib lets go of the
    GIL for each chunk, and with the process executor the build is in another process).

    What it guarantees is what hashing first did: the fingerprint names the bytes the engine was built
    from. Every file it hashed must keep the stamp it had before its bytes were read until the build
    is over (`result`), and the model the one it had before the build started; otherwise the result
    is None, the engine gets no key, and the next check builds it again."""

    def __init__(self, cache: EngineCache, spec: BuildSpec) -> None:
        self._cache, self._spec = cache, spec
        self._before = stamp_of(spec.model)  # here, before the build can read the model
        self._value: tuple[Fingerprint, list[Path], list[Stamp | None]] | None = None
        self.changed = False  # a file it hashed changed before `result` (False until then)
        self._thread = threading.Thread(target=self._run, name="trt-tui-fingerprint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:  # an engine with a record of its own (--force) may vouch for an unchanged model
            fingerprint, files = self._cache._fingerprint(self._spec, sidecar.read(self._spec.output))
        except Exception:
            return  # unreadable: the build says why, and its engine gets no key
        seen = [as_stamp(then) if then is not None else None for _, then in fingerprint.stamps or []]
        if not seen or seen[0] is None or seen[0] != self._before:
            self.changed = True
            return
        self._value = (fingerprint, files, seen)

    def result(self, wait: bool = True) -> Fingerprint | None:
        """After the build: the fingerprint, or None where a file it hashed changed since (or, with
        `wait` False, where it is not ready yet: a cancelled build need not wait for the hashing)."""
        self._thread.join(None if wait else 0)
        value = self._value
        if self._thread.is_alive() or value is None:
            return None  # not ready, unreadable (the build said why), or `changed`
        fingerprint, files, seen = value
        if [stamp_of(path) for path in files] != seen:
            self.changed = True
            return None
        return fingerprint
