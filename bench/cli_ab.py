"""`python -m trt_tui build MODEL` from this tree and from an older one, alternating, many rounds.

The smallest A/B of a change to what every `trt-tui build` pays whatever the model (imports, start,
exit): a short build (MNIST, ~30 ms in TensorRT) so that those dominate, each executor, fresh
processes. `bench/buildwall.py` does the same against a bare build with fewer rounds.

    python bench/cli_ab.py MODEL ROUNDS BEFORE_DIR [OUT.json]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from common import REPO, summary


def run(model: Path, rounds: int, before: Path, log=print) -> dict:
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"trt-tui-cli-ab-{os.getpid()}"
    work.mkdir(exist_ok=True)
    times: dict[str, list[float]] = {}
    for _ in range(rounds):
        for executor in ("thread", "process"):
            for name, code in (("after", REPO), ("before", before)):
                env = dict(os.environ, PYTHONPATH=str(code), TRT_TUI_HISTORY=str(work / "history.db"))
                t = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "trt_tui", "build", str(model), "-o",
                                       str(work / "x.engine"), "--force", "--executor", executor],
                                      capture_output=True, env=env, cwd=str(code), timeout=300)
                if done.returncode != 0:
                    raise RuntimeError(f"{executor} {name}: exit {done.returncode}: {done.stderr[-2000:]!r}")
                times.setdefault(f"{executor}_{name}", []).append(time.perf_counter() - t)
    out = {name: {**summary(v), "samples": v} for name, v in sorted(times.items())}
    for name, s in out.items():
        log(f"  {name:16s} median {s['median'] * 1e3:6.1f} ms  min {s['min'] * 1e3:6.1f} ms  n {s['n']}")
    return out


if __name__ == "__main__":
    result = run(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
    if len(sys.argv) > 4:
        Path(sys.argv[4]).write_text(json.dumps(result, indent=1) + "\n")
