"""The sample models built with TensorRT-RTX: each builds, the broken ones fail as documented.
"""

from __future__ import annotations

import onnx
import pytest
import tensorrt_rtx as trt

from trt_tui.core.model import samples


@pytest.fixture(scope="module")
def models() -> dict[str, onnx.ModelProto]:
    """Each sample generated once: ResNet-50 and DenseNet take a second or two each."""
    return {name: samples.make_model(name) for name in samples.SAMPLES}


_LOGGER = trt.Logger(trt.Logger.WARNING)


class _Build:
    """Parses and builds a model, keeping the builder, network and parser alive together.

    TensorRT objects do not keep their parents alive; letting the builder go before the network
    crashes the process.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self.builder = trt.Builder(_LOGGER)
        self.network = self.builder.create_network(0)
        self.parser = trt.OnnxParser(self.network, _LOGGER)
        self.parsed = self.parser.parse(model.SerializeToString())
        self.config = self.builder.create_builder_config()

    def errors(self) -> list:
        return [self.parser.get_error(i) for i in range(self.parser.num_errors)]

    def serialize(self):
        assert self.parsed, [e.desc() for e in self.errors()]
        return self.builder.build_serialized_network(self.network, self.config)


@pytest.mark.parametrize("name", ["mnist", "resnet50"])
def test_sample_builds_with_tensorrt_rtx(models: dict[str, onnx.ModelProto], name: str) -> None:
    engine = _Build(models[name]).serialize()
    assert engine is not None and engine.nbytes > 0


def test_unsupported_op_fails_to_parse_at_weird_node() -> None:
    build = _Build(samples.make_unsupported_op_model())
    assert not build.parsed
    assert [(e.node_name(), e.node_operator()) for e in build.errors()] == [("weird_node", "FooBarOp")]


def test_dynamic_model_builds_only_with_a_profile() -> None:
    build = _Build(samples.make_dynamic_model())
    assert tuple(build.network.get_input(0).shape) == (-1, 3, 32, 32)
    assert build.serialize() is None
    build.config = build.builder.create_builder_config()
    profile = build.builder.create_optimization_profile()
    profile.set_shape("input", (1, 3, 32, 32), (4, 3, 32, 32), (16, 3, 32, 32))
    build.config.add_optimization_profile(profile)
    engine = build.serialize()
    assert engine is not None and engine.nbytes > 0
