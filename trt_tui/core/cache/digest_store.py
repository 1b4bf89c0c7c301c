"""A model's digests remembered across processes, by the SHA-256 of the model file's bytes.

A build's fingerprint names each initializer and node of its model by a digest of its bytes (so that
`trt-tui history diff` can say which changed). Finding them walks the whole model (every node, and
every byte of the weights), and a process remembers them only while
it runs, so every `trt-tui build` of a model whose engine has no record yet (a new output path, the
first build with other options, CI's `--force` into a fresh directory) walked it again: with the
thread executor, under the GIL the build shares.

The digests depend on the file's bytes alone, so they are kept in the user's cache directory
(`$TRT_TUI_CACHE`, else platformdirs' `user_cache_dir("trt-tui")`), one small JSON file per model
content, named by the hash the engine cache computes anyway. A model that names external data files
is not kept (where they are depends on where the copy is, not on its bytes). Any file that cannot be
read back as written here (another version, cut short, edited) is ignored and the model is walked;
one that cannot be written is not written. Nothing here raises.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..files import atomic
from ..files.cache_dirs import user_cache_subdir
from ..model.modelinfo import ModelDigests, ModelInfo, TensorInfo

VERSION = 1


def store_dir() -> Path | None:
    return user_cache_subdir("model-digests")


def _path(file_hash: str) -> Path | None:
    folder = store_dir()
    if folder is None or not file_hash.isalnum():
        return None
    return folder / f"{file_hash}.json"


def load(file_hash: str, model: Path) -> ModelDigests | None:
    """The digests of the model whose file has `file_hash`, as if read from `model`; None if not kept."""
    path = _path(file_hash)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("version") != VERSION:
            return None
        return _from_json(data, model)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(file_hash: str, digests: ModelDigests) -> None:
    path = _path(file_hash)
    if path is None or digests.info.external_data:
        # Where external data files are named, the model says where they are (relative, absolute, ../),
        # and the reader keeps only where that led from this copy: not the bytes' alone. Walked each time.
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_bytes(path, json.dumps(_to_json(digests), separators=(",", ":")).encode())
        _prune(path.parent)
    except (OSError, ValueError, TypeError):
        pass  # a cache: the next build walks the model again


KEEP = 256  # model contents kept (a file is ~40 KB for ~900 nodes); a watched model makes one per save


def _prune(folder: Path) -> None:
    """The oldest files beyond `KEEP` go: the store stays bounded however often models change."""
    files = list(folder.glob("*.json"))
    if len(files) <= KEEP:
        return
    aged = []
    for file in files:
        try:
            aged.append((file.stat().st_mtime_ns, file))
        except OSError:
            pass
    aged.sort()
    for _, file in aged[: len(aged) - KEEP]:
        try:
            file.unlink()
        except OSError:
            pass


def _tensors(tensors: tuple[TensorInfo, ...]) -> list:
    return [[t.name, t.elem_type, None if t.shape is None else list(t.shape)] for t in tensors]


def _to_json(digests: ModelDigests) -> dict:
    info = digests.info  # one without external data files (`save`)
    return {
        "version": VERSION,
        "size": info.size, "ir_version": info.ir_version, "producer": info.producer, "opsets": info.opsets,
        "inputs": _tensors(info.inputs), "outputs": _tensors(info.outputs), "num_nodes": info.num_nodes,
        "initializers": digests.initializers, "nodes": digests.nodes,
    }


def _from_json(data: dict, model: Path) -> ModelDigests:
    def tensors(items: list) -> tuple[TensorInfo, ...]:
        return tuple(TensorInfo(str(name), int(elem_type), None if shape is None else tuple(shape))
                     for name, elem_type, shape in items)

    info = ModelInfo(
        path=model, size=int(data["size"]), ir_version=data["ir_version"], producer=data["producer"],
        opsets={str(k): int(v) for k, v in data["opsets"].items()}, inputs=tensors(data["inputs"]),
        outputs=tensors(data["outputs"]), num_nodes=int(data["num_nodes"]), external_data=(),
    )
    initializers, nodes = data["initializers"], data["nodes"]
    if not (isinstance(initializers, dict) and isinstance(nodes, dict)):
        raise TypeError("digests are not maps")
    return ModelDigests(info, dict(initializers), dict(nodes))
