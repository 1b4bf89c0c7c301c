"""Output formats are plug-ins: `--format` (with `--json` as its alias) picks one for `build`, `watch`
and `run`, from every format trt-tui has and every one an installed package declares under the
`trt_tui.formats` entry-point group; the command never asks which one it is."""

from __future__ import annotations

import textwrap

from support.commands import json_lines, run_command

EXIT_OK, EXIT_USAGE = 0, 2


def test_format_json_and_its_alias_write_the_same_records(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    model = sample_dir / "mnist.onnx"
    runs = [run_command(trt_tui_command, cli_env, "build", model, "-o", tmp_path / f"{flag}.engine", *flag.split())
            for flag in ("--format json", "--json")]
    for result in runs:
        assert result.returncode == EXIT_OK, result.stderr
    shapes = [[(r["event"], r.get("state") or r.get("name")) for r in json_lines(result.stdout)
               if r["event"] in ("state", "phase_start")] for result in runs]
    assert shapes[0] == shapes[1]
    assert [state for event, state in shapes[0] if event == "state"] == [
        "queued", "parsing", "building", "writing", "succeeded"]
    assert all(r["v"] == 1 for r in json_lines(runs[0].stdout))


def test_format_lines_writes_lines_and_the_totals(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    model = sample_dir / "mnist.onnx"
    result = run_command(trt_tui_command, cli_env, "build", model, "-o", tmp_path / "m.engine", "--format", "lines")
    assert result.returncode == EXIT_OK, result.stderr
    assert f"[{model}] succeeded: engine " in result.stdout and "\x1b" not in result.stdout
    assert result.stdout.splitlines()[-1].startswith("1 built, 0 failed in ")


def test_an_unknown_format_is_one_line_naming_the_choices(cli_env, trt_tui_command, sample_dir) -> None:
    result = run_command(trt_tui_command, cli_env, "build", sample_dir / "mnist.onnx", "--format", "yaml")
    assert result.returncode == EXIT_USAGE
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--format" in lines[0] and "'yaml'" in lines[0] and "lines" in lines[0], lines


TALLY = '''
from trt_tui.formats.renderer import Renderer


class Tally(Renderer):
    """Counts the events; says the count at the end."""

    name = "tally"
    help = "how many events each build sent"

    def handle(self, job, events):
        build = self.build(job)
        for event in events:
            build.apply(event)

    def close(self):
        states = ", ".join(build.state.value for build in self.builds)
        self._write([f"tally: {len(self.builds)} build(s), {states}"])
'''


def test_a_package_adds_a_format_through_its_entry_point(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    """A format another package installs is taken by `--format` and used, with no change to trt-tui."""
    site = tmp_path / "site"
    (site / "tally_format-1.0.dist-info").mkdir(parents=True)
    (site / "tally_format.py").write_text(textwrap.dedent(TALLY))
    (site / "tally_format-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: tally-format\n"
                                                                    "Version: 1.0\n")
    (site / "tally_format-1.0.dist-info" / "entry_points.txt").write_text("[trt_tui.formats]\n"
                                                                            "tally = tally_format:Tally\n")
    env = {**cli_env, "PYTHONPATH": f"{cli_env['PYTHONPATH']}:{site}"}
    result = run_command(trt_tui_command, env, "build", sample_dir / "mnist.onnx", "-o", tmp_path / "m.engine",
                         "--format", "tally")
    assert result.returncode == EXIT_OK, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "tally: 1 build(s), succeeded" and lines[1].startswith("1 built, 0 failed in "), lines


def test_format_csv_is_one_row_per_build(cli_env, trt_tui_command, sample_dir, unsupported_op_model, tmp_path) -> None:
    """A CI job collecting its builds' figures reads one table from stdout: a row per build as it ends."""
    import csv

    good = sample_dir / "mnist.onnx"
    result = run_command(trt_tui_command, cli_env, "build", good, unsupported_op_model, "-o", tmp_path,
                         "--format", "csv")
    assert result.returncode == 1, result.stderr  # one failed
    rows = {row["model"]: row for row in csv.DictReader(result.stdout.splitlines())}
    assert set(rows) == {str(good), str(unsupported_op_model)}
    built, failed = rows[str(good)], rows[str(unsupported_op_model)]
    assert built["state"] == "succeeded" and int(built["engine_bytes"]) == (tmp_path / "mnist.engine").stat().st_size
    assert float(built["seconds"]) > 0 and built["backend"].startswith("tensorrt-rtx ") and built["why"]
    assert int(built["peak_rss_bytes"]) > 0 and float(built["cpu_seconds"]) > 0 and built["error"] == ""
    assert failed["state"] == "failed" and "FooBarOp" in failed["error"] and failed["engine_bytes"] == ""
