"""Real TensorRT-RTX builds through the scheduler: engines, concurrency, the queue, cancel and failures.

Nothing about TensorRT is mocked. The DenseNet sample is the slow one (~15 s here, almost all of it
inside one step of one phase), so it is built only where a test needs a build that is still running.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.events import BUILD_TIMEOUT, Recorder

from trt_tui.core.build.driver import BuildOptions, BuildSpec
from trt_tui.core.build.events import Finished, State
from trt_tui.core.execution.scheduler import BuildJob, Scheduler

SUCCESS_STATES = [State.QUEUED, State.PARSING, State.BUILDING, State.WRITING, State.SUCCEEDED]



def build_one(make_scheduler, model: Path, output: Path, options: BuildOptions | None = None) -> BuildJob:
    scheduler = make_scheduler()
    job = scheduler.submit(BuildSpec(model, output, options or BuildOptions()))
    assert scheduler.wait(BUILD_TIMEOUT)
    return job


def test_engine_check_rejects_bytes_that_are_not_an_engine(engine_checker, tmp_path: Path) -> None:
    """The engine check below must be able to fail, or a build writing garbage would pass unnoticed."""
    junk = tmp_path / "junk.engine"
    junk.write_bytes(b"not an engine, just some bytes".ljust(engine_checker.header_size, b"!"))
    with pytest.raises(AssertionError, match="does not recognise"):
        engine_checker.assert_real_engine(junk)
    assert not engine_checker.is_engine(b"\0" * (engine_checker.header_size - 1))


# -- successful builds -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mnist_and_resnet50(sample_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """mnist and resnet50 built side by side with max_jobs=2, as `trt-tui build` does."""
    out = tmp_path_factory.mktemp("engines")
    recorder = Recorder()
    scheduler = Scheduler(max_jobs=2)
    scheduler.subscribe(recorder)
    jobs = {name: scheduler.submit(BuildSpec(sample_dir / f"{name}.onnx", out / f"{name}.engine"))
            for name in ("mnist", "resnet50")}
    assert scheduler.wait(BUILD_TIMEOUT)
    assert scheduler.shutdown()
    return jobs, recorder, out


@pytest.mark.parametrize("name", ["mnist", "resnet50"])
def test_sample_builds_to_a_real_engine(mnist_and_resnet50, engine_checker, name: str) -> None:
    """`trt-tui build` must leave an engine TensorRT-RTX accepts, of the size it reports."""
    jobs, recorder, out = mnist_and_resnet50
    job = jobs[name]
    assert job.state is State.SUCCEEDED, job.outcome
    engine = out / f"{name}.engine"
    engine_checker.assert_real_engine(engine)
    assert job.outcome.engine_bytes == engine.stat().st_size
    assert recorder.states(job) == SUCCESS_STATES
    final = recorder.events[job.id][-1]
    assert type(final) is Finished and final.result.engine_bytes == job.outcome.engine_bytes
    assert job.outcome.backend == "tensorrt-rtx"


def test_successful_builds_leave_no_temporary_files(mnist_and_resnet50, leftover_temp_files) -> None:
    """Half-written `.x.engine.*.tmp` files would pile up next to the user's engines."""
    _, _, out = mnist_and_resnet50
    assert leftover_temp_files(out) == []
    # Each engine and the sidecar that marks it as trt-tui's own (so a later build may replace it).
    assert sorted(p.name for p in out.iterdir()) == [
        "mnist.engine", "mnist.engine.build.json", "resnet50.engine", "resnet50.engine.build.json"]


# -- cancel ----------------------------------------------------------------------------------


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["inside a regular file", "in sysfs"])
def test_unwritable_output_fails_naming_the_output(
    make_scheduler, sample_dir, tmp_path, leftover_temp_files, where: str
) -> None:
    """An engine that cannot be written must fail the build with the path, not crash or claim success.
    (Tests run as root here, so a chmod'ed directory would still be writable.)"""
    if where == "inside a regular file":
        (tmp_path / "file.txt").write_text("not a directory")
        output = tmp_path / "file.txt" / "x.engine"
    else:
        output = Path("/sys/trt-tui-test.engine")
    job = build_one(make_scheduler, sample_dir / "mnist.onnx", output)
    assert job.state is State.FAILED
    assert str(output) in job.outcome.error and "\n" not in job.outcome.error
    assert not output.exists()
    assert leftover_temp_files(tmp_path) == []


def test_unsupported_operator_names_file_node_and_operator(make_scheduler, unsupported_op_model, tmp_path) -> None:
    """The user must learn which node of which file TensorRT cannot handle, and its operator."""
    job = build_one(make_scheduler, unsupported_op_model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    error = job.outcome.error
    assert str(unsupported_op_model) in error and "'weird_node'" in error and "FooBarOp" in error, error
    assert "\n" not in error


@pytest.mark.parametrize("kind", ["truncated", "random bytes", "tensor proto"])
def test_file_that_is_not_an_onnx_model_fails_cleanly(make_scheduler, not_onnx_models, tmp_path, kind) -> None:
    """A wrong file must give one line naming it, not a traceback or a hang."""
    model = not_onnx_models[kind]
    job = build_one(make_scheduler, model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    assert job.outcome.error.startswith(f"{model}: ") and "\n" not in job.outcome.error
    assert not (tmp_path / "x.engine").exists()


def test_missing_model_fails_cleanly(make_scheduler, tmp_path) -> None:
    """A model deleted after it was picked must fail its build with a plain message."""
    job = build_one(make_scheduler, tmp_path / "gone.onnx", tmp_path / "x.engine")
    assert job.state is State.FAILED and "no such file" in job.outcome.error


def test_dynamic_model_without_shapes_says_to_give_shapes(make_scheduler, dynamic_model, tmp_path) -> None:
    """A dynamic input needs an optimization profile: the error must say which input and how."""
    job = build_one(make_scheduler, dynamic_model, tmp_path / "x.engine")
    assert job.state is State.FAILED
    assert "--shapes" in job.outcome.error and "'input'" in job.outcome.error, job.outcome.error
    assert not (tmp_path / "x.engine").exists()


def test_dynamic_model_with_shapes_builds(make_scheduler, dynamic_model, tmp_path, engine_checker) -> None:
    """Given min/opt/max shapes, a dynamic-batch model builds to a real engine."""
    shapes = {"input": ((1, 3, 32, 32), (4, 3, 32, 32), (8, 3, 32, 32))}
    job = build_one(make_scheduler, dynamic_model, tmp_path / "x.engine", BuildOptions(shapes=shapes))
    assert job.state is State.SUCCEEDED, job.outcome
    engine_checker.assert_real_engine(tmp_path / "x.engine")
