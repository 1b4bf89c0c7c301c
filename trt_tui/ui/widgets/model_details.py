"""The highlighted model, read without TensorRT: what it takes, what it gives, what it is made of."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from ...core.files.units import human_bytes
from ...core.model.modelinfo import ModelInfo
from .outside_text import plain


def model_details(name: str | None, info: ModelInfo | None, error: str | None) -> Content:
    """A few lines: inputs and outputs with their shapes, then size, nodes, opset and producer."""
    if name is None:
        return Content.styled("No model highlighted", "$text-muted")
    name = plain(name)  # a file's name, and below what the model says of itself: outside text
    if error is not None:
        return Content.assemble((name, "bold"), "\n", (plain(error), "$error"))
    if info is None:
        return Content.assemble((name, "bold"), "\n", ("reading…", "$text-muted"))
    inputs = plain(", ".join(f"{t.name} {t.shape_text()}" for t in info.inputs) or "none")
    outputs = plain(", ".join(f"{t.name} {t.shape_text()}" for t in info.outputs) or "none")
    opset = info.opsets.get("", info.opsets.get("ai.onnx"))
    facts = [human_bytes(info.size), f"{info.num_nodes} nodes"]
    if opset is not None:
        facts.append(f"opset {opset}")
    if info.external_data:
        facts.append(f"{len(info.external_data)} external data file(s)")
    if info.producer:
        facts.append(plain(info.producer))
    if info.dynamic:
        facts.append("dynamic shapes")
    return Content.assemble(
        (name, "bold"), "\n",
        ("in  ", "$text-muted"), inputs, "\n",
        ("out ", "$text-muted"), outputs, "\n",
        (" · ".join(facts), "$text-muted"),
    )


class ModelDetails(Static):

    def show(self, name: str | None, info: ModelInfo | None = None, error: str | None = None) -> None:
        self.update(model_details(name, info, error))
