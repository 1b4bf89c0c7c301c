"""The header under ThreadSanitizer and the preload under AddressSanitizer: real builds in several
threads, reported to a real `trt-tui run`, and no report from either sanitizer."""

from __future__ import annotations

import os
import subprocess
import sys

from support.commands import by_job, json_lines

TIMEOUT = 300


def run_json(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trt_tui", "run", "--json", "--", *argv], capture_output=True,
                          text=True, env=env, timeout=TIMEOUT, stdin=subprocess.DEVNULL)


def succeeded(result: subprocess.CompletedProcess) -> int:
    """How many builds the run saw succeed."""
    return sum(1 for build in by_job(json_lines(result.stdout)).values()
               if [r for r in build if r["event"] == "state"][-1]["state"] == "succeeded")


def test_the_header_under_thread_sanitizer(cpp_programs, sample_dir, tmp_path, bare_env):
    tsan = "halt_on_error=1 exitcode=66 report_signal_unsafe=0"
    env = dict(os.environ, TSAN_OPTIONS=tsan)
    args = [str(cpp_programs.header_build_tsan), str(sample_dir / "mnist.onnx"), str(tmp_path / "m.engine"),
            "--threads", "4"]
    # Reported: the sender thread talks to trt-tui and reads its cancels. Without the preload, which
    # is not instrumented (its own test is the next one): `env` starts the program without it.
    result = run_json("env", "-u", "LD_PRELOAD", *args, env=env)
    assert "ThreadSanitizer" not in result.stderr, result.stderr[-4000:]
    assert result.returncode == 0 and succeeded(result) == 4, result.stderr[-2000:]
    alone = subprocess.run(args, capture_output=True, text=True, env=dict(bare_env, TSAN_OPTIONS=tsan),
                           timeout=TIMEOUT)  # standalone: the bars' lines, nobody listening
    assert "ThreadSanitizer" not in alone.stderr, alone.stderr[-4000:]
    assert alone.returncode == 0 and alone.stdout.count("engine bytes:") == 4


def test_the_preload_under_address_sanitizer(cpp_programs, sample_dir, tmp_path):
    # `env` is the program trt-tui starts (it gets trt-tui's own preload, unused there); it starts the
    # C++ program with the sanitized preload in its place, ASan's runtime first, as ASan requires.
    preload = f"{cpp_programs.asan_runtime} {cpp_programs.preload_asan}"
    result = run_json("env", f"LD_PRELOAD={preload}", "ASAN_OPTIONS=exitcode=66:detect_leaks=1",
                      str(cpp_programs.plain_build), str(sample_dir / "mnist.onnx"), str(tmp_path / "m.engine"),
                      "--threads", "2", env=dict(os.environ))
    assert "AddressSanitizer" not in result.stderr and "LeakSanitizer" not in result.stderr, result.stderr[-4000:]
    assert result.returncode == 0 and succeeded(result) == 2, result.stderr[-2000:]
