"""Tests for the weight-skipping ONNX header reader, checked against ``onnx.load``'s view of each model."""

from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trt_tui.core.model.modelinfo import ModelInfo, ModelInfoError, TensorInfo, read_model_info

# --- models -----------------------------------------------------------------------------------------


def _init(name: str, shape: tuple[int, ...], seed: int = 0) -> TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _mnist_like() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Conv", ["input", "conv.w", "conv.b"], ["c"], name="conv", pads=[2, 2, 2, 2]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["output"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "mnist",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 1, 28, 28])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])],
        [
            _init("conv.w", (8, 1, 5, 5), 1),
            _init("conv.b", (8,), 2),
            _init("fc.w", (10, 8 * 14 * 14), 3),
            _init("fc.b", (10,), 4),
        ],
    )
    model = helper.make_model(
        graph,
        producer_name="test-exporter",
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
    )
    onnx.checker.check_model(model)
    return model


def _dynamic() -> onnx.ModelProto:
    """Symbolic batch "N", an unknown dim, a second float16 input and an input with no shape at all."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, None, 32])
    mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT16, ["N", 1])
    anything = helper.make_tensor_value_info("anything", TensorProto.INT64, None)
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], keepdims=0, axes=[2, 3]),
        helper.make_node("Cast", ["mask"], ["mask32"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["m", "mask32"], ["y"]),
        helper.make_node("Shape", ["anything"], ["s"]),
    ]
    graph = helper.make_graph(
        nodes,
        "dynamic",
        [x, mask, anything],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("s", TensorProto.INT64, [None]),
        ],
    )
    # Not checked: onnx.checker wants every graph input to have a shape, which "anything" lacks on purpose.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _initializers_as_inputs() -> onnx.ModelProto:
    """Like older exporters (IR version 3): every weight is listed as a graph input too."""
    weights = [_init("w1", (16, 8), 5), _init("b1", (16,), 6)]
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 8])] + [
        helper.make_tensor_value_info(w.name, TensorProto.FLOAT, list(w.dims)) for w in weights
    ]
    nodes = [
        helper.make_node("Transpose", ["w1"], ["w1_t"]),
        helper.make_node("MatMul", ["data", "w1_t"], ["mm"]),
        helper.make_node("Add", ["mm", "b1"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes, "old", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 16])], weights
    )
    model = helper.make_model(graph, producer_name="pytorch", opset_imports=[helper.make_opsetid("", 9)])
    model.ir_version = 3
    onnx.checker.check_model(model)
    return model


def _tiny() -> onnx.ModelProto:
    """A small model with a single opset, so that every proper prefix of its bytes is invalid."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 4])],
        [_init("unused", (3,), 7)],
    )
    return helper.make_model(graph, producer_name="tiny", opset_imports=[helper.make_opsetid("", 17)])


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


# --- onnx's view ------------------------------------------------------------------------------------


def _dim(d: onnx.TensorShapeProto.Dimension) -> int | str | None:
    if d.HasField("dim_value"):
        return d.dim_value
    if d.HasField("dim_param"):
        return d.dim_param or None
    return None


def _tensor_info(vi: onnx.ValueInfoProto) -> TensorInfo:
    tt = vi.type.tensor_type
    shape = tuple(_dim(d) for d in tt.shape.dim) if tt.HasField("shape") else None
    return TensorInfo(vi.name, tt.elem_type, shape)


def _assert_matches_onnx(info: ModelInfo, path: Path) -> None:
    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    assert info.path == path
    assert info.size == path.stat().st_size
    assert info.ir_version == model.ir_version
    assert info.producer == (model.producer_name if model.HasField("producer_name") else None)
    assert info.opsets == {o.domain: o.version for o in model.opset_import}
    assert info.inputs == tuple(_tensor_info(v) for v in model.graph.input if v.name not in initializers)
    assert info.outputs == tuple(_tensor_info(v) for v in model.graph.output)
    assert info.num_nodes == len(model.graph.node)


def _external_locations(path: Path) -> set[Path]:
    """The external data files onnx itself sees, from initializers and node attribute tensors."""
    model = onnx.load(str(path), load_external_data=False)
    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                tensors.append(attr.t)
            tensors.extend(attr.tensors)
    return {
        (path.parent / entry.value).absolute()
        for t in tensors
        if t.data_location == TensorProto.EXTERNAL
        for entry in t.external_data
        if entry.key == "location"
    }


# --- reading valid models ---------------------------------------------------------------------------


def test_mnist_like(tmp_path: Path) -> None:
    path = _save(_mnist_like(), tmp_path / "mnist.onnx")
    info = read_model_info(path)
    _assert_matches_onnx(info, path)
    assert info.producer == "test-exporter"
    assert info.opsets == {"": 17, "com.microsoft": 1}
    assert info.inputs == (TensorInfo("input", TensorProto.FLOAT, (1, 1, 28, 28)),)
    assert info.outputs == (TensorInfo("output", TensorProto.FLOAT, (1, 10)),)
    assert info.num_nodes == 5
    assert info.external_data == ()
    assert not info.dynamic
    assert info.inputs_text() == "input: 1×1×28×28"
    assert info.outputs[0].shape_text() == "1×10"
    assert info.inputs[0].dtype == "float32"


def test_dynamic_batch(tmp_path: Path) -> None:
    path = _save(_dynamic(), tmp_path / "dynamic.onnx")
    info = read_model_info(path)
    _assert_matches_onnx(info, path)
    x, mask, anything = info.inputs
    assert x.shape == ("N", 3, None, 32)
    assert x.shape_text() == "N×3×?×32"
    assert mask.dtype == "float16" and mask.shape == ("N", 1)
    assert anything.dtype == "int64" and anything.shape is None and anything.shape_text() == "?"
    assert info.outputs[1].shape == (None,)
    assert info.producer is None
    assert info.dynamic
    assert info.inputs_text() == "x: N×3×?×32, mask: N×1, anything: ?"


def test_initializers_listed_as_inputs_are_not_inputs(tmp_path: Path) -> None:
    path = _save(_initializers_as_inputs(), tmp_path / "old.onnx")
    info = read_model_info(path)
    _assert_matches_onnx(info, path)
    assert [t.name for t in info.inputs] == ["data"]
    assert info.ir_version == 3
    assert info.opsets == {"": 9}
    assert not info.dynamic


def test_external_data_one_file(tmp_path: Path) -> None:
    path = tmp_path / "ext.onnx"
    onnx.save_model(
        _mnist_like(),
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="weights.bin",
        size_threshold=0,
    )
    assert (tmp_path / "weights.bin").exists()
    info = read_model_info(path)
    _assert_matches_onnx(info, path)
    assert info.external_data == ((tmp_path / "weights.bin").absolute(),)
    assert info.external_data[0].is_absolute()
    assert info.size == path.stat().st_size < 2000  # the weights are not in the .onnx file


def test_external_data_many_files_and_attribute_tensors(tmp_path: Path, monkeypatch) -> None:
    model = _mnist_like()
    const = helper.make_node("Constant", [], ["k"], value=_init("k", (64,), 8))
    model.graph.node.insert(0, const)
    sub = tmp_path / "models"
    sub.mkdir()
    path = sub / "many.onnx"
    onnx.save_model(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=False,
        size_threshold=0,
        convert_attribute=True,
    )
    expected = _external_locations(path)
    assert len(expected) == 5  # four initializers and the Constant's value
    monkeypatch.chdir(tmp_path)  # a relative model path still gives absolute data paths
    info = read_model_info(Path("models/many.onnx"))
    assert info.path == Path("models/many.onnx")
    assert set(info.external_data) == expected
    assert len(info.external_data) == len(expected)
    assert all(p.is_absolute() for p in info.external_data)
    assert info.num_nodes == 6


def test_str_path_accepted(tmp_path: Path) -> None:
    path = _save(_tiny(), tmp_path / "tiny.onnx")
    info = read_model_info(str(path))
    assert info.path == path
    assert info.inputs == (TensorInfo("x", TensorProto.FLOAT, ("B", 4)),)


def test_tensor_info_helpers() -> None:
    for n in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13):
        assert TensorInfo("t", n, ()).dtype == np.dtype(helper.tensor_dtype_to_np_dtype(n)).name
    assert TensorInfo("t", TensorProto.BFLOAT16, ()).dtype == "bfloat16"
    assert TensorInfo("t", 999, ()).dtype == "type999"
    assert TensorInfo("t", 1, ()).shape_text() == "scalar"
    assert TensorInfo("t", 1, (None, "seq")).shape_text() == "?×seq"
    info = ModelInfo(
        path=Path("m.onnx"),
        size=1,
        ir_version=8,
        producer=None,
        opsets={"": 17},
        inputs=(TensorInfo("a", 1, (1, 3)), TensorInfo("b", 7, (0,))),
        outputs=(),
        num_nodes=0,
        external_data=(),
    )
    assert info.inputs_text() == "a: 1×3, b: 0"
    assert info.dynamic  # a zero dim is not a positive int


# --- rejecting what is not a model ------------------------------------------------------------------


def _assert_rejected(path: Path, reason: str | None = None) -> ModelInfoError:
    with pytest.raises(ModelInfoError) as excinfo:
        read_model_info(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}: not an ONNX model (")
    assert message.endswith(")")
    assert "\n" not in message
    if reason is not None:
        assert reason in message
    return excinfo.value


def test_truncated_files(tmp_path: Path) -> None:
    data = _mnist_like().SerializeToString()
    path = tmp_path / "cut.onnx"
    for cut in (1, 10, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        _assert_rejected(path)
    path.write_bytes(data[: len(data) // 2])
    _assert_rejected(path, "truncated")


def test_every_prefix_of_a_small_model_is_rejected(tmp_path: Path) -> None:
    data = _tiny().SerializeToString()
    path = tmp_path / "prefix.onnx"
    path.write_bytes(data)
    read_model_info(path)
    for cut in range(1, len(data)):
        path.write_bytes(data[:cut])
        _assert_rejected(path)


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "random.onnx"
    for seed in range(50):
        path.write_bytes(np.random.default_rng(seed).bytes(1000))
        _assert_rejected(path)


@pytest.mark.parametrize(
    "message",
    [
        helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1.0, 2.0, 3.0, 4.0]),
        numpy_helper.from_array(np.ones((4, 4), np.float32), "raw"),
        _tiny().graph,
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3]),
        helper.make_opsetid("", 17),
    ],
    ids=["tensor", "raw-tensor", "graph", "value-info", "opset"],
)
def test_valid_protobuf_that_is_not_a_model(tmp_path: Path, message) -> None:
    path = tmp_path / "not_a_model.onnx"
    path.write_bytes(message.SerializeToString())
    _assert_rejected(path)


def test_model_without_graph(tmp_path: Path) -> None:
    model = onnx.ModelProto(ir_version=8, producer_name="x")
    model.opset_import.append(helper.make_opsetid("", 17))
    path = _save(model, tmp_path / "nograph.onnx")
    _assert_rejected(path, "no graph")


def test_empty_missing_and_directory(tmp_path: Path) -> None:
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    _assert_rejected(empty, "empty file")
    _assert_rejected(tmp_path / "missing.onnx", "no such file")
    _assert_rejected(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_is_rejected_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    _assert_rejected(fifo, "not a regular file")


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="needs file permissions")
def test_unreadable_file(tmp_path: Path) -> None:
    path = _save(_tiny(), tmp_path / "secret.onnx")
    path.chmod(0)
    _assert_rejected(path, "permission denied")


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\x0b\x0c", "group"),  # field 1, start group
        (b"\x0c", "group"),  # field 1, end group
        (b"\x0e", "wire type"),  # field 1, wire type 6
        (b"\x08" + b"\xff" * 11, "varint"),  # ir_version, an 11-byte varint
        (b"\x08\xff", "varint"),  # ir_version, a varint cut short
        (b"\x3a\xff\xff\xff\xff\x0f", "truncated"),  # graph with a 4 GB length
        (b"\x00\x01", "field number 0"),
        (b"\x12\x03abc", "no graph"),  # just a producer_name
        (b"\x10\x01", "wire type"),  # producer_name as a varint
        (b"\x3a\x02\x5a\x05\x08\x01", "past the end"),  # graph holding an input longer than the graph
    ],
)
def test_malformed_wire_format(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    _assert_rejected(path, reason)


def test_missing_opset_import_from_ir_3_on(tmp_path: Path) -> None:
    model = _tiny()
    del model.opset_import[:]
    path = _save(model, tmp_path / "noopset.onnx")
    _assert_rejected(path, "no opset_import")


def test_corrupted_bytes_never_raise_anything_else(tmp_path: Path) -> None:
    data = bytearray(_mnist_like().SerializeToString())
    rng = np.random.default_rng(1234)
    path = tmp_path / "fuzz.onnx"
    header = 400  # the interesting structure is outside the big weight payloads; bias towards it
    for _ in range(400):
        corrupt = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            where = int(rng.integers(0, header if rng.random() < 0.7 else len(data)))
            corrupt[where] = int(rng.integers(0, 256))
        path.write_bytes(bytes(corrupt))
        try:
            info = read_model_info(path)
        except ModelInfoError as e:
            assert str(e).startswith(f"{path}: not an ONNX model (")
            assert "\n" not in str(e)
        else:
            assert isinstance(info, ModelInfo)


# --- big models: the weights are never read ---------------------------------------------------------


def _big_model() -> onnx.ModelProto:
    try:
        from trt_tui.core.model import samples
    except ImportError:
        samples = None
    if samples is not None and hasattr(samples, "make_model"):
        return samples.make_model("resnet50")
    weight = numpy_helper.from_array(np.zeros((25 * 1024 * 1024,), np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [25 * 1024 * 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [25 * 1024 * 1024])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def big_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.onnx"
    path.write_bytes(_big_model().SerializeToString())
    return path


def test_big_model_weights_are_not_loaded(big_model_path: Path) -> None:
    size = big_model_path.stat().st_size
    assert size > 90 * 1024 * 1024
    read_model_info(big_model_path)  # warm the page cache and imports before measuring
    start = time.perf_counter()
    read_model_info(big_model_path)
    elapsed = time.perf_counter() - start  # reported only: no timing assertions on shared machines
    tracemalloc.start()
    try:
        info = read_model_info(big_model_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    print(
        f"\nread_model_info: {size / 1e6:.1f} MB model in {elapsed * 1000:.1f} ms, peak {peak / 1e3:.0f} kB"
    )
    assert peak < 2 * 1024 * 1024, peak  # well under 10 MB: no weight is ever read into memory
    _assert_matches_onnx(info, big_model_path)


# --- real models from the onnx package, through both ways of walking a message ----------------------


def _onnx_test_models() -> list[Path]:
    """The models the onnx package ships for its backend tests: small CNNs, sequence and string models,
    models converted from PyTorch."""
    return sorted((Path(onnx.__file__).parent / "backend" / "test" / "data").rglob("*.onnx"))


def test_real_models_match_onnx_in_both_walkers(monkeypatch) -> None:
    """Every model of the onnx package's test data reads as onnx.load sees it, whether a message is
    decoded from one block (the fast path) or field by field through the block cache (``BLOCK`` forced
    down to 16 bytes sends nearly every message there)."""
    from trt_tui.core.model import modelinfo, protobuf_wire

    paths = _onnx_test_models()
    assert len(paths) >= 100, len(paths)
    fast = {p: read_model_info(p) for p in paths}
    fast_digests = {p: modelinfo.read_model_digests(p) for p in paths}
    for path, info in fast.items():
        _assert_matches_onnx(info, path)
    monkeypatch.setattr(protobuf_wire.Source, "BLOCK", 16)
    for path in paths:
        assert read_model_info(path) == fast[path], path
        digests = modelinfo.read_model_digests(path)
        assert (digests.initializers, digests.nodes) == (fast_digests[path].initializers, fast_digests[path].nodes)
