"""ONNX models as tests change them, and the samples' shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def edit_mnist(path: Path) -> None:
    """Change conv1.weight and add two unnamed nodes on a branch nothing reads."""
    model = onnx.load(path)
    graph = model.graph
    for i, init in enumerate(graph.initializer):
        if init.name == "conv1.weight":
            array = numpy_helper.to_array(init) * 0.5
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array.astype(np.float32), "conv1.weight"))
    graph.node.append(helper.make_node("Relu", ["conv1"], ["spare1"]))
    graph.node.append(helper.make_node("Relu", ["spare1"], ["spare2"]))
    onnx.save(model, path)


EXPECTED_SHAPES = {
    "mnist": ([1, 1, 28, 28], [1, 10]),
    "resnet50": ([1, 3, 224, 224], [1, 1000]),
    "densenet": ([1, 3, 224, 224], [1, 1000]),
}
