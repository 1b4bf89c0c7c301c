"""The header with no trt-tui listening: on a terminal, one block of nested phase bars redrawn in
place; piped, plain lines and no escape codes. The program's own output is untouched either way."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TIMEOUT = 180
README = Path(__file__).resolve().parent.parent.parent / "README.md"
REDRAW = re.compile(r"\x1b\[(\d+)F\x1b\[J")  # back to the top of the block, erase it: the redraw


def read_all(fd: int, process: subprocess.Popen) -> str:
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the terminal's other end closed: the program ended
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    return b"".join(chunks).decode("utf-8", "replace")


def test_bars_on_a_terminal_are_one_block_redrawn(cpp_programs, sample_dir, tmp_path, bare_env):
    leader, follower = pty.openpty()
    engine = tmp_path / "resnet50.engine"
    process = subprocess.Popen([str(cpp_programs.header_build), str(sample_dir / "resnet50.onnx"), str(engine),
                                "--slow", "Optimizing graph", "30"],
                               stdout=subprocess.PIPE, stderr=follower, text=True,
                               env=dict(bare_env, TERM="xterm-256color"))
    os.close(follower)
    try:
        screen = read_all(leader, process)
        out, _ = process.communicate(timeout=TIMEOUT)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, screen
    redraws = REDRAW.findall(screen)
    assert len(redraws) >= 5, screen[-2000:]  # redrawn in place, ten times a second at most
    assert "Optimizing graph" in screen and "\u2588" in screen  # a phase's bar, filling up
    assert re.search(r"\n {2}Building engine from subgraph +\x1b", screen)  # nested: indented by depth
    assert re.search(r"\n {4}Optimizing graph +\x1b", screen)
    last = screen.rsplit("\x1b[J", 1)[-1]  # after the last erase: the outcome, the block gone
    assert re.fullmatch(r"trt-tui: header_build: succeeded, engine [\d.]+ MB after [\d.]+ s\r?\n", last), repr(last)
    assert f"engine bytes: {engine.stat().st_size}" in out  # its stdout is its own


def test_bars_when_piped_are_plain_lines(cpp_programs, sample_dir, tmp_path, bare_env):
    engine = tmp_path / "mnist.engine"
    done = subprocess.run([str(cpp_programs.header_build), str(sample_dir / "mnist.onnx"), str(engine)],
                          capture_output=True, text=True, env=bare_env, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr and "\x1b" not in done.stdout
    lines = done.stderr.splitlines()
    assert lines[0] == "trt-tui: Building engine (6 steps)"
    assert "trt-tui:     Optimizing graph (30 steps)" in lines  # nested: indented by depth
    assert re.fullmatch(r"trt-tui: header_build: succeeded, engine [\d.]+ MB after [\d.]+ s", lines[-1])
    assert all(line.startswith("trt-tui: ") for line in lines)


def test_the_readme_example_builds_and_says_how_it_ended(cpp_programs, sample_dir, tmp_path, bare_env):
    engine = tmp_path / "mnist.engine"
    done = subprocess.run([str(cpp_programs.readme_example), str(sample_dir / "mnist.onnx"), str(engine)],
                          capture_output=True, text=True, env=bare_env, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{engine}: {engine.stat().st_size} bytes\n"
    assert re.fullmatch(rf"trt-tui: {re.escape(str(sample_dir / 'mnist.onnx'))}: succeeded, engine [\d.]+ MB after"
                        r" [\d.]+ s", done.stderr.splitlines()[-1])


@pytest.mark.skipif(shutil.which("cmake") is None, reason="no cmake on PATH")
def test_the_readme_cmake_project_finds_trt_tui_and_builds(cpp_programs, sample_dir, tmp_path, bare_env):
    """The README's CMakeLists.txt as printed, with `trt-tui cpp --cmakedir`: configured, built and run."""
    import tensorrt_rtx_libs

    from trt_tui.cpp import toolchain

    readme = README.read_text(encoding="utf-8").split("\n## C++ programs\n", 1)[1]
    (tmp_path / "CMakeLists.txt").write_text(readme.split("```cmake\n", 1)[1].split("\n```", 1)[0] + "\n")
    (tmp_path / "build_engine.cpp").write_text(readme.split("```cpp\n", 1)[1].split("\n```", 1)[0] + "\n")
    libs = Path(tensorrt_rtx_libs.__file__).parent
    linkable = tmp_path / "lib"  # pip ships only the versioned names; a linker looks for libNAME.so
    linkable.mkdir()
    for name in ("libtensorrt_rtx", "libtensorrt_onnxparser_rtx"):
        (linkable / f"{name}.so").symlink_to(libs / f"{name}.so.1")
    cmake_dir = subprocess.run([sys.executable, "-m", "trt_tui", "cpp", "--cmakedir"], capture_output=True, text=True,
                               check=True).stdout.strip()
    configure = subprocess.run(
        ["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build"), f"-Dtrt_tui_DIR={cmake_dir}",
         f"-DTENSORRT_INCLUDE_DIR={toolchain.tensorrt_include()}", f"-DCUDA_INCLUDE_DIR={toolchain.cuda_include()}",
         f"-DCMAKE_EXE_LINKER_FLAGS=-L{linkable} -Wl,-rpath,{libs}", "-DCMAKE_CXX_FLAGS=-Wno-deprecated-declarations"],
        capture_output=True, text=True, timeout=TIMEOUT)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    build = subprocess.run(["cmake", "--build", str(tmp_path / "build")], capture_output=True, text=True,
                           timeout=TIMEOUT)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    engine = tmp_path / "mnist.engine"
    done = subprocess.run([str(tmp_path / "build" / "build_engine"), str(sample_dir / "mnist.onnx"), str(engine)],
                          capture_output=True, text=True, env=bare_env, timeout=TIMEOUT)
    assert done.returncode == 0 and engine.stat().st_size > 0, done.stderr
