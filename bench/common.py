"""What every benchmark shares: statistics, the sample models, an interleaving helper, RSS readers.

Nothing here imports TensorRT or Textual at module level: `run.py` is re-imported by every child a
`spawn` multiprocessing context starts, and the benchmarks of the process executor must not pay for
imports that trt-tui's own children would not make.
"""

from __future__ import annotations

import math
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def measure_as_installed() -> str:
    """Every module this process and its children import gets bytecode, as a pip install leaves it.

    Where PYTHONDONTWRITEBYTECODE is set and a package was installed without its bytecode, Python
    compiles that package at every import, in every process. On the GPU host both hold (the variable is
    set there, and psutil and the wheels installed for trt-tui come without `__pycache__`): its
    `import psutil` took 63-77 ms and `import pynvml` 90-97 ms, against 16 and 12 ms with bytecode
    (issue #13, round 10), and a first frame of the app 1.24 s against 0.61 s. That is the host, not
    trt-tui, and it lands in whichever build first imports the module. So bytecode goes to a cache of
    the benchmarks' own (PYTHONPYCACHEPREFIX, kept if already set), for this process and, through the
    environment, its children: the warm-up round compiles, the measured rounds do not. A copy of
    trt-tui run with PYTHONDONTWRITEBYTECODE set again (`startup`'s variants without bytecode) is
    still compiled at every start, as meant."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(Path(tempfile.gettempdir()) / "trt-tui-bench-pycache")
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False
    return prefix


measure_as_installed()


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default); NaN for no values."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(values: Sequence[float]) -> dict:
    """median, p95, min, max, n of a list of samples (as JSON-able floats)."""
    xs = [float(v) for v in values]
    return {
        "median": quantile(xs, 0.5),
        "p95": quantile(xs, 0.95),
        "min": min(xs) if xs else math.nan,
        "max": max(xs) if xs else math.nan,
        "n": len(xs),
    }


def interleaved(configs: Sequence[str], reps: int, seed: int = 1) -> Iterable[tuple[int, str]]:
    """A B C, B C A, C A B, ...: every configuration once per round, the order rotated each round so
    that no configuration always runs first (warm caches) or last (after the machine heated up)."""
    order = list(configs)
    for rep in range(reps):
        k = rep % len(order)
        for name in order[k:] + order[:k]:
            yield rep, name


@dataclass
class Workdir:
    """A temporary tree for one benchmark run: the sample models, engines, the history database."""

    root: Path
    samples: Path = field(init=False)

    def __post_init__(self) -> None:
        self.samples = self.root / "samples"

    def prepare(self) -> None:
        from trt_tui.core.model.samples import write_samples

        self.samples.mkdir(parents=True, exist_ok=True)
        if not all((self.samples / f"{n}.onnx").exists() for n in ("mnist", "resnet50", "densenet")):
            write_samples(self.samples)

    def model(self, name: str) -> Path:
        return self.samples / f"{name}.onnx"

    def models_dir(self, tag: str, names: Iterable[str]) -> Path:
        """A directory holding (hard links to) these samples only, so engines land beside them there."""
        directory = self.root / tag
        directory.mkdir(parents=True, exist_ok=True)
        for name in names:
            target = directory / f"{name}.onnx"
            if not target.exists():
                try:
                    os.link(self.model(name), target)
                except OSError:
                    shutil.copyfile(self.model(name), target)
        return directory

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def rss_kib(pid: int | str = "self") -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in KiB, (0, 0) once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, 0
    rss = hwm = 0
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1])
    return rss, hwm


def children_of(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc (every task's `children` file)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for task in tasks:
        try:
            out.extend(int(x) for x in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
        except OSError:
            pass
    return out


def loadavg() -> tuple[float, float, float]:
    try:
        a, b, c = Path("/proc/loadavg").read_text().split()[:3]
        return float(a), float(b), float(c)
    except OSError:
        return (math.nan, math.nan, math.nan)


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.002) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def rng(seed: int) -> random.Random:
    return random.Random(seed)


def fmt_s(seconds: float) -> str:
    if seconds != seconds:  # NaN
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"
