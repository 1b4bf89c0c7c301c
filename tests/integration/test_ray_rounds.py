"""Round after round of builds through the local Ray that `--executor ray` starts for itself.

Each build's worker is its own (`max_calls=1`) and ends as its task returns; engines of several
megabytes come back from such workers while other builds still run. Every build of every round must
succeed: one Ray (started once, as the CLI starts it) serves all the rounds, two models and then
four of different lengths each, so that builds end while others start, build and end.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import onnx
import pytest

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trt-tui[ray]'")

from trt_tui.core.build.driver import BuildSpec  # noqa: E402
from trt_tui.core.build.events import State  # noqa: E402
from trt_tui.core.execution.ray_executor import RayExecutor  # noqa: E402
from trt_tui.core.execution.scheduler import Scheduler  # noqa: E402

ROUNDS = 10
TIMEOUT = 180.0
# Models of different lengths (TensorRT-RTX on two quiet cores) and engine sizes: the samples' MNIST
# (0.1 s, 0.3 MB) and ResNet-50 (1.2 s, 100 MB), and two of the onnx package's test models (0.6 s,
# 1.9 MB; 0.8 s, 1.7 MB). An engine of many megabytes is what a worker's end used to cut off.
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
TWO = ("mnist", "resnet50")
FOUR = ("light_squeezenet", "resnet50", "mnist", "light_zfnet512")


@pytest.fixture
def models(sample_dir: Path, tmp_path: Path) -> Path:
    """The samples and the onnx package's models, in one directory."""
    directory = tmp_path / "models"
    directory.mkdir()
    for name in {*TWO, *FOUR}:
        source = LIGHT / f"{name}.onnx" if name.startswith("light_") else sample_dir / f"{name}.onnx"
        shutil.copy(source, directory)
    return directory


@pytest.fixture
def own_local_ray():
    """No Ray of this process yet: the executor starts its private local Ray the way the CLI does."""
    if ray.is_initialized():
        ray.shutdown()
    yield
    assert not ray.is_initialized(), "the executor left its local Ray running"


def test_rounds_of_two_then_four_builds_all_succeed_on_one_local_ray(own_local_ray, models, tmp_path,
                                                                     engine_checker):
    executor = RayExecutor(local_cpus=2)
    scheduler = Scheduler(max_jobs=4, executor=executor)
    ended: list[str] = []
    started = time.monotonic()
    try:
        for round_ in range(ROUNDS):
            for batch in (TWO, FOUR):
                out = tmp_path / f"round-{round_}-{len(batch)}"
                out.mkdir()
                jobs = [scheduler.submit(BuildSpec(models / f"{name}.onnx", out / f"{name}.engine"))
                        for name in batch]
                assert scheduler.wait(TIMEOUT), f"round {round_}: builds still running after {TIMEOUT:.0f}s"
                ended += [f"round {round_}, {job.spec.model.name}: {job.state.value}"
                          f" {job.outcome.error or ''}".rstrip() for job in jobs]
                failed = [line for line in ended if not line.endswith(": succeeded")]
                assert failed == [], failed
                for job in jobs:
                    engine_checker.assert_real_engine(job.spec.output)
                    assert job.state is State.SUCCEEDED
            print(f"round {round_}: {time.monotonic() - started:.1f}s", flush=True)
    finally:
        scheduler.shutdown(timeout=30)
    took = time.monotonic() - started
    print(f"{len(ended)} builds in {ROUNDS} rounds through one local Ray: {took:.1f}s")
    assert executor.started_local
    assert len(ended) == ROUNDS * (len(TWO) + len(FOUR))
