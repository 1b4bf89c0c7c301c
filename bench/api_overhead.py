"""What `trt_tui.observe(config)` costs a user's build, beside `overhead.py`'s figures for the CLI.

Configurations, each the same user script in this process (parse the ONNX, build; the engine is not
written: the script's own business, the same in every configuration):

- `none`: plain tensorrt_rtx, no monitor.
- `observe_plain`: the same build inside `with trt_tui.observe(config, display="plain",
  out=devnull)`: trt-tui's monitor, vitals, a scheduler's pump and the plain renderer, history off.
- `observe_history`: the same with the history on (a private SQLite file), as a user gets it.
- `observe_none`: `display="none"`, history off: the monitor, vitals and the pump alone.

Timed from just before `observe()` (or the build) to the end of the `with` block, where the
observation has delivered its last events. Runs are interleaved after one untimed warm-up of each;
medians and each median's ratio to `none`'s are printed as JSON.

    python bench/api_overhead.py [REPS] [MODEL.onnx]    # default 7 rounds of the MNIST sample
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from common import Workdir, interleaved, summary

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CONFIGS = ("none", "observe_plain", "observe_history", "observe_none")


def timed_build(trt, model: Path, config_name: str, devnull, history: Path) -> float:
    import trt_tui

    logger = trt_tui.logger(trt)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(model)):
        raise RuntimeError(f"{model}: parse failed")
    config = builder.create_builder_config()
    start = time.perf_counter()
    if config_name == "none":
        engine = builder.build_serialized_network(network, config)
    else:
        display = "none" if config_name == "observe_none" else "plain"
        record = history if config_name == "observe_history" else False
        with trt_tui.observe(config, display=display, out=devnull, history=record):
            engine = builder.build_serialized_network(network, config)
    elapsed = time.perf_counter() - start
    if engine is None:
        raise RuntimeError(f"{model}: build failed")
    return elapsed


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    import tensorrt_rtx as trt

    with tempfile.TemporaryDirectory(prefix="trt-tui-api-bench-") as root:
        work = Workdir(Path(root))
        if len(sys.argv) > 2:
            model = Path(sys.argv[2])
        else:
            work.prepare()
            model = work.model("mnist")
        history = Path(root) / "history.sqlite3"
        times: dict[str, list[float]] = {name: [] for name in CONFIGS}
        with open(os.devnull, "w") as devnull:
            for name in CONFIGS:  # warm-up, untimed
                timed_build(trt, model, name, devnull, history)
            for _, name in interleaved(CONFIGS, reps):
                times[name].append(timed_build(trt, model, name, devnull, history))
    stats = {name: summary(values) for name, values in times.items()}
    base = stats["none"]["median"]
    print(json.dumps({"model": model.name, "reps": reps, "stats": stats,
                      "ratio_to_none": {name: s["median"] / base for name, s in stats.items()}}, indent=1))


if __name__ == "__main__":
    main()
