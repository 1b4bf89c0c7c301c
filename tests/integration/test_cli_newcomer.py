"""What a new user types in the first minutes, and what trt-tui answers: a typo, a missing path, no
terminal, an unknown theme, a misspelt option, an `-o` that cannot hold several engines, and the words
of the headless output. Each runs `python -m trt_tui` in a child, as a user or a CI script does."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from support.commands import one_line, run_command
from support.terminal import AppOnATerminal, run_on_a_terminal

EXIT_OK, EXIT_USAGE, EXIT_CANCELLED = 0, 2, 130
TIMEOUT = 60  # a refusal is immediate; the app opened by mistake (no terminal) waits for keys forever


@pytest.fixture(scope="module")
def trt_tui(cli_env, trt_tui_command):
    """`trt_tui(*args)`: run to completion with pipes for stdin, stdout and stderr (no terminal)."""

    def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return run_command(trt_tui_command, cli_env, *args, cwd=cwd, timeout=TIMEOUT)

    return run


@pytest.fixture
def mnist(sample_dir: Path, tmp_path: Path) -> Path:
    """A copy of the MNIST sample in a directory of the test's own."""
    model = tmp_path / "models" / "mnist.onnx"
    model.parent.mkdir()
    shutil.copyfile(sample_dir / "mnist.onnx", model)
    return model


# -- the app's command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("words", [["biuld", "m.onnx"], ["buld"], ["hsitory"]])
def test_a_mistyped_command_is_named_and_the_app_does_not_open(trt_tui, tmp_path, words) -> None:
    (tmp_path / "m.onnx").write_bytes(b"")  # the model named exists: only the command is wrong
    result = trt_tui(*words, cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    meant = "history" if words[0] == "hsitory" else "build"
    assert one_line(result) == f"trt-tui: unknown command {words[0]!r} (did you mean {meant}?)"


@pytest.mark.parametrize("missing", ["no/such/dir", "samples/", "history.onnx"])
def test_a_path_that_does_not_exist_is_one_line(trt_tui, tmp_path, missing) -> None:
    """Whatever command it resembles, a word with a '/' or a '.' is a path."""
    result = trt_tui(missing, cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    assert one_line(result) == f"trt-tui: {missing}: no such file or directory"


def test_a_directory_without_models_is_one_line(trt_tui, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("no models here")
    result = trt_tui(tmp_path)
    assert result.returncode == EXIT_USAGE
    assert one_line(result).startswith(f"trt-tui: no .onnx files under {tmp_path}")


def test_the_app_without_a_terminal_refuses_in_one_line(trt_tui, mnist) -> None:
    """Output to a file (as in CI): the app would draw escape codes there and wait for keys."""
    result = trt_tui(mnist.parent)
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert "needs a terminal" in line and "trt-tui build" in line
    assert not list(mnist.parent.glob("*.engine")), "nothing is built"


def test_an_unknown_theme_names_the_known_ones(trt_tui, mnist) -> None:
    result = trt_tui(mnist.parent, "--theme", "nope")
    assert result.returncode == EXIT_USAGE
    line = one_line(result)
    assert line.startswith("trt-tui: --theme nope: no such theme")
    assert "trt-dark" in line and "trt-light" in line and "textual-dark" in line


def test_serve_checks_its_theme_before_it_listens(trt_tui, mnist) -> None:
    """Each browser session's app would otherwise refuse it, one page at a time."""
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    result = trt_tui("serve", mnist.parent, "--theme", "nope", "--port", port)
    assert result.returncode == EXIT_USAGE
    assert one_line(result).startswith("trt-tui: --theme nope: no such theme")


def test_run_on_a_terminal_checks_its_theme(cli_env, trt_tui_command, tmp_path) -> None:
    app = AppOnATerminal([*trt_tui_command, "run", "--theme", "nope", "--", "python", "-c", "pass"], cli_env)
    code = app.finish()
    output = app.output.decode(errors="replace")
    assert code == EXIT_USAGE and "Traceback" not in output, output
    assert "--theme nope: no such theme" in output


def test_a_mistyped_option_says_which_was_meant(trt_tui, mnist) -> None:
    result = trt_tui("build", mnist, "--opt-levle", "3")
    assert result.returncode == EXIT_USAGE
    assert "unrecognized option --opt-levle (did you mean --opt-level?)" in one_line(result)
    assert not mnist.with_suffix(".engine").exists()


def test_o_with_several_models_must_name_a_directory(trt_tui, mnist, tmp_path) -> None:
    """`-o x.engine` with two models used to become a directory named x.engine."""
    other = mnist.with_name("digits.onnx")
    shutil.copyfile(mnist, other)
    result = trt_tui("build", mnist, other, "-o", tmp_path / "x.engine")
    assert result.returncode == EXIT_USAGE
    assert "with several models -o must be an existing directory or end with '/'" in one_line(result)
    assert not (tmp_path / "x.engine").exists()
    into = trt_tui("build", mnist, other, "-o", f"{tmp_path / 'engines'}/")
    assert into.returncode == EXIT_OK, into.stderr
    assert sorted(p.name for p in (tmp_path / "engines").glob("*.engine")) == ["digits.engine", "mnist.engine"]


# -- headless wording ------------------------------------------------------------------------------------


def test_headless_counts_steps_and_ends_with_the_totals(trt_tui, mnist) -> None:
    built = trt_tui("build", mnist)
    assert built.returncode == EXIT_OK, built.stderr
    lines = built.stdout.splitlines()
    assert not [line for line in lines if "(1 steps)" in line]
    assert any(line.endswith("(1 step)") for line in lines), lines
    assert any(line.endswith("(30 steps)") for line in lines), lines
    assert lines[-1].startswith("1 built, 0 failed in "), lines[-1]

    again = trt_tui("build", mnist, mnist.with_name("missing.onnx"))
    assert again.returncode == EXIT_USAGE
    assert again.stdout.splitlines()[-1].startswith("0 built, 1 failed, 1 skipped in "), again.stdout


def test_a_cancelled_build_says_cancelled_once(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    """SIGINT during a build: "[m] cancelled in Building engine › ...", not "cancelled: cancelled in"."""
    proc = subprocess.Popen([*trt_tui_command, "build", sample_dir / "resnet50.onnx", "-o", tmp_path / "r.engine"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if "▶ Building engine" in line:
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=TIMEOUT)
    lines += out.splitlines()
    assert proc.returncode == EXIT_CANCELLED, lines + [err]
    assert not [line for line in lines if "cancelled: cancelled" in line], lines
    assert any(line.startswith(f"[{sample_dir / 'resnet50.onnx'}] cancelled in Building engine") for line in lines), lines
    assert lines[-1].startswith("0 built, 0 failed, 1 cancelled in "), lines


def test_the_summary_on_a_terminal_names_the_slowest_leaf_phases(cli_env, trt_tui_command, mnist, trt_tui) -> None:
    """The time of "Building engine" is its phases' time: the summary names the phases that took it."""
    events = [json.loads(line) for line in trt_tui("build", mnist, "--json", "--force").stdout.splitlines()]
    starts = {e["phase"]: e for e in events if e["event"] == "phase_start"}
    parents = {starts[e["parent"]]["name"] for e in starts.values() if e["parent"] is not None}
    leaves = {e["name"] for e in starts.values()} - parents
    assert "Building engine" in parents and leaves

    code, output = run_on_a_terminal([*trt_tui_command, "build", mnist, "--force"], cli_env, 120, 40)
    assert code == EXIT_OK, output
    lines = [line.rstrip() for line in output.replace("\r", "").split("\n")]
    at = next(i for i, line in enumerate(lines) if "] succeeded: engine " in line)
    named = [line.strip().rpartition(":")[0] for line in lines[at + 1:] if line.startswith("    ")]
    assert len(named) == 3 and set(named) <= leaves, (named, leaves)
    assert any(line.startswith("1 built, 0 failed in ") for line in lines[at:]), lines[at:]


# -- the demo's directory ----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["q", "SIGTERM", "SIGHUP"])
def test_the_demo_leaves_no_directory_behind(cli_env, trt_tui_command, tmp_path, how) -> None:
    """Its samples take hundreds of megabytes: they go when the app ends, by `q` or by a signal, and a
    directory a killed demo left is removed by the next one (one of a live process is kept)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = tmp_path / f"trt-tui-demo-{gone.pid}-abcd1234"
    stale.mkdir()
    (stale / "mnist.onnx").write_bytes(b"left by a demo that was killed")
    live = tmp_path / f"trt-tui-demo-{os.getpid()}-efgh5678"  # this test's own process: alive
    live.mkdir()
    app = AppOnATerminal([*trt_tui_command, "--demo"], dict(cli_env, TMPDIR=str(tmp_path)))
    asked = False  # to end: otherwise (a failed check) it is killed
    try:
        app.wait_for("resnet50.onnx")  # the picker lists the samples
        mine = [p for p in tmp_path.glob("trt-tui-demo-*") if p not in (stale, live)]
        assert len(mine) == 1 and (mine[0] / "mnist.onnx").is_file()
        assert not stale.exists(), "the directory of a demo that is gone was kept"
        asked = True
        if how == "q":
            app.send("q")
        else:
            app.proc.send_signal(getattr(signal, how))
    finally:
        if not asked:
            app.proc.kill()
        code = app.finish()
    assert code == (0 if how == "q" else -getattr(signal, how))
    assert not mine[0].exists(), f"the demo's directory is left after {how}"
    assert live.is_dir()
