"""The headless front end as a user at a terminal sees it (#46, item 17): `trt-tui build`'s status
line fits an 80-column terminal whole (fields left out, never a figure cut) and shows the ETA from
the history; `trt-tui watch` stopped by a signal ends with the totals line, as `build` does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from support.terminal import run_on_a_terminal

from trt_tui.cli.errors import EXIT_OK
from trt_tui.cli.options import build_options
from trt_tui.cli.parser import build_parser
from trt_tui.core.build.driver import spec_for
from trt_tui.core.history.records import History

ANY_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Every field the status line may show, each whole: a figure cut mid-way ("RSS 340.4 M") matches none.
FIELD = re.compile(r"(…?[\w./-]*resnet50\.onnx|queued|parsing|building|writing|\s*\d+%|\d+\.\ds|\d+m\d\ds|\d+h\d\dm"
                   r"|ETA (\d+\.\ds|\d+m\d\ds)|overdue \+\d+\.\ds|working|stalled|stopped|idle|CPU \d+%"
                   r"|RSS \d+(\.\d)? (B|KiB|MiB|GiB))")


def cli_options(model: Path) -> dict:
    """The options `trt-tui build MODEL` builds with, as the history stores them."""
    args = build_parser()[0].parse_args(["build", str(model)])
    return spec_for(model, build_options(args)).summary().options


def test_the_status_line_fits_80_columns_whole_and_shows_the_eta(cli_env, trt_tui_command, sample_dir,
                                                                   tmp_path) -> None:
    model, history = sample_dir / "resnet50.onnx", tmp_path / "history.sqlite3"
    with History(history) as h:  # an earlier build of the same model and options: 10 minutes
        h.record(model=model.resolve(), model_hash=None, options=cli_options(model), backend="tensorrt-rtx",
                 backend_version="", state="succeeded", error=None, started=time.time(), duration=600.0,
                 engine_bytes=1, phases={})
    code, output = run_on_a_terminal([*trt_tui_command, "build", model, "-o", tmp_path / "r.engine",
                                      "--history", history], cli_env, 80, 24)
    assert code == EXIT_OK, output
    lines = re.split(r"\r?\n", ANY_ESCAPE.sub("", output))
    status = [line for line in lines if "resnet50.onnx · " in line and not line.startswith("[")]
    assert status, output
    assert all(len(line) < 80 for line in status), [line for line in status if len(line) >= 80]
    cut = [line for line in status if not all(FIELD.fullmatch(field) for field in line.split(" · "))]
    assert not cut, cut
    started = [line for line in status if " · queued · " not in line]  # a queued build's wait is not known
    assert started and all(" · ETA " in line for line in started), status


def test_watch_stopped_by_a_signal_prints_the_totals(cli_env, trt_tui_command, sample_dir, tmp_path) -> None:
    (tmp_path / "mnist.onnx").hardlink_to(sample_dir / "mnist.onnx")
    for sig in (signal.SIGINT, signal.SIGTERM):
        engine = tmp_path / "mnist.engine"
        engine.unlink(missing_ok=True)
        proc = subprocess.Popen([*trt_tui_command, "watch", tmp_path, "--format", "lines",
                                 "--history", tmp_path / "history.sqlite3"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env)
        try:
            seen = []
            for line in proc.stdout:
                seen.append(line)
                if "succeeded" in line:
                    break
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
        last = out.splitlines()[-1] if out.strip() else ""
        assert re.fullmatch(r"1 built, 0 failed in \d+\.\ds", last), (sig, "".join(seen) + out, err)
        assert "Traceback" not in err
        assert os.path.exists(engine)
