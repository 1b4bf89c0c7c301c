"""`trt_tui.observe(config)` in a real notebook, run by a real Jupyter kernel (nbclient + ipykernel).

The cell's output must hold the display's final state: one HTML display, updated in place.
"""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
TIMEOUT = 180


def notebook(model: Path) -> nbformat.NotebookNode:
    setup = f"import sys\nsys.path.insert(0, {str(REPO_ROOT)!r})\n"
    setup += f"""import tensorrt_rtx as trt
import trt_tui
builder = trt.Builder(trt_tui.logger(trt))
network = builder.create_network(0)
parser = trt.OnnxParser(network, trt_tui.logger(trt))
assert parser.parse_from_file({str(model)!r})
config = builder.create_builder_config()
"""
    build = """with trt_tui.observe(config, name="mnist") as observation:
    engine = builder.build_serialized_network(network, config)
"""
    report = "print(observation.state, engine.nbytes, sorted(observation.phases)[0])"
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in (setup, build, report)])


@pytest.fixture(scope="module")
def kernel_starts() -> None:
    """Skips (saying why) where no Jupyter kernel of this Python can start."""
    from jupyter_client.manager import start_new_kernel

    try:
        manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    except Exception as exc:
        pytest.skip(f"a Jupyter kernel cannot start here: {type(exc).__name__}: {exc}")
    client.stop_channels()
    manager.shutdown_kernel(now=True)


def execute(nb, tmp_path: Path):
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def final_report(nb) -> str:
    return "".join(o.get("text", "") for o in nb.cells[2].outputs if o.output_type == "stream")


def test_the_html_display_is_updated_in_place_and_holds_the_outcome(kernel_starts, sample_dir, tmp_path) -> None:
    nb = execute(notebook(sample_dir / "mnist.onnx"), tmp_path)
    assert final_report(nb).startswith("succeeded "), nb.cells[2].outputs
    shown = [o for o in nb.cells[1].outputs if o.output_type == "display_data"]
    assert len(shown) == 1, nb.cells[1].outputs  # one display, replaced, not one per update
    html = shown[0].data["text/html"]
    assert "mnist] succeeded" in html and "peak RSS" in html and "Building engine" in html, html
    assert "<progress" not in html  # no bar left running
