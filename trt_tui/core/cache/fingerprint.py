"""Build fingerprints: what a build was made from, why a build happens, and what differs between two.

A `Fingerprint` is one value that is both the engine cache's key and the history's record of a build:
the model (content hash, a digest per initializer and per node, inputs with shapes and types, opsets),
every build option, the backend and its version, trt-tui's version, and the host (CPU model, cores)
and GPU (name, compute capability, driver) it was built on. Only the first four decide whether an
engine is current (`Fingerprint.key`): a build made on another host with the same inputs is the same
engine, and saying so is the point of the cache.

`rebuild_reason` says in one line why a build is not skipped; `diff` compares two fingerprints and
two phase-timing maps. Both are pure functions of plain data (unit-testable without TensorRT);
`fingerprint_of` is the one place that reads files and the machine.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...version import __version__
from ..build.sidecar import Stamp, stamp_of
from ..files.units import human_bytes
from ..model.modelinfo import ModelDigests, ModelInfoError, read_model_digests
from . import digest_store

__all__ = [
    "Fingerprint",
    "certain_reason",
    "describe_model_change",
    "diff",
    "fingerprint_of",
    "host_info",
    "rebuild_reason",
]

NAMED = 5  # a change list names this many things, then counts the rest


@dataclass(frozen=True)
class Fingerprint:
    model: dict  # hash, initializers {name: digest}, nodes {name: digest}, inputs [[name, dtype, shape]], opsets
    options: dict
    backend: str
    backend_version: str
    trt_tui: str
    host: dict  # cpu, cores
    gpu: dict | None  # name, compute_capability, driver; None without an NVIDIA GPU
    # [[name, stamp], ...]: the model's files as they were when hashed (`sidecar`), where known; for
    # the engine's record, not part of what it was built from
    stamps: list | None = field(default=None, compare=False)

    def key(self) -> dict:
        """What decides whether an engine is current; the same shape the sidecars always had."""
        return {"model_hash": self.model.get("hash"), "options": self.options, "backend": self.backend,
                "backend_version": self.backend_version}

    def as_dict(self) -> dict:
        return {"model": self.model, "options": self.options, "backend": self.backend,
                "backend_version": self.backend_version, "trt_tui": self.trt_tui, "host": self.host,
                "gpu": self.gpu}

    @classmethod
    def from_dict(cls, data: dict) -> Fingerprint:
        return cls(model=dict(data.get("model") or {}), options=dict(data.get("options") or {}),
                   backend=str(data.get("backend") or ""), backend_version=str(data.get("backend_version") or ""),
                   trt_tui=str(data.get("trt_tui") or ""), host=dict(data.get("host") or {}),
                   gpu=data.get("gpu"))


# -- reading the machine and the model -----------------------------------------------------------------

_host_lock = threading.Lock()
_host: tuple[dict, dict | None] | None = None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown"


def _gpu_info() -> dict | None:
    """The first GPU NVML reports, or None (no driver, no GPU, no pynvml)."""
    from ..observe.nvml import nvml_started

    nvml = nvml_started()
    if nvml is None:
        return None
    try:
        if nvml.nvmlDeviceGetCount() < 1:
            return None
        handle = nvml.nvmlDeviceGetHandleByIndex(0)

        def text(value) -> str:
            return value.decode() if isinstance(value, bytes) else str(value)

        info: dict[str, str | None] = {"name": text(nvml.nvmlDeviceGetName(handle))}
        try:
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            info["compute_capability"] = f"{major}.{minor}"
        except Exception:
            info["compute_capability"] = None
        try:
            info["driver"] = text(nvml.nvmlSystemGetDriverVersion())
        except Exception:
            info["driver"] = None
        return info
    except Exception:
        return None


def host_info() -> tuple[dict, dict | None]:
    """(host, gpu), read once per process: neither changes while it runs."""
    global _host
    with _host_lock:
        if _host is None:
            _host = ({"cpu": _cpu_model(), "cores": os.cpu_count() or 0}, _gpu_info())
        return _host


_digest_lock = threading.Lock()
_digest_memo: dict[str, tuple[Stamp, ModelDigests | None]] = {}


def read_digests(model: Path, hashed: tuple[str, Stamp] | None = None) -> ModelDigests | None:
    """The model's digests (None where it cannot be read as ONNX: the build says why), re-read only
    when the file's `stamp` changed: they depend on the model file's bytes alone. `hashed`: the
    file's SHA-256 and the stamp it had when hashed; while the file still has that stamp, its digests
    may come from, and go to, the store kept across processes (`digest_store`)."""
    key = os.path.abspath(model)
    now = stamp_of(model)
    if now is None:
        return None
    with _digest_lock:
        memo = _digest_memo.get(key)
    if memo is not None and memo[0] == now:
        return memo[1]
    file_hash = hashed[0] if hashed is not None and hashed[1] == now else None
    value = digest_store.load(file_hash, model) if file_hash else None
    if value is None:
        try:
            value = read_model_digests(model)
        except ModelInfoError:
            value = None
        if value is not None and file_hash and stamp_of(model) == now:
            digest_store.save(file_hash, value)
    with _digest_lock:
        _digest_memo[key] = (now, value)
    return value


def model_part(digests: ModelDigests | None, content_hash: str) -> dict:
    """The model part of a fingerprint: just the hash where the model could not be read."""
    if digests is None:
        return {"hash": content_hash}
    info = digests.info
    return {"hash": content_hash, "initializers": digests.initializers, "nodes": digests.nodes,
            "inputs": [[t.name, t.dtype, t.shape_text()] for t in info.inputs], "opsets": dict(info.opsets)}


def fingerprint_of(model: dict, options: dict, backend: str, backend_version: str) -> Fingerprint:
    """A fingerprint of this build on this machine; `model` from `model_part`."""
    host, gpu = host_info()
    return Fingerprint(model, options, backend, backend_version, __version__, host, gpu)


# -- why a build happens ----------------------------------------------------------------------------

_FLAGS = {"workspace": "--workspace", "opt_level": "--opt-level", "shapes": "--shapes",
          "compute_capabilities": "--compute-capability"}


def _option_text(key: str, value) -> str:
    if value is None or value == [] or value == {}:
        return "default"
    if key == "workspace" and isinstance(value, int):
        return human_bytes(value)
    if key == "shapes" and isinstance(value, dict):
        return ",".join(f"{name}:" + "/".join("x".join(str(d) for d in s) for s in shapes)
                        for name, shapes in value.items())
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def option_changes(before: dict, after: dict) -> list[str]:
    """["--opt-level 3 → 4", ...] for every option whose value differs."""
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            flag = _FLAGS.get(key, "--" + key.replace("_", "-"))
            changes.append(f"{flag} {_option_text(key, old)} → {_option_text(key, new)}")
    return changes


def _named(groups: list[tuple[str, str, list[str]]]) -> list[str]:
    """("initializer", "changed", names) groups as phrases, naming at most NAMED things in all:
    "initializers a, b changed", "2 nodes added", "nodes c, d and 3 more removed". Unnamed nodes
    ("#12 Relu": only a place in the graph) are counted, never named."""
    phrases = []
    budget = NAMED
    for noun, verb, names in groups:
        if not names:
            continue
        plural = noun + ("s" if len(names) != 1 else "")
        shown = [n for n in names if not n.startswith("#")][:budget]
        budget -= len(shown)
        if not shown:
            phrases.append(f"{len(names)} {plural} {verb}")
        elif len(shown) == len(names):
            phrases.append(f"{plural} {', '.join(shown)} {verb}")
        else:
            phrases.append(f"{plural} {', '.join(shown)} and {len(names) - len(shown)} more {verb}")
    return phrases


def _dict_changes(before: dict, after: dict) -> tuple[list[str], list[str], list[str]]:
    changed = [k for k in after if k in before and before[k] != after[k]]
    added = [k for k in after if k not in before]
    removed = [k for k in before if k not in after]
    return changed, added, removed


def model_changes(before: dict, after: dict) -> list[str]:
    """What changed between two model digests, as short phrases; [] when they are the same."""
    if before.get("hash") == after.get("hash"):
        return []
    phrases = []
    old_inputs = {i[0]: i[1:] for i in before.get("inputs") or []}
    new_inputs = {i[0]: i[1:] for i in after.get("inputs") or []}
    for name, (dtype, shape) in new_inputs.items():
        if name in old_inputs and old_inputs[name] != [dtype, shape]:
            old_dtype, old_shape = old_inputs[name]
            phrases.append(f"input {name} {old_shape} {old_dtype} → {shape} {dtype}")
    if "opsets" in before and "opsets" in after and before["opsets"] != after["opsets"]:
        for domain in sorted(set(before["opsets"]) | set(after["opsets"])):
            old, new = before["opsets"].get(domain), after["opsets"].get(domain)
            if old != new:
                phrases.append(f"opset{' ' + domain if domain else ''} {old or 'none'} → {new or 'none'}")
    groups = []
    if "initializers" in before and "initializers" in after:
        changed, added, removed = _dict_changes(before["initializers"], after["initializers"])
        groups += [("initializer", "changed", changed), ("initializer", "added", added),
                   ("initializer", "removed", removed)]
    if "nodes" in before and "nodes" in after:
        changed, added, removed = _dict_changes(before["nodes"], after["nodes"])
        groups += [("node", "changed", changed), ("node", "added", added), ("node", "removed", removed)]
    added_inputs = [n for n in new_inputs if n not in old_inputs]
    removed_inputs = [n for n in old_inputs if n not in new_inputs]
    groups += [("input", "added", added_inputs), ("input", "removed", removed_inputs)]
    phrases += _named(groups)
    if not phrases:
        if "initializers" in before and "initializers" in after:
            return ["model changed outside its graph (metadata or external data)"]
        return ["model changed"]
    return phrases


def describe_model_change(before: dict, after: dict) -> str:
    return "; ".join(model_changes(before, after)) or "model unchanged"


def certain_reason(*, force: bool, engine_exists: bool, recorded: dict | None) -> str | None:
    """Why a build happens whatever the model and the engine on disk hold (`--force`, no engine, no
    record of it), or None where only their contents can say. Needs neither hashed."""
    if force:
        return "--force"
    if recorded is None:
        return "engine changed on disk (no build record beside it)" if engine_exists else "no engine yet"
    if not engine_exists:
        return "engine missing"
    return None


def rebuild_reason(*, force: bool, engine_exists: bool, recorded: dict | None, engine_matches: bool,
                   old: Fingerprint | None, old_key: dict | None, new: Fingerprint) -> str:
    """One line saying why a build that is not skipped happens.

    `recorded` is the engine's sidecar (None where there is none or it cannot be read), `engine_matches`
    whether the engine on disk is the one it records, `old` the fingerprint it records (older sidecars
    have only `old_key`). Returns "up to date" where nothing says to build."""
    certain = certain_reason(force=force, engine_exists=engine_exists, recorded=recorded)
    if certain is not None:
        return certain
    if not engine_matches:
        return "engine changed on disk"
    if old is not None:
        key = old.key()
    elif old_key:
        key = old_key
    else:
        if recorded is not None and recorded.get("model_changed_while_built"):
            return "model changed while its engine was built"
        return "build record unreadable"
    new_key = new.key()
    reasons = []
    if key.get("backend") != new_key["backend"] or key.get("backend_version") != new_key["backend_version"]:
        reasons.append(f"backend {key.get('backend') or '?'} {key.get('backend_version') or '?'} → "
                       f"{new.backend} {new.backend_version}")
    options = option_changes(key.get("options") or {}, new.options)
    if options:
        reasons.append("options changed (" + ", ".join(options) + ")")
    if key.get("model_hash") != new_key["model_hash"]:
        reasons.append("model changed: " + describe_model_change(old.model, new.model) if old is not None
                       else "model changed")
    if not reasons and key != new_key:
        reasons.append("build settings changed")
    return "; ".join(reasons) or "up to date"


# -- comparing two builds -------------------------------------------------------------------------------


def fingerprint_changes(a: Fingerprint, b: Fingerprint) -> list[dict]:
    """[{"what": ..., "before": ..., "after": ...}] for each part that differs; model changes carry
    the phrase in "after" ("initializer conv1.weight changed")."""
    out: list[dict] = []
    for phrase in model_changes(a.model, b.model):
        out.append({"what": "model", "change": phrase})
    for phrase in option_changes(a.options, b.options):
        out.append({"what": "option", "change": phrase})
    pairs = [
        ("backend", f"{a.backend} {a.backend_version}".strip(), f"{b.backend} {b.backend_version}".strip()),
        ("trt-tui", a.trt_tui, b.trt_tui),
        ("host", _host_text(a.host), _host_text(b.host)),
        ("gpu", _gpu_text(a.gpu), _gpu_text(b.gpu)),
    ]
    for what, before, after in pairs:
        if before != after:
            out.append({"what": what, "change": f"{before or '?'} → {after or '?'}"})
    return out


def _host_text(host: dict) -> str:
    if not host:
        return ""
    return f"{host.get('cpu', '?')}, {host.get('cores', '?')} cores"


def _gpu_text(gpu: dict | None) -> str:
    if not gpu:
        return "no GPU"
    parts = [str(gpu.get("name") or "GPU")]
    if gpu.get("compute_capability"):
        parts.append(f"sm {gpu['compute_capability']}")
    if gpu.get("driver"):
        parts.append(f"driver {gpu['driver']}")
    return ", ".join(parts)


def phase_changes(before: dict[str, float], after: dict[str, float]) -> list[dict]:
    """Every phase path in either build, by absolute change in seconds, largest first; a phase that
    ran in only one build has None for the other."""
    rows: list[dict[str, Any]] = []
    for path in dict.fromkeys([*before, *after]):
        old, new = before.get(path), after.get(path)
        change = (new or 0.0) - (old or 0.0)
        ratio = new / old if old and new is not None else None
        rows.append({"phase": path, "before": old, "after": new, "change": change, "ratio": ratio})
    rows.sort(key=lambda r: -abs(r["change"]))
    return rows


def diff(a: Fingerprint | None, b: Fingerprint | None, phases_a: dict[str, float], phases_b: dict[str, float],
         engine_a: int | None = None, engine_b: int | None = None) -> dict:
    """What differs between build A and build B: fingerprint changes, phases by absolute change in
    time, engine size. A build recorded without a fingerprint (before they existed) has None: then
    only the phases and sizes can be compared, and `no_fingerprint` names it ("A", "B")."""
    missing = [name for name, fingerprint in (("A", a), ("B", b)) if fingerprint is None]
    changes = fingerprint_changes(a, b) if a is not None and b is not None else []
    return {"changes": changes, "no_fingerprint": missing, "phases": phase_changes(phases_a, phases_b),
            "engine_bytes": {"before": engine_a, "after": engine_b}}
