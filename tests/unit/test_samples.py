"""Tests for the locally generated sample models.

DenseNet is only generated here, not built: its build is slow on purpose and is covered elsewhere.
"""

from __future__ import annotations

import hashlib

import numpy as np
import onnx
import pytest
import tensorrt_rtx as trt
from onnx.reference import ReferenceEvaluator
from support.models import EXPECTED_SHAPES

from trt_tui.core.model import samples


def _dims(value_info: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def _io(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    return [i.name for i in model.graph.input], [o.name for o in model.graph.output]


@pytest.fixture(scope="module")
def models() -> dict[str, onnx.ModelProto]:
    """Each sample generated once: ResNet-50 and DenseNet take a second or two each."""
    return {name: samples.make_model(name) for name in samples.SAMPLES}


def test_sample_registry_is_ordered_and_described() -> None:
    assert list(samples.SAMPLES)[:3] == ["mnist", "resnet50", "densenet"]
    for name, sample in samples.SAMPLES.items():
        assert sample.name == name
        assert sample.description and "\n" not in sample.description


@pytest.mark.parametrize("name", list(EXPECTED_SHAPES))
def test_sample_is_valid_with_documented_io(models: dict[str, onnx.ModelProto], name: str) -> None:
    model = models[name]
    onnx.checker.check_model(model)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert _io(model) == (["input"], ["output"])
    input_shape, output_shape = EXPECTED_SHAPES[name]
    assert _dims(model.graph.input[0]) == input_shape
    assert _dims(model.graph.output[0]) == output_shape
    assert all(node.name for node in model.graph.node)
    assert all(np.isfinite(onnx.numpy_helper.to_array(t)).all() for t in model.graph.initializer)


def test_resnet50_has_the_resnet50_layout(models: dict[str, onnx.ModelProto]) -> None:
    nodes = {node.name: node.op_type for node in models["resnet50"].graph.node}
    blocks = {name.split(".")[0]: int(name.split(".")[1]) + 1 for name in nodes if name.startswith("layer")}
    assert blocks == {"layer1": 3, "layer2": 4, "layer3": 6, "layer4": 3}
    assert nodes["layer1.0.conv1"] == "Conv"
    assert nodes["layer1.0.bn1"] == "BatchNormalization"
    assert nodes["layer4.2.add"] == "Add"
    assert list(nodes.values())[-3:] == ["GlobalAveragePool", "Flatten", "Gemm"]
    weight_bytes = sum(t.ByteSize() for t in models["resnet50"].graph.initializer)
    assert 90e6 < weight_bytes < 110e6


def test_densenet_is_a_dense_net(models: dict[str, onnx.ModelProto]) -> None:
    nodes = {node.name: node for node in models["densenet"].graph.node}
    last_layer = samples.DENSENET_BLOCKS[0]
    concat = nodes[f"features.denseblock1.denselayer{last_layer}.cat"]
    assert concat.op_type == "Concat" and len(concat.input) == last_layer
    assert nodes["features.transition1.pool"].op_type == "AveragePool"


def test_mnist_runs_to_finite_output(models: dict[str, onnx.ModelProto]) -> None:
    """The random weights must give usable numbers, not just a buildable graph."""
    x = np.random.default_rng(0).standard_normal((1, 1, 28, 28), dtype=np.float32)
    (y,) = ReferenceEvaluator(models["mnist"]).run(None, {"input": x})
    assert y.shape == (1, 10) and np.isfinite(y).all() and y.std() > 0


def test_unknown_sample_is_rejected(tmp_path) -> None:
    with pytest.raises(ValueError, match="mnist"):
        samples.make_model("alexnet")
    with pytest.raises(ValueError, match="alexnet"):
        samples.write_samples(tmp_path, ["mnist", "alexnet"])
    assert not list(tmp_path.iterdir())


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_write_samples_is_deterministic(tmp_path) -> None:
    names = ["mnist", "resnet50"]
    first = samples.write_samples(tmp_path / "a", names)
    second = samples.write_samples(tmp_path / "b", names)
    assert [p.name for p in first] == ["mnist.onnx", "resnet50.onnx"]
    assert [_digest(p) for p in first] == [_digest(p) for p in second]
    assert onnx.load(first[0]) == samples.make_model("mnist")


def test_write_samples_skips_existing_unless_overwrite(tmp_path) -> None:
    path = tmp_path / "mnist.onnx"
    path.write_bytes(b"not a model")
    assert samples.write_samples(tmp_path, ["mnist"]) == [path]
    assert path.read_bytes() == b"not a model"
    assert samples.write_samples(tmp_path, ["mnist"], overwrite=True) == [path]
    onnx.checker.check_model(onnx.load(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mnist.onnx"], "temporary file left behind"


def test_write_samples_defaults_to_all_and_creates_the_directory(tmp_path, monkeypatch) -> None:
    """Uses stand-in builders so that this stays fast; the real ones are covered above."""
    tiny = samples.make_model("mnist")
    monkeypatch.setattr(
        samples, "SAMPLES", {n: samples.SampleModel(n, "stand-in", lambda: tiny) for n in samples.SAMPLES}
    )
    directory = tmp_path / "nested" / "samples"
    paths = samples.write_samples(directory)
    assert paths == [directory / f"{name}.onnx" for name in samples.SAMPLES]
    assert all(p.is_file() for p in paths)


def test_unsupported_op_model_is_valid_onnx() -> None:
    model = samples.make_unsupported_op_model()
    onnx.checker.check_model(model)
    weird = [node for node in model.graph.node if node.name == "weird_node"]
    assert [node.op_type for node in weird] == ["FooBarOp"]


def test_dynamic_model_has_a_dynamic_batch() -> None:
    model = samples.make_dynamic_model()
    onnx.checker.check_model(model)
    assert _io(model) == (["input"], ["output"])
    assert _dims(model.graph.input[0]) == ["N", 3, 32, 32]
    x = np.zeros((2, 3, 32, 32), dtype=np.float32)
    (y,) = ReferenceEvaluator(model).run(None, {"input": x})
    assert y.shape == (2, 8)


# One logger for every build: TensorRT keeps the first one it is given and warns about the others.
_LOGGER = trt.Logger(trt.Logger.WARNING)
