"""`trt_tui.observe(config)`: a user's own build script, run for real, piped and in a terminal.

Every test runs `tests/programs/api_build.py`, a script as a user writes one, in a child process with
a real TensorRT-RTX build: the display, the engine it writes (or does not), Ctrl-C, a cancel from
another thread, the caller's own monitor, the history record.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent.parent / "programs" / "api_build.py"
TIMEOUT = 120


def run_script(cli_env, *args, cwd: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    done = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                          env=cli_env, cwd=cwd, timeout=TIMEOUT, check=False)
    results = [line[len("RESULT "):] for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return done, json.loads(results[-1]) if results else None


def history_lines(cli_env, trt_tui_command, history: Path) -> list[str]:
    env = {**cli_env, "TRT_TUI_HISTORY": str(history)}
    done = subprocess.run([*trt_tui_command, "history"], capture_output=True, text=True, env=env,
                          timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_piped_script_gets_plain_lines_an_engine_and_a_history_record(
        cli_env, trt_tui_command, sample_dir, tmp_path, engine_checker) -> None:
    """Piped, the bars become one line per phase; after the build the script reads the timings, the
    log and the peak memory, its engine is real, and `trt-tui history` lists it as `api: SCRIPT`."""
    env = {**cli_env, "TRT_TUI_HISTORY": str(tmp_path / "history.sqlite3")}
    engine = tmp_path / "mnist.engine"
    done, result = run_script(env, sample_dir / "mnist.onnx", engine, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert result["state"] == "succeeded" and result["error"] is None
    engine_checker.assert_real_engine(engine)
    assert result["engine"] == engine.stat().st_size
    assert "\x1b[" not in done.stderr  # no cursor movement into a pipe
    starts = [line for line in done.stderr.splitlines() if "▶ " in line]
    assert any(line.endswith("▶ Building engine (6 steps)") for line in starts), done.stderr
    assert "[mnist] succeeded: engine " in done.stderr and "engine -" not in done.stderr  # its size is known
    assert result["phases"]["Building engine"] > 0
    shown = {line.split("▶ ", 1)[1].rsplit(" (", 1)[0] for line in starts}
    assert {path.rsplit("/", 1)[-1] for path in result["phases"]} == shown
    assert any("Engine generation completed" in line for line in result["log"]), result["log"]
    assert result["peak_rss"] > 50 << 20
    lines = history_lines(cli_env, trt_tui_command, tmp_path / "history.sqlite3")
    assert len(lines) == 2 and lines[0].split()[-1] == "SOURCE", lines
    assert lines[1].endswith("  api: api_build.py") and " succeeded " in lines[1], lines
    assert "run: " not in lines[1]  # a script's own build, not one `trt-tui run` observed
    from trt_tui.core.files.units import human_bytes

    assert f"  {human_bytes(result['engine'])}  " in lines[1], lines
    assert result["history_id"] == int(lines[1].split()[0])


def test_history_false_records_nothing(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    env = {**cli_env, "TRT_TUI_HISTORY": str(tmp_path / "history.sqlite3")}
    done, result = run_script(env, sample_dir / "mnist.onnx", tmp_path / "m.engine", "--no-history",
                              "--display", "none", cwd=tmp_path)
    assert done.returncode == 0 and result["state"] == "succeeded", done.stderr
    assert result["history_id"] is None
    assert done.stderr == ""  # display "none": nothing written
    assert not (tmp_path / "history.sqlite3").exists()  # not even opened
    assert not any("api:" in line for line in history_lines(cli_env, trt_tui_command, tmp_path / "history.sqlite3"))


def test_callers_own_monitor_is_kept_and_called_as_often(cli_env, sample_dir, tmp_path) -> None:
    """A monitor the script set before is called on every callback, as often as without trt-tui, and is
    the config's monitor again afterwards."""
    done, bare = run_script(cli_env, sample_dir / "mnist.onnx", tmp_path / "a.engine", "--own-monitor",
                            "--no-observe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done, observed = run_script(cli_env, sample_dir / "mnist.onnx", tmp_path / "b.engine", "--own-monitor",
                                "--display", "none", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert observed["own_calls"] == bare["own_calls"] > 0
    assert observed["monitor_kept"] is True
    assert observed["state"] == "succeeded"


def test_plain_call_ends_with_the_build(cli_env, sample_dir, tmp_path, engine_checker) -> None:
    """`observation = trt_tui.observe(config)` with no `with`: it ends when the build's top phase does."""
    done, result = run_script(cli_env, sample_dir / "mnist.onnx", tmp_path / "m.engine", "--plain-call",
                              "--display", "plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert result["state"] == "succeeded"
    assert done.stderr.count("[mnist] succeeded") == 1
    engine_checker.assert_real_engine(tmp_path / "m.engine")


def test_cancel_from_another_thread(cli_env, sample_dir, tmp_path, leftover_temp_files) -> None:
    """`observation.cancel()` from another thread stops the build at its next step: no engine."""
    done, result = run_script(cli_env, sample_dir / "mnist.onnx", tmp_path / "m.engine", "--cancel-from-thread",
                              "--own-monitor", "--display", "plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert result["state"] == "cancelled", result
    assert result["engine"] is None and not (tmp_path / "m.engine").exists()
    assert "[mnist] cancelled in Building engine" in done.stderr
    assert "Traceback" not in done.stderr
    # TensorRT's cancel message is no error the user must look at: they asked for it.
    assert any(line.startswith("info: ") and "BuildCanceled" in line for line in result["log"]), result["log"]


def read_pty(fd: int, proc: subprocess.Popen, deadline: float) -> bytes:
    data = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    return data


def test_in_a_terminal_the_bars_are_redrawn_in_place(cli_env, sample_dir, tmp_path, engine_checker) -> None:
    """On a terminal the script shows the live block of bars, redrawn over itself, then the summary."""
    main, child = pty.openpty()
    env = {**cli_env, "COLUMNS": "100", "LINES": "30"}
    # Its own monitor sleeps 20 ms a step: the build lasts long enough for the bars to be redrawn.
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(sample_dir / "mnist.onnx"), str(tmp_path / "m.engine"),
                             "--slow-steps", "0.02"],
                            stdin=child, stdout=child, stderr=child, env=env, cwd=tmp_path, close_fds=True)
    os.close(child)
    try:
        text = read_pty(main, proc, time.monotonic() + TIMEOUT).decode("utf-8", "replace")
        assert proc.wait(TIMEOUT) == 0, text
    finally:
        proc.kill()
        os.close(main)
    assert "\x1b[J" in text and "F\x1b[J" in text, text  # the block went back over itself
    assert "█" in text or "░" in text  # bars
    assert "mnist · building · " in text and " · working · CPU " in text  # the vitals' verdict
    assert "[mnist] succeeded" in text
    assert '"state": "succeeded"' in text
    engine_checker.assert_real_engine(tmp_path / "m.engine")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["with", "plain call"])
def test_ctrl_c_cancels_the_build_and_interrupts_after_it_returned(cli_env, sample_dir, tmp_path,
                                                                   leftover_temp_files, how) -> None:
    """SIGINT during the build (densenet: long enough to be interrupted) cancels it through
    `step_complete`; the KeyboardInterrupt reaches the script once `build_serialized_network` has
    returned (None) and its line is done (at the end of the `with`, or, for a plain call, at the
    script's next line), and no engine is written."""
    engine = tmp_path / "densenet.engine"
    plain = ["--plain-call"] if how == "plain call" else []
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(sample_dir / "densenet.onnx"), str(engine),
                             "--display", "plain", *plain], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=cli_env, cwd=tmp_path)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.rstrip().endswith("▶ Building engine (6 steps)"):
                proc.send_signal(signal.SIGINT)
        code = proc.wait(TIMEOUT)
    finally:
        proc.kill()
    output = "\n".join(lines)
    assert code == 130, output
    interrupted = [line for line in lines if line.startswith("interrupted: ")]
    assert len(interrupted) == 1, output
    if how == "with":  # at the end of the block: the build's line was done
        assert interrupted[0].startswith("interrupted: returned=True engine=None raised at: with "), output
    else:  # right as the call returned, on its line
        assert interrupted[0].endswith("raised at: engine, returned = builder.build_serialized_network("
                                       "network, config), True"), output
    assert any(line.startswith("[mnist] cancelled in Building engine") and line.endswith("(Ctrl-C)")
               for line in lines), output
    assert "Traceback" not in output
    assert not engine.exists()
    assert leftover_temp_files(tmp_path) == []


@pytest.mark.slow
def test_ctrl_c_says_so_at_once_and_a_second_stops_now(cli_env, sample_dir, tmp_path, leftover_temp_files) -> None:
    """Ctrl-C during TensorRT-RTX's long silent step (DenseNet's "Determining refit engines", ~18 s
    without a callback): the first says at once that the build stops at TensorRT's next step and how
    to stop now; the second ends the script at once, exit 130, no engine written."""
    engine = tmp_path / "densenet.engine"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(sample_dir / "densenet.onnx"), str(engine),
                             "--display", "plain", "--no-history"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=cli_env, cwd=tmp_path)
    lines: list[str] = []
    said = None
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.rstrip().endswith("▶ Determining refit engines (1 step)"):
                time.sleep(0.5)  # well inside the silent step
                first = time.monotonic()
                proc.send_signal(signal.SIGINT)
            elif "cancelling at TensorRT's next step; Ctrl-C again to stop now" in line:
                said = time.monotonic() - first
                time.sleep(0.5)
                second = time.monotonic()
                proc.send_signal(signal.SIGINT)
        code = proc.wait(TIMEOUT)
        stopped = time.monotonic() - (second if said is not None else first)
    finally:
        proc.kill()
    output = "\n".join(lines)
    assert said is not None and said < 2, output  # at once, not at TensorRT's next callback
    assert code == 130 and stopped < 3, (stopped, output)
    assert "stopped now" in lines[-1] and not any(line.startswith(("interrupted: ", "RESULT ")) for line in lines), output
    assert "Traceback" not in output
    assert not engine.exists() and leftover_temp_files(tmp_path) == []


def test_import_trt_tui_stays_cheap(cli_env) -> None:
    """`import trt_tui` imports neither TensorRT, nor the terminal UI, nor the API (only its version, a
    constant, and what follows TensorRT's parses, standard library only); `trt_tui.observe` does on
    first use (and still no UI)."""
    light = ("trt_tui.version", "trt_tui.core", "trt_tui.core.build", "trt_tui.core.build.model_source")
    code = ("import sys, trt_tui\n"
            "heavy = lambda: sorted(m for m in sys.modules if m.split('.')[0] in ('tensorrt', 'tensorrt_rtx',"
            f" 'textual') or (m.startswith('trt_tui.') and m not in {light!r}))\n"
            "print(heavy()); trt_tui.observe; print(heavy())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=cli_env,
                          timeout=TIMEOUT, check=True)
    before, after = done.stdout.splitlines()
    assert before == "[]"
    assert "'trt_tui.api.observation'" in after
    assert "textual" not in after and "tensorrt" not in after


def test_observe_refuses_what_is_no_builder_config() -> None:
    import trt_tui

    with pytest.raises(TypeError, match="expected a TensorRT IBuilderConfig, not dict"):
        trt_tui.observe({})


def test_readme_example_runs(cli_env, sample_dir, tmp_path, engine_checker) -> None:
    """The example in the README's "Your own scripts and notebooks" runs as written."""
    readme = (Path(__file__).parent.parent.parent / "README.md").read_text()
    section = readme.split("## Your own scripts and notebooks", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    (tmp_path / "build.py").write_text(example)
    done = subprocess.run([sys.executable, "build.py", str(sample_dir / "mnist.onnx"), "m.engine"],
                          capture_output=True, text=True, env=cli_env, cwd=tmp_path, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    assert "succeeded peak RSS " in done.stderr and "s  Building engine\n" in done.stderr, done.stderr
    engine_checker.assert_real_engine(tmp_path / "m.engine")


def test_a_build_that_fails_says_why(cli_env, sample_dir, dynamic_model, tmp_path) -> None:
    """A build TensorRT refuses (a dynamic input without shapes) is `failed` with TensorRT's error line,
    and the script writes nothing."""
    done, result = run_script(cli_env, dynamic_model, tmp_path / "d.engine", "--display", "plain", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert result["state"] == "failed" and result["engine"] is None, result
    assert result["error"].startswith("build failed: ") and "profile" in result["error"], result["error"]
    assert "[mnist] failed: build failed: " in done.stderr
    assert not (tmp_path / "d.engine").exists()


# -- in this process ---------------------------------------------------------------------------------


def mnist_config(sample_dir: Path):
    import tensorrt_rtx as trt

    import trt_tui

    builder = trt.Builder(trt_tui.logger(trt))
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_tui.logger(trt))
    assert parser.parse_from_file(str(sample_dir / "mnist.onnx"))
    return builder, network, builder.create_builder_config()


def test_with_block_leaves_the_config_and_sigint_as_they_were(sample_dir) -> None:
    import trt_tui

    builder, network, config = mnist_config(sample_dir)
    handler = signal.getsignal(signal.SIGINT)
    with trt_tui.observe(config, display="none", history=False) as observation:
        assert signal.getsignal(signal.SIGINT) != handler  # Ctrl-C cancels the build meanwhile
        engine = builder.build_serialized_network(network, config)
    assert engine is not None and observation.state == "succeeded"
    assert config.progress_monitor is None
    assert signal.getsignal(signal.SIGINT) is handler
    assert signal.set_wakeup_fd(-1) == -1  # trt-tui's wakeup descriptor is gone with it
    assert repr(observation).startswith("<trt_tui observation of ") and repr(observation).endswith(": succeeded>")


def test_a_sigint_handler_of_the_callers_own_is_left_alone(sample_dir) -> None:
    """A script that set its own Ctrl-C handler keeps it (and its wakeup descriptor) through the
    observation: trt-tui takes over only Python's default handler."""
    import trt_tui

    builder, network, config = mnist_config(sample_dir)
    calls = []

    def own(signum, frame) -> None:
        calls.append(signum)

    reader, writer = __import__("socket").socketpair()
    writer.setblocking(False)
    previous = signal.signal(signal.SIGINT, own)
    old_fd = signal.set_wakeup_fd(writer.fileno())
    try:
        with trt_tui.observe(config, display="none", history=False) as observation:
            assert signal.getsignal(signal.SIGINT) is own
            os.kill(os.getpid(), signal.SIGINT)
            engine = builder.build_serialized_network(network, config)
        assert calls == [signal.SIGINT] and engine is not None and observation.state == "succeeded"
        assert signal.getsignal(signal.SIGINT) is own and signal.set_wakeup_fd(writer.fileno()) == writer.fileno()
    finally:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, previous)
        reader.close()
        writer.close()


def test_cancel_from_an_asyncio_task(sample_dir) -> None:
    """The build runs in a worker thread of an event loop; another task cancels it: no engine, and the
    observation says cancelled. Observing the same config again ends the earlier observation first."""
    import asyncio

    import trt_tui

    builder, network, config = mnist_config(sample_dir)

    async def main():
        observation = await asyncio.to_thread(trt_tui.observe, config, display="none", history=False)
        async def stop() -> None:
            observation.cancel()

        await asyncio.create_task(stop())
        engine = await asyncio.to_thread(builder.build_serialized_network, network, config)
        return observation, engine

    observation, engine = asyncio.run(main())
    observation.close()
    assert engine is None
    assert observation.state == "cancelled", observation.error
    again = trt_tui.observe(config, display="none", history=False)  # a notebook cell run twice
    engine = builder.build_serialized_network(network, config)
    again.close()
    assert engine is not None and again.state == "succeeded"
    assert len(again.phases) > 1
