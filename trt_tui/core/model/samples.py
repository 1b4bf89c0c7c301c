"""Sample ONNX models generated locally, so the app can be tried without downloading anything.

The models have the shapes of well-known networks (an MNIST classifier, ResNet-50, a deep DenseNet)
but random weights: what a TensorRT build does is decided by the graph and the weight shapes, not by
whether the weights were trained. Everything is built with ``onnx.helper`` from a fixed random
seed, so the same bytes come out on every machine and every run.

This module must stay free of UI imports: the headless CLI and the tests use it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..files import atomic

__all__ = [
    "SAMPLES",
    "SampleModel",
    "make_dynamic_model",
    "make_model",
    "make_unsupported_op_model",
    "write_samples",
]

# Opset 17 / IR version 8 is what the TensorRT and TensorRT-RTX ONNX parsers accept without complaint;
# onnx's own defaults are newer than some parser builds understand.
OPSET = 17
IR_VERSION = 8
PRODUCER = "trt-tui samples"
UNSUPPORTED_DOMAIN = "com.example.trt_tui"

Shape = Sequence[int | str]


@dataclass(frozen=True)
class SampleModel:
    """A named sample model and the function that builds it."""

    name: str
    description: str
    build: Callable[[], onnx.ModelProto]


class _GraphBuilder:
    """Accumulates nodes and random initializers for one graph.

    Tensor names equal the producing node's name, so engine layer names and error messages point
    straight at e.g. ``layer1.0.conv1``. Conv weights use LeCun scaling (std = 1/sqrt(fan_in)) and
    batch norms start as the identity, which keeps activations finite and of order one even through
    ResNet's residual adds, in case someone runs the engine and looks at the output.
    """

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def param(self, name: str, array: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def random(self, name: str, shape: tuple[int, ...], fan_in: int) -> str:
        array = self._rng.standard_normal(shape, dtype=np.float32)
        array *= np.float32(1.0 / np.sqrt(fan_in))
        return self.param(name, array)

    def node(self, op_type: str, name: str, inputs: Sequence[str], output: str | None = None, **attrs) -> str:
        out = output or name
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name, **attrs))
        return out

    def conv(
        self, name: str, x: str, cin: int, cout: int, kernel: int, stride: int = 1, bias: bool = False
    ) -> str:
        inputs = [x, self.random(f"{name}.weight", (cout, cin, kernel, kernel), cin * kernel * kernel)]
        if bias:
            inputs.append(self.param(f"{name}.bias", np.zeros(cout, dtype=np.float32)))
        pad = kernel // 2
        return self.node(
            "Conv", name, inputs, kernel_shape=[kernel, kernel], strides=[stride, stride], pads=[pad] * 4
        )

    def batch_norm(self, name: str, x: str, channels: int) -> str:
        params = [
            self.param(f"{name}.{suffix}", np.full(channels, value, dtype=np.float32))
            for suffix, value in (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0))
        ]
        return self.node("BatchNormalization", name, [x, *params], epsilon=1e-5)

    def relu(self, name: str, x: str) -> str:
        return self.node("Relu", name, [x])

    def conv_bn_relu(
        self, prefix: str, index: int, x: str, cin: int, cout: int, kernel: int, stride: int = 1
    ) -> str:
        """The ``convN``/``bnN``/``reluN`` triple that makes up most of ResNet."""
        x = self.conv(f"{prefix}conv{index}", x, cin, cout, kernel, stride)
        x = self.batch_norm(f"{prefix}bn{index}", x, cout)
        return self.relu(f"{prefix}relu{index}", x)

    def max_pool(self, name: str, x: str) -> str:
        return self.node("MaxPool", name, [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])

    def classifier(self, x: str, channels: int, classes: int, name: str) -> str:
        """GlobalAveragePool, Flatten and a Gemm to the graph output, as torchvision exports it."""
        x = self.node("GlobalAveragePool", "avgpool", [x])
        x = self.node("Flatten", "flatten", [x], axis=1)
        weight = self.random(f"{name}.weight", (classes, channels), channels)
        bias = self.param(f"{name}.bias", np.zeros(classes, dtype=np.float32))
        return self.node("Gemm", name, [x, weight, bias], output="output", transB=1)

    def model(
        self,
        graph_name: str,
        input_shape: Shape,
        output_shape: Shape,
        opset_imports: Sequence[onnx.OperatorSetIdProto] = (),
    ) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            graph_name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(input_shape))],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(output_shape))],
            initializer=self.initializers,
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET), *opset_imports],
            producer_name=PRODUCER,
        )
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


def _mnist() -> onnx.ModelProto:
    """Two conv/pool stages and a linear layer: small enough that a build finishes in well under a second."""
    g = _GraphBuilder(seed=1)
    x = g.relu("relu1", g.conv("conv1", "input", 1, 8, 5, bias=True))
    x = g.node("MaxPool", "pool1", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.relu("relu2", g.conv("conv2", x, 8, 16, 5, bias=True))
    x = g.node("MaxPool", "pool2", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = g.node("Flatten", "flatten", [x], axis=1)
    weight = g.random("fc.weight", (10, 16 * 7 * 7), 16 * 7 * 7)
    bias = g.param("fc.bias", np.zeros(10, dtype=np.float32))
    g.node("Gemm", "fc", [x, weight, bias], output="output", transB=1)
    return g.model("mnist", [1, 1, 28, 28], [1, 10])


def _resnet50() -> onnx.ModelProto:
    """ResNet-50 (v1.5, stride on the 3x3 conv) laid out and named like torchvision's export."""
    g = _GraphBuilder(seed=50)
    x = g.conv_bn_relu("", 1, "input", 3, 64, 7, stride=2)
    x = g.max_pool("maxpool", x)
    channels = 64
    for layer, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), 1):
        for block in range(blocks):
            prefix = f"layer{layer}.{block}."
            block_stride = stride if block == 0 else 1
            out_channels = width * 4
            y = g.conv_bn_relu(prefix, 1, x, channels, width, 1)
            y = g.conv_bn_relu(prefix, 2, y, width, width, 3, block_stride)
            y = g.batch_norm(
                f"{prefix}bn3", g.conv(f"{prefix}conv3", y, width, out_channels, 1), out_channels
            )
            if block == 0:
                shortcut = g.conv(f"{prefix}downsample.0", x, channels, out_channels, 1, block_stride)
                x = g.batch_norm(f"{prefix}downsample.1", shortcut, out_channels)
            x = g.relu(f"{prefix}relu3", g.node("Add", f"{prefix}add", [y, x]))
            channels = out_channels
    g.classifier(x, channels, 1000, "fc")
    return g.model("resnet50", [1, 3, 224, 224], [1, 1000])


def _densenet(block_config: Sequence[int], growth: int, seed: int) -> onnx.ModelProto:
    """DenseNet-BC (bottleneck 4x growth, compression 0.5) laid out and named like torchvision's export.

    Like torchvision, every dense layer concatenates all earlier feature maps of its block with a
    Concat node of its own, so a block of L layers has about L*L/2 Concat inputs in all.
    """
    bottleneck = 4 * growth
    g = _GraphBuilder(seed=seed)
    x = g.conv("features.conv0", "input", 3, 64, 7, stride=2)
    x = g.relu("features.relu0", g.batch_norm("features.norm0", x, 64))
    x = g.max_pool("features.pool0", x)
    channels = 64
    for block, layers in enumerate(block_config, 1):
        features = [x]
        for layer in range(1, layers + 1):
            prefix = f"features.denseblock{block}.denselayer{layer}."
            y = g.node("Concat", f"{prefix}cat", features, axis=1) if len(features) > 1 else features[0]
            y = g.relu(f"{prefix}relu1", g.batch_norm(f"{prefix}norm1", y, channels))
            y = g.conv(f"{prefix}conv1", y, channels, bottleneck, 1)
            y = g.relu(f"{prefix}relu2", g.batch_norm(f"{prefix}norm2", y, bottleneck))
            features.append(g.conv(f"{prefix}conv2", y, bottleneck, growth, 3))
            channels += growth
        x = g.node("Concat", f"features.denseblock{block}.cat", features, axis=1)
        if block < len(block_config):
            prefix = f"features.transition{block}."
            x = g.relu(f"{prefix}relu", g.batch_norm(f"{prefix}norm", x, channels))
            x = g.conv(f"{prefix}conv", x, channels, channels // 2, 1)
            x = g.node("AveragePool", f"{prefix}pool", [x], kernel_shape=[2, 2], strides=[2, 2])
            channels //= 2
    x = g.relu("features.relu5", g.batch_norm("features.norm5", x, channels))
    g.classifier(x, channels, 1000, "classifier")
    return g.model("densenet", [1, 3, 224, 224], [1, 1000])


# The "densenet" sample exists to give a build that takes long enough to watch and cancel. A
# random-weight DenseNet-121 (blocks 6,12,24,16, growth 32) builds too fast for that with
# TensorRT-RTX. Build time grows with the total number of Concat inputs (almost all
# of it in the "Determining refit engines" phase), while the file grows with that number times the
# growth rate squared, so the sample is a much deeper DenseNet-BC with growth 8: a long build from a
# file a sixteenth of the size the same depth at growth 32 would need.
# That phase is a single progress step, so a cancel requested through IProgressMonitor only takes
# effect when it ends, near the end of the build; stopping sooner means stopping the build's process.
DENSENET_BLOCKS = (6, 12, 224, 160)
DENSENET_GROWTH = 8
DENSENET_DEPTH = 2 * sum(DENSENET_BLOCKS) + 5  # counted like the 121 in DenseNet-121


def _slow_densenet() -> onnx.ModelProto:
    return _densenet(DENSENET_BLOCKS, DENSENET_GROWTH, seed=121)


SAMPLES: dict[str, SampleModel] = {
    sample.name: sample
    for sample in (
        SampleModel("mnist", "Tiny MNIST conv net, 1x1x28x28 -> 10; builds in well under a second", _mnist),
        SampleModel("resnet50", "ResNet-50, 1x3x224x224 -> 1000, random weights (~100 MB)", _resnet50),
        SampleModel(
            "densenet",
            f"DenseNet-{DENSENET_DEPTH} (blocks {','.join(map(str, DENSENET_BLOCKS))}, growth"
            f" {DENSENET_GROWTH}), 1x3x224x224 -> 1000, random weights; a deliberately slow build"
            " (~15 s on 2 cores) to watch and cancel",
            _slow_densenet,
        ),
    )
}


def make_model(name: str) -> onnx.ModelProto:
    """Build the sample called ``name``; raises ``ValueError`` naming the choices if it does not exist."""
    try:
        sample = SAMPLES[name]
    except KeyError:
        raise ValueError(f"unknown sample {name!r}; choose from {', '.join(SAMPLES)}") from None
    return sample.build()


def write_samples(
    directory: Path, names: Iterable[str] | None = None, *, overwrite: bool = False
) -> list[Path]:
    """Write ``<directory>/<name>.onnx`` for each sample (all by default) and return the paths.

    Existing files are kept, and not even generated (ResNet-50 takes a couple of seconds), unless
    ``overwrite`` is set. Each file is written to a temporary file in the same directory and renamed
    into place, so a file watcher or a concurrent build never sees half a model.
    """
    names = list(SAMPLES) if names is None else list(names)
    unknown = [name for name in names if name not in SAMPLES]
    if unknown:
        raise ValueError(
            f"unknown sample(s) {', '.join(map(repr, unknown))}; choose from {', '.join(SAMPLES)}"
        )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        path = directory / f"{name}.onnx"
        if overwrite or not path.exists():
            atomic.write_bytes(path, make_model(name).SerializeToString())
        paths.append(path)
    return paths


def make_unsupported_op_model() -> onnx.ModelProto:
    """A valid model whose node ``weird_node`` uses an operator no TensorRT parser or plugin knows.

    The operator lives in a custom domain: ``onnx.checker`` rejects unknown operators in the default
    domain, but accepts them elsewhere, so the model is valid ONNX and only the TensorRT parse fails.
    """
    g = _GraphBuilder(seed=0)
    x = g.relu("relu", "input")
    g.nodes.append(
        helper.make_node("FooBarOp", [x], ["output"], name="weird_node", domain=UNSUPPORTED_DOMAIN)
    )
    return g.model("unsupported_op", [1, 4], [1, 4], [helper.make_opsetid(UNSUPPORTED_DOMAIN, 1)])


def make_dynamic_model() -> onnx.ModelProto:
    """A tiny conv net with a dynamic batch dimension ``N``, which needs an optimization profile to build."""
    g = _GraphBuilder(seed=2)
    x = g.relu("relu", g.conv("conv", "input", 3, 8, 3, bias=True))
    x = g.node("GlobalAveragePool", "avgpool", [x])
    g.node("Flatten", "flatten", [x], output="output", axis=1)
    return g.model("dynamic", ["N", 3, 32, 32], ["N", 8])
