"""Executors are plug-ins: `--executor` takes trt-tui's own and any an installed package declares under
the `trt_tui.executors` entry-point group, and the front ends learn what each can do from its class
(its capabilities), never from its name."""

from __future__ import annotations

import textwrap

from support.commands import json_lines, run_command

EXIT_OK, EXIT_USAGE = 0, 2

BORROWED = '''
from trt_tui.core.execution.executor import ExecutorOption
from trt_tui.core.execution.executors import ThreadExecutor


class BorrowedThread(ThreadExecutor):
    """The thread executor under another name, from another package, with an option of its own."""

    name = "borrowed-thread"
    help = "a thread, from a plug-in"
    options = (ExecutorOption("borrowed-label", "a label this executor checks", metavar="TEXT"),)

    @classmethod
    def configure(cls, given):
        label = given.get("borrowed_label")
        if label is not None and not label.isalpha():
            raise ValueError(f"--borrowed-label must be letters, not {label!r}")
        return {"label": label}
'''


def test_an_installed_executor_runs_builds(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    site = tmp_path / "site"
    info = site / "borrowed_executor-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "borrowed_executor.py").write_text(textwrap.dedent(BORROWED))
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: borrowed-executor\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trt_tui.executors]\nborrowed-thread = borrowed_executor:BorrowedThread\n")
    env = {**cli_env, "PYTHONPATH": f"{cli_env['PYTHONPATH']}:{site}"}
    result = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine",
                         "--executor", "borrowed-thread", "--json")
    assert result.returncode == EXIT_OK, result.stderr
    states = [r["state"] for r in json_lines(result.stdout) if r["event"] == "state"]
    assert states == ["queued", "parsing", "building", "writing", "succeeded"]
    # It says it has no process of its own to limit, as the thread executor it is.
    # Its own option is on the command line, checked by it: one line naming what is wrong.
    labelled = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine",
                           "--executor=borrowed-thread", "--borrowed-label", "night", "--force", "--json")
    assert labelled.returncode == EXIT_OK, labelled.stderr
    bad = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "--executor", "borrowed-thread",
                      "--borrowed-label", "night-1")
    assert bad.returncode == EXIT_USAGE
    assert [line for line in bad.stderr.splitlines() if line.strip()] == [
        "trt-tui: --borrowed-label must be letters, not 'night-1'"], bad.stderr
    # Without --executor naming it, its option is no option of trt-tui's.
    unknown = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "--borrowed-label", "night")
    assert unknown.returncode == EXIT_USAGE and "--borrowed-label" in unknown.stderr
    refused = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "--executor", "borrowed-thread",
                          "--memory-limit", "2G")
    assert refused.returncode == EXIT_USAGE
    assert "--memory-limit needs the process executor: --executor borrowed-thread" in refused.stderr


def test_an_unknown_executor_is_one_line_naming_those_there_are(cli_env, trt_tui_command, sample_dir) -> None:
    result = run_command(trt_tui_command, cli_env, "build", sample_dir / "mnist.onnx", "--executor", "ssh")
    assert result.returncode == EXIT_USAGE
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "'ssh'" in lines[0] and "thread, process, ray" in lines[0], lines
