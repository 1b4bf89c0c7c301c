"""Where the network a program builds came from: the ONNX file its `OnnxParser` parsed, or bytes it
parsed from memory. trt-tui's own builds know their model; a build made in another program (`trt-tui
run`, the environment's hook, `trt_tui.observe`) is named by what this module saw that program parse,
so that its history record and its bundle name the file, and a `trt-tui build FILE` rebuilds it.

`track(trt)` wraps, once per TensorRT, `OnnxParser` (which network each parser fills; what each
`parse_from_file`, `parse` and `parse_with_weight_descriptors` read) and the `Builder`'s
`create_network` and `create_builder_config` (which builder made a network and a config:
`trt_tui.observe(config)` is given the config, not the network it will build). Each wrapper does its
bookkeeping inside a `try`, then calls TensorRT exactly as the program did: same arguments, same
return value, same exceptions. TensorRT's objects are held weakly.

`import trt_tui` calls `install()`: a TensorRT already imported is tracked at once, one imported later
as it is imported (a meta-path finder answering for `tensorrt` and `tensorrt_rtx` only). A network
parsed before either is not known, and its build keeps its program's name.
"""

from __future__ import annotations

import _thread
import functools
import os
import sys
import weakref

TYPE_CHECKING = False  # `typing`'s, without importing it (`import trt_tui` imports this module: stdlib's lightest)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

__all__ = ["FROM_MEMORY", "ModelSource", "install", "parsed_from_memory", "source_for", "source_of", "track"]

FROM_MEMORY = "from memory"  # in the name of a build whose model was parsed from bytes
HASH_LIMIT = 1 << 30  # bytes parsed from memory up to this size get their SHA-256 (about a second)
_TARGETS = ("tensorrt", "tensorrt_rtx")


class ModelSource:
    """The ONNX file a network was parsed from (`path`, resolved), or the size and SHA-256 of the
    bytes it was parsed from in memory (`path` None; `sha256` None above `HASH_LIMIT`). A value: equal
    to another of the same facts (a plain class: `dataclasses` would double what `import trt_tui` costs)."""

    __slots__ = ("path", "sha256", "size")

    def __init__(self, path: str | None = None, size: int | None = None, sha256: str | None = None) -> None:
        self.path = path
        self.size = size
        self.sha256 = sha256

    def _facts(self) -> tuple:
        return (self.path, self.size, self.sha256)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelSource) and self._facts() == other._facts()

    def __hash__(self) -> int:
        return hash(self._facts())

    def __repr__(self) -> str:
        return f"ModelSource(path={self.path!r}, size={self.size!r}, sha256={self.sha256!r})"

    def name(self, program: str) -> str:
        """The build's name: its file, else `program`'s name ("train.py #2") saying it came from memory."""
        if self.path is not None:
            return self.path
        digest = f", sha256 {self.sha256[:12]}" if self.sha256 else ""
        return f"{program} ({FROM_MEMORY}{digest})"


def parsed_from_memory(model: str) -> bool:
    """Whether a build's recorded model is the name `ModelSource.name` gives bytes parsed in memory
    (the history keeps it as a path in the directory it was recorded from, as every model)."""
    name = os.path.basename(model)
    return f" ({FROM_MEMORY}" in name and name.endswith(")")


_lock = _thread.allocate_lock()
_tracked: set[type] = set()  # the Builder and OnnxParser classes wrapped
_parser_network: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # parser -> ref to its network
_network_source: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # network -> ModelSource
_builder_networks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # builder -> WeakSet of networks
_config_builder: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # config -> ref to its builder
_installed = False


def source_of(network) -> ModelSource | None:
    """What `network` was last parsed from, if this process's TensorRT was tracked when it was."""
    try:
        with _lock:
            return _network_source.get(network)
    except TypeError:  # not a TensorRT object at all
        return None


def source_for(config) -> ModelSource | None:
    """What the build made with `config` will build, before it starts: the source of the networks of
    the builder that made `config`, where they all have one and the same (else None: not known)."""
    try:
        with _lock:
            ref = _config_builder.get(config)
            builder = ref() if ref is not None else None
            networks = list(_builder_networks.get(builder, ())) if builder is not None else []
            sources = {_network_source.get(network) for network in networks}
    except TypeError:
        return None
    return sources.pop() if len(sources) == 1 else None


def _file_source(args: tuple, kwargs: dict) -> ModelSource:
    path = args[0] if args else kwargs["model"]
    return ModelSource(path=os.path.realpath(os.fsdecode(os.fspath(path))))


def _memory_source(args: tuple, kwargs: dict) -> ModelSource:
    import hashlib

    view = memoryview(args[0] if args else kwargs["model"])
    digest = hashlib.sha256(view).hexdigest() if view.nbytes <= HASH_LIMIT and view.contiguous else None
    return ModelSource(size=view.nbytes, sha256=digest)


def _wrap_parse(original, source):
    @functools.wraps(original)
    def parse(parser, *args, **kwargs):
        try:
            found = source(args, kwargs)
            with _lock:
                ref = _parser_network.get(parser)
                network = ref() if ref is not None else None
                if network is not None:
                    _network_source[network] = found
        except Exception:  # trt-tui's bookkeeping only: TensorRT judges the arguments below
            pass
        return original(parser, *args, **kwargs)

    return parse


def _track_parser(parser_cls: Any) -> None:
    init = parser_cls.__init__

    @functools.wraps(init)
    def __init__(parser, *args, **kwargs):
        init(parser, *args, **kwargs)
        try:
            network = args[0] if args else kwargs["network"]
            with _lock:
                _parser_network[parser] = weakref.ref(network)
        except Exception:
            pass

    parser_cls.__init__ = __init__
    for name, source in (("parse_from_file", _file_source), ("parse", _memory_source),
                         ("parse_with_weight_descriptors", _memory_source)):
        original = getattr(parser_cls, name, None)
        if original is not None:
            setattr(parser_cls, name, _wrap_parse(original, source))


def _track_builder(builder_cls: Any) -> None:
    create_network = builder_cls.create_network
    create_config = builder_cls.create_builder_config

    @functools.wraps(create_network)
    def network_of(builder, *args, **kwargs):
        network = create_network(builder, *args, **kwargs)
        try:
            with _lock:
                _builder_networks.setdefault(builder, weakref.WeakSet()).add(network)
        except Exception:
            pass
        return network

    @functools.wraps(create_config)
    def config_of(builder, *args, **kwargs):
        config = create_config(builder, *args, **kwargs)
        try:
            with _lock:
                _config_builder[config] = weakref.ref(builder)
        except Exception:
            pass
        return config

    builder_cls.create_network = network_of
    builder_cls.create_builder_config = config_of


def track(trt: ModuleType) -> None:
    """Follow the parses of the TensorRT `trt` is (once per TensorRT; a module that is none is left
    alone). Never raises: a TensorRT whose classes cannot be wrapped is simply not followed."""
    module = sys.modules.get(trt.__name__, trt)
    try:
        for name, wrap in (("Builder", _track_builder), ("OnnxParser", _track_parser)):
            cls = getattr(module, name, None)
            if not isinstance(cls, type):
                continue
            with _lock:
                if cls in _tracked:
                    continue
                _tracked.add(cls)
            wrap(cls)
    except Exception:
        pass


class _TrackingLoader:
    """The real loader, then `track` once the module has run."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        track(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _SourceFinder:
    """Finds `tensorrt` / `tensorrt_rtx` as the other finders would, and wraps the loader. Asked again
    while it asks the others (another wrapping finder asks every finder in turn), it answers nothing."""

    def __init__(self) -> None:
        self._asking = _thread._local()

    def find_spec(self, name, path=None, target=None):
        if name not in _TARGETS or getattr(self._asking, "on", False):
            return None
        self._asking.on = True
        try:
            for finder in list(sys.meta_path):
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                        # a loader by duck typing (importing `importlib.abc` for its base would cost `import trt_tui`)
                        spec.loader = _TrackingLoader(spec.loader)  # type: ignore[assignment]
                    return spec
            return None
        finally:
            self._asking.on = False


def install() -> None:
    """Track every TensorRT of this process: those imported already now, the others as imported."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    for name in _TARGETS:
        module = sys.modules.get(name)
        if module is not None:
            track(module)
    sys.meta_path.insert(0, _SourceFinder())
