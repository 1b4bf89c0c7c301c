"""Round after round of builds through the local Ray that `--executor ray` starts for itself.

Each build's worker is its own (`max_calls=1`) and ends as its task returns; engines of several
megabytes come back from such workers while other builds still run. Every build of every round must
succeed: one Ray (started once, as the CLI starts it) serves all the rounds, two models and then
four of different lengths each, so that builds end while others start, build and end.

Four rounds: eight 32 MB engines come back from ending workers. Before the relay (6e41fcb) such a
reply was cut off in round 1; plain Ray loses one of 15 MB in a fifth of tries and one of 100 MB in
most (BENCHMARKS.md, "Ray builds"), so at a third for 32 MB eight replies all pass about 4 times in
100. Ten rounds cost a minute on two shared cores for a chance below one in 10^3.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'trt-tui[ray]'")

from trt_tui.core.build.driver import BuildSpec  # noqa: E402
from trt_tui.core.build.events import State  # noqa: E402
from trt_tui.core.execution.ray_executor import RayExecutor  # noqa: E402
from trt_tui.core.execution.scheduler import Scheduler  # noqa: E402

ROUNDS = 4
TIMEOUT = 180.0
# Models of different lengths (TensorRT-RTX on two cores) and engine sizes: the samples' MNIST (0.1 s,
# 0.3 MB), two of the onnx package's test models (0.6 s, 1.9 MB; 0.8 s, 1.7 MB) and one wide layer whose
# 32 MB of weights make a 32 MB engine in about a second: an engine of many megabytes is what a
# worker's end used to cut off (a 15 MB one in a fifth of tries, 100 MB in most).
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
TWO = ("mnist", "wide")
FOUR = ("light_squeezenet", "wide", "mnist", "light_zfnet512")


def wide_model() -> onnx.ModelProto:
    """x[1, 2048] @ W[2048, 4096], random weights: a quick build with a large engine."""
    weights = np.random.default_rng(7).standard_normal((2048, 4096)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "wide",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2048])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4096])],
                              [numpy_helper.from_array(weights, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def models(sample_dir: Path, tmp_path: Path) -> Path:
    """The models of the rounds, in one directory."""
    directory = tmp_path / "models"
    directory.mkdir()
    shutil.copy(sample_dir / "mnist.onnx", directory)
    for name in ("light_squeezenet", "light_zfnet512"):
        shutil.copy(LIGHT / f"{name}.onnx", directory)
    onnx.save(wide_model(), directory / "wide.onnx")
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
