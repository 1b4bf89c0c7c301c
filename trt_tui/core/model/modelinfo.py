"""What a model picker shows about an ONNX file, read without loading the model's weights.

``onnx.load`` parses the whole ``ModelProto``, weights included, so showing the inputs of a 100 MB model
would cost a 100 MB read and as much memory. This module walks ``ModelProto`` -> ``GraphProto`` with
its own reader of the protobuf wire format (`protobuf_wire`) and decodes only the few fields the picker
shows (graph inputs and outputs, initializer names, external data locations, node count, opsets, IR
version, producer), stepping over everything else (weights, node bodies, doc strings) by its length
without reading it. A 100 MB model costs a few hundred small reads.

Field numbers are those of ``onnx.proto`` (checked against the descriptors of onnx 1.23). The module
does not import ``onnx`` or any UI package.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .protobuf_wire import LEN, VARINT, Malformed, Source, WireReader

__all__ = ["ModelDigests", "ModelInfo", "ModelInfoError", "TensorInfo", "read_model_digests", "read_model_info"]

# ONNX TensorProto.DataType numbers -> the names the picker shows (numpy's where there is one).
_DTYPES = {
    0: "undefined",
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "string",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
    17: "float8e4m3fn",
    18: "float8e4m3fnuz",
    19: "float8e5m2",
    20: "float8e5m2fnuz",
    21: "uint4",
    22: "int4",
    23: "float4e2m1",
    24: "float8e8m0",
}


# ModelProto
_MODEL_IR_VERSION, _MODEL_PRODUCER, _MODEL_GRAPH, _MODEL_OPSET = 1, 2, 7, 8
# GraphProto
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT, _GRAPH_SPARSE_INITIALIZER = 1, 5, 11, 12, 15
# NodeProto / AttributeProto (walked only for tensors kept in external data files)
_NODE_NAME, _NODE_OP_TYPE, _NODE_ATTRIBUTE = 3, 4, 5
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_SPARSE, _ATTR_SPARSES = 5, 6, 10, 11, 22, 23
# TensorProto
_TENSOR_NAME, _TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION = 8, 13, 14
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL
# SparseTensorProto
_SPARSE_VALUES, _SPARSE_INDICES = 1, 2
# StringStringEntryProto
_ENTRY_KEY, _ENTRY_VALUE = 1, 2
# ValueInfoProto / TypeProto / TypeProto.Tensor / TensorShapeProto / TensorShapeProto.Dimension
_VI_NAME, _VI_TYPE = 1, 2
_TYPE_TENSOR, _TYPE_SPARSE_TENSOR = 1, 8
_TT_ELEM_TYPE, _TT_SHAPE = 1, 2
_SHAPE_DIM = 1
_DIM_VALUE, _DIM_PARAM = 1, 2
# OperatorSetIdProto
_OPSET_DOMAIN, _OPSET_VERSION = 1, 2

_MAX_DEPTH = 64  # nested subgraphs (If/Loop bodies) deeper than this are taken as corrupt data


class ModelInfoError(ValueError):
    """The file could not be read as an ONNX model; the message is one line naming the file."""


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output: its name, element type and shape as declared in the model."""

    name: str
    elem_type: int  # ONNX TensorProto.DataType number; 0 for non-tensor types (sequences, maps, ...)
    shape: tuple[int | str | None, ...] | None  # int, symbolic name, or None per dim; None if no shape

    @property
    def dtype(self) -> str:
        """``"float32"``, ``"float16"``, ``"int64"``, ...; ``"type<n>"`` for types without a name here."""
        return _DTYPES.get(self.elem_type, f"type{self.elem_type}")

    def shape_text(self) -> str:
        """``"N×3×224×224"``; ``"?"`` for an unknown shape or dim, ``"scalar"`` for rank 0."""
        if self.shape is None:
            return "?"
        if not self.shape:
            return "scalar"
        return "×".join("?" if dim is None else str(dim) for dim in self.shape)


@dataclass(frozen=True)
class ModelInfo:
    path: Path
    size: int  # bytes of the .onnx file itself
    ir_version: int | None
    producer: str | None
    opsets: dict[str, int]  # domain -> version; "" for the default domain
    inputs: tuple[TensorInfo, ...]  # real inputs only: inputs that are initializers are left out
    outputs: tuple[TensorInfo, ...]
    num_nodes: int  # nodes of the main graph (not of subgraphs)
    external_data: tuple[Path, ...]  # distinct absolute paths of the external data files referenced

    @property
    def dynamic(self) -> bool:
        """Whether any input has a dim that is not a positive integer (symbolic, unknown) or no shape."""
        return any(
            t.shape is None or any(not isinstance(d, int) or d <= 0 for d in t.shape) for t in self.inputs
        )

    def inputs_text(self) -> str:
        """``"input: 1×3×224×224"`` for each input, joined by ``", "``."""
        return ", ".join(f"{t.name}: {t.shape_text()}" for t in self.inputs)


class _Parser(WireReader):
    def __init__(self, src: Source, model_dir: str) -> None:
        super().__init__(src)
        self.model_dir = model_dir
        self.ir_version: int | None = None
        self.producer: str | None = None
        self.opsets: dict[str, int] = {}
        self.inputs: list[TensorInfo] = []
        self.outputs: list[TensorInfo] = []
        self.initializers: set[str] = set()
        self.num_nodes = 0
        self.external: dict[str, None] = {}  # insertion-ordered set
        self.has_graph = False
        # Only for read_model_digests: a digest of each top-level initializer's and node's bytes.
        self.digests = False
        self.initializer_digests: dict[str, str] = {}
        self.node_digests: dict[str, str] = {}

    # --- messages ----------------------------------------------------------------------------------

    def model(self) -> None:
        for field, wire, a, b in self.fields(0, self.src.size):
            if field == _MODEL_IR_VERSION:
                self.expect(wire, VARINT, "ir_version")
                self.ir_version = self.int64(a)
            elif field == _MODEL_PRODUCER:
                self.expect(wire, LEN, "producer_name")
                self.producer = self.string(a, b)
            elif field == _MODEL_GRAPH:
                self.expect(wire, LEN, "graph")
                self.has_graph = True  # a repeated message field merges, as protobuf does
                self.graph(a, b, top=True, depth=0)
            elif field == _MODEL_OPSET:
                self.expect(wire, LEN, "opset_import")
                self.opset(a, b)

    def opset(self, start: int, end: int) -> None:
        domain, version = "", None
        for field, wire, a, b in self.fields(start, end):
            if field == _OPSET_DOMAIN:
                self.expect(wire, LEN, "opset domain")
                domain = self.string(a, b)
            elif field == _OPSET_VERSION:
                self.expect(wire, VARINT, "opset version")
                version = self.int64(a)
        if version is not None:
            self.opsets["" if domain == "ai.onnx" else domain] = version

    def graph(self, start: int, end: int, *, top: bool, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise Malformed("subgraphs nested too deeply")
        for field, wire, a, b in self.fields(start, end):
            if field == _GRAPH_NODE:
                self.expect(wire, LEN, "node")
                if top:
                    self.num_nodes += 1
                name, op_type = self.node(a, b, depth)
                if top and self.digests:
                    self.node_digests[self.node_key(name, op_type)] = self.src.digest(a, b)
            elif field == _GRAPH_INITIALIZER:
                self.expect(wire, LEN, "initializer")
                name = self.tensor(a, b)
                if top:
                    self.initializers.add(name)
                    if self.digests:
                        self.initializer_digests[name] = self.src.digest(a, b)
            elif field == _GRAPH_SPARSE_INITIALIZER:
                self.expect(wire, LEN, "sparse_initializer")
                name = self.sparse_tensor(a, b)
                if top:
                    self.initializers.add(name)
            elif field == _GRAPH_INPUT and top:
                self.expect(wire, LEN, "input")
                self.inputs.append(self.value_info(a, b))
            elif field == _GRAPH_OUTPUT and top:
                self.expect(wire, LEN, "output")
                self.outputs.append(self.value_info(a, b))

    def node_key(self, name: str, op_type: str) -> str:
        """A node's name; an unnamed one is "#index OpType" (its place among the graph's nodes)."""
        key = name or f"#{self.num_nodes - 1} {op_type or 'node'}"
        while key in self.node_digests:  # names should be unique; a duplicate still gets its own entry
            key += "'"
        return key

    def node(self, start: int, end: int, depth: int) -> tuple[str, str]:
        """The node's name and op_type (read only for digests). Otherwise only attributes are looked into, for tensors kept in
        external data files and for subgraphs."""
        name = op_type = ""
        for field, wire, a, b in self.fields(start, end):
            if field == _NODE_ATTRIBUTE and wire == LEN:
                self.attribute(a, b, depth)
            elif self.digests and field == _NODE_NAME and wire == LEN:
                name = self.string(a, b)
            elif self.digests and field == _NODE_OP_TYPE and wire == LEN:
                op_type = self.string(a, b)
        return name, op_type

    def attribute(self, start: int, end: int, depth: int) -> None:
        for field, wire, a, b in self.fields(start, end):
            if wire != LEN:
                continue
            if field in (_ATTR_T, _ATTR_TENSORS):
                self.tensor(a, b)
            elif field in (_ATTR_SPARSE, _ATTR_SPARSES):
                self.sparse_tensor(a, b)
            elif field in (_ATTR_G, _ATTR_GRAPHS):
                self.graph(a, b, top=False, depth=depth + 1)

    def tensor(self, start: int, end: int) -> str:
        """The tensor's name; records its external data file. Its data is stepped over unread."""
        name = ""
        location: str | None = None
        external = False
        for field, wire, a, b in self.fields(start, end):
            if field == _TENSOR_NAME:
                self.expect(wire, LEN, "tensor name")
                name = self.string(a, b)
            elif field == _TENSOR_DATA_LOCATION:
                self.expect(wire, VARINT, "tensor data_location")
                external = a == _EXTERNAL
            elif field == _TENSOR_EXTERNAL_DATA:
                self.expect(wire, LEN, "tensor external_data")
                key, value = self.entry(a, b)
                if key == "location":
                    location = value
        if external and location:
            path = os.path.normpath(os.path.join(self.model_dir, location))
            self.external.setdefault(path, None)
        return name

    def sparse_tensor(self, start: int, end: int) -> str:
        name = ""
        for field, wire, a, b in self.fields(start, end):
            if field == _SPARSE_VALUES:
                self.expect(wire, LEN, "sparse tensor values")
                name = self.tensor(a, b)
            elif field == _SPARSE_INDICES:
                self.expect(wire, LEN, "sparse tensor indices")
                self.tensor(a, b)
        return name

    def entry(self, start: int, end: int) -> tuple[str, str]:
        key = value = ""
        for field, wire, a, b in self.fields(start, end):
            if field == _ENTRY_KEY:
                self.expect(wire, LEN, "external_data key")
                key = self.string(a, b)
            elif field == _ENTRY_VALUE:
                self.expect(wire, LEN, "external_data value")
                value = self.string(a, b)
        return key, value

    def value_info(self, start: int, end: int) -> TensorInfo:
        name = ""
        elem_type = 0
        shape: list[int | str | None] | None = None
        for field, wire, a, b in self.fields(start, end):
            if field == _VI_NAME:
                self.expect(wire, LEN, "value name")
                name = self.string(a, b)
            elif field == _VI_TYPE:
                self.expect(wire, LEN, "value type")
                for tfield, twire, ta, tb in self.fields(a, b):
                    if tfield in (_TYPE_TENSOR, _TYPE_SPARSE_TENSOR):
                        self.expect(twire, LEN, "tensor type")
                        elem_type, shape = self.tensor_type(ta, tb, elem_type, shape)
        return TensorInfo(name, elem_type, None if shape is None else tuple(shape))

    def tensor_type(
        self, start: int, end: int, elem_type: int, shape: list[int | str | None] | None
    ) -> tuple[int, list[int | str | None] | None]:
        for field, wire, a, b in self.fields(start, end):
            if field == _TT_ELEM_TYPE:
                self.expect(wire, VARINT, "elem_type")
                elem_type = self.int64(a)
            elif field == _TT_SHAPE:
                self.expect(wire, LEN, "shape")
                if shape is None:
                    shape = []
                for sfield, swire, sa, sb in self.fields(a, b):
                    if sfield == _SHAPE_DIM:
                        self.expect(swire, LEN, "dim")
                        shape.append(self.dim(sa, sb))
        return elem_type, shape

    def dim(self, start: int, end: int) -> int | str | None:
        value: int | str | None = None
        for field, wire, a, b in self.fields(start, end):
            if field == _DIM_VALUE:
                self.expect(wire, VARINT, "dim_value")
                value = self.int64(a)
            elif field == _DIM_PARAM:
                self.expect(wire, LEN, "dim_param")
                value = self.string(a, b) or None
        return value


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def read_model_info(path: Path | str) -> ModelInfo:
    """Read what a model picker shows about the ONNX file at ``path``, skipping its weights.

    Raises ``ModelInfoError`` ("<path>: not an ONNX model (<reason>)") for a missing, unreadable, empty,
    truncated or corrupt file, and for valid protobuf that is not a ``ModelProto``; never anything else.
    """
    return _read(Path(path), digests=False)[0]


@dataclass(frozen=True)
class ModelDigests:
    """A model's info plus a short digest of each top-level initializer's and node's serialized bytes:
    enough to say which of them changed between two versions of a model (a build fingerprint)."""

    info: ModelInfo
    initializers: dict[str, str]  # initializer name -> digest
    nodes: dict[str, str]  # node name ("#index OpType" for an unnamed one) -> digest


def read_model_digests(path: Path | str) -> ModelDigests:
    """Like ``read_model_info``, but reads every byte of the graph (weights included) to digest each
    initializer and node. Same errors. Initializers kept in external data files are digested by their
    reference (file, offset, length), not their contents: the engine cache hashes those files whole."""
    info, parser = _read(Path(path), digests=True)
    return ModelDigests(info, dict(parser.initializer_digests), dict(parser.node_digests))


def _read(path: Path, digests: bool) -> tuple[ModelInfo, _Parser]:

    def fail(reason: str) -> ModelInfoError:
        return ModelInfoError(f"{path}: not an ONNX model ({_one_line(reason)})")

    try:
        try:
            if path.exists() and not path.is_file() and not path.is_dir():
                raise fail("not a regular file")  # a FIFO would block open(), a device never end
            f = open(path, "rb", buffering=0)  # closed by the with below
        except FileNotFoundError:
            raise fail("no such file") from None
        except IsADirectoryError:
            raise fail("is a directory") from None
        except PermissionError:
            raise fail("permission denied") from None
        except OSError as e:
            raise fail(e.strerror or type(e).__name__) from None
        with f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise fail("not a regular file")
            size = st.st_size
            if size == 0:
                raise fail("empty file")
            parser = _Parser(Source(f, size), os.path.dirname(os.path.abspath(path)))
            parser.digests = digests
            try:
                parser.model()
            except Malformed as e:
                raise fail(str(e)) from None
        if not parser.has_graph:
            raise fail("no graph")
        if not parser.opsets and (parser.ir_version or 0) >= 3:
            raise fail("no opset_import")  # onnx.checker requires one from IR version 3 on
        return ModelInfo(
            path=path,
            size=size,
            ir_version=parser.ir_version,
            producer=parser.producer,
            opsets=dict(parser.opsets),
            inputs=tuple(t for t in parser.inputs if t.name not in parser.initializers),
            outputs=tuple(parser.outputs),
            num_nodes=parser.num_nodes,
            external_data=tuple(Path(p) for p in parser.external),
        ), parser
    except ModelInfoError:
        raise
    except RecursionError:
        raise fail("nested too deeply") from None
    except Exception as e:  # never anything but ModelInfoError, whatever the bytes
        raise fail(f"{type(e).__name__}: {e}") from None
