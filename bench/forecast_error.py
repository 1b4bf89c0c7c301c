"""The memory forecast's error: real builds, a fresh history, each model built twice in a row.

For each model, in order: the forecast its first build got (from the models built before it: fitted
on their sizes, or unknown), the forecast its second build got (the same model's own peak), and the
peak each build measured. Then, over every model that built, the leave-one-out error of the fitted
line (each model's peak against the line fitted to all the others), which is what a new model's
first build can expect once the history holds the rest.

The models: trt-tui's samples (MNIST, ResNet-50, DenseNet) and the onnx package's backend test models
that ship with it (`onnx/backend/test/data/light/`: real architectures with their weights made by
ConstantOfShape nodes, so the file is small and the engine is not; and a few `pytorch-converted` ones).
A model TensorRT-RTX cannot build is listed with its error and left out of the figures.

    python bench/forecast_error.py [--out bench/results/forecast_error.json] [--only light]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PYTORCH_CONVERTED = ("test_Conv2d", "test_Linear", "test_BatchNorm2d_eval", "test_MaxPool2d", "test_Embedding")


def onnx_test_models(directory: Path) -> list[Path]:
    import onnx

    data = Path(onnx.__file__).parent / "backend" / "test" / "data"
    found = []
    for model in sorted((data / "light").glob("*.onnx")):
        found.append(shutil.copy(model, directory / model.name))
    for name in PYTORCH_CONVERTED:
        source = data / "pytorch-converted" / name / "model.onnx"
        if source.is_file():
            found.append(shutil.copy(source, directory / f"{name}.onnx"))
    return [Path(p) for p in found]


def sample_models(directory: Path) -> list[Path]:
    from trt_tui.core.model.samples import write_samples

    paths = {p.name: p for p in write_samples(directory)}
    return [paths[n] for n in ("mnist.onnx", "resnet50.onnx", "densenet.onnx")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("bench/results/forecast_error.json"))
    parser.add_argument("--only", choices=("samples", "onnx"), default=None)
    parser.add_argument("--match", default="", help="only the models whose name holds this")
    args = parser.parse_args()

    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import Finished
    from trt_tui.core.execution.session import make_session
    from trt_tui.core.history.forecast import fit

    work = Path(tempfile.mkdtemp(prefix="trt-tui-forecast-"))
    models = []
    if args.only != "onnx":
        models += sample_models(work)
    if args.only != "samples":
        models += onnx_test_models(work)
    models = [m for m in models if args.match in m.stem]
    session = make_session(1, "process", history=work / "history.db")
    peaks: dict[int, int | None] = {}
    errors: dict[int, str | None] = {}

    def record(job, events) -> None:
        for event in events:
            if type(event) is Finished:
                peaks[job] = event.peak_rss_bytes
                errors[job] = event.error

    session.scheduler.subscribe(record)
    rows = []
    started = time.monotonic()
    for model in models:
        row = {"model": model.stem, "model_bytes": model.stat().st_size, "builds": []}
        for _ in range(2):
            job = session.scheduler.submit(BuildSpec(model, model.with_suffix(".engine"), force=True))
            session.scheduler.wait(600)
            state = job.outcome.state.value if job.outcome else "?"
            forecast = job.forecast.as_dict() if job.forecast else None
            row["builds"].append({"state": state, "forecast": forecast, "peak_bytes": peaks.get(job.id),
                                  "error": errors.get(job.id)})
            print(f"{model.stem}: {state} forecast {forecast and forecast['text']} peak {peaks.get(job.id)}",
                  file=sys.stderr, flush=True)
            if state != "succeeded":
                break
        rows.append(row)
    session.close()

    def miss(forecast_bytes, peak) -> float | None:
        return None if not forecast_bytes or not peak else (peak - forecast_bytes) / forecast_bytes

    for row in rows:
        for build in row["builds"]:
            build["miss"] = miss((build["forecast"] or {}).get("peak_bytes"), build["peak_bytes"])
    built = [r for r in rows if r["builds"][0]["state"] == "succeeded" and r["builds"][0]["peak_bytes"]]
    points = [(r["model"], r["model_bytes"], max(b["peak_bytes"] or 0 for b in r["builds"])) for r in built]
    for name, size, peak in points:
        others = [(n, None, s, p) for n, s, p in ((n, s, p) for n, s, p in points if n != name)]
        line = fit(others)
        row = next(r for r in rows if r["model"] == name)
        row["leave_one_out"] = None if line is None else {
            "forecast_bytes": int(line[0] + line[1] * size), "miss": miss(int(line[0] + line[1] * size), peak)}

    def summary(values: list[float]) -> dict | None:
        values = [abs(v) for v in values if v is not None]
        return None if not values else {"n": len(values), "median_abs": statistics.median(values), "max_abs": max(values)}

    result = {
        "bench": "forecast_error", "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "seconds": round(time.monotonic() - started, 1), "models": rows,
        "summary": {
            "same_model": summary([r["builds"][1]["miss"] for r in built if len(r["builds"]) > 1]),
            "first_build_fitted": summary([r["builds"][0]["miss"] for r in built]),
            "leave_one_out": summary([(r.get("leave_one_out") or {}).get("miss") for r in built]),
        },
        "not_built": [{"model": r["model"], "error": r["builds"][0]["error"]} for r in rows if r not in built],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
