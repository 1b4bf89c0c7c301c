"""The C++ programs the C++ tests run, compiled once per session with the real compiler against the
real TensorRT-RTX headers ($TRT_TUI_TENSORRT_INCLUDE; `.ci/run` points it at the shared checkout's),
linked against pip's TensorRT-RTX libraries. Without a compiler or the headers every C++ test
skips, saying which is missing.

`tests/cpp/programs/sample_build.cpp` is compiled twice: with `trt_tui/monitor.h` (the flags come
from `trt-tui cpp --includes`, as a user's build would take them) and without (a program that knows
nothing of trt-tui). The sanitizer builds are made here too, in parallel with the others, so that
the compiler's minutes are paid once (CI has two cores).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

from trt_tui.core.build import protocol
from trt_tui.cpp import toolchain

SOURCE = Path(__file__).parent / "programs" / "sample_build.cpp"
README = Path(__file__).resolve().parent.parent.parent / "README.md"


def readme_example() -> str:
    """The C++ example of the README's C++ section, exactly as printed there."""
    section = README.read_text(encoding="utf-8").split("\n## C++ programs\n", 1)[1]
    return section.split("```cpp\n", 1)[1].split("\n```", 1)[0]
COMPILE_TIMEOUT = 600


@dataclass(frozen=True)
class CppPrograms:
    header_build: Path  # sample_build.cpp with trt_tui::Monitor
    plain_build: Path  # sample_build.cpp knowing nothing of trt-tui
    header_build_tsan: Path  # the header program under ThreadSanitizer
    preload_asan: Path  # trt-tui's preload under AddressSanitizer
    asan_runtime: str  # libasan.so, which must come first in LD_PRELOAD
    preload: Path  # the preload `trt-tui run` uses (`trt-tui cpp build`)
    readme_example: Path  # the README's C++ example, as printed there


def _trt_libs() -> Path:
    import tensorrt_rtx_libs

    return Path(tensorrt_rtx_libs.__file__).parent


@pytest.fixture(scope="session")
def cpp_programs(tmp_path_factory) -> CppPrograms:
    try:
        compiler = toolchain.compiler()
        trt_include = toolchain.tensorrt_include()
        cuda_include = toolchain.cuda_include()
    except toolchain.ToolchainMissing as exc:
        pytest.skip(f"C++ tests: {exc}")
    out = tmp_path_factory.mktemp("cpp")
    flags = subprocess.run([sys.executable, "-m", "trt_tui", "cpp", "--includes"], capture_output=True, text=True,
                           check=True).stdout.split()
    libs = _trt_libs()
    common = ["-std=c++17", "-O1", "-g", "-pthread", "-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations",
              "-isystem", str(trt_include), "-isystem", str(cuda_include)]
    link = [str(libs / "libtensorrt_rtx.so.1"), str(libs / "libtensorrt_onnxparser_rtx.so.1"), f"-Wl,-rpath,{libs}",
            "-ldl"]
    names = {"header_build": ["-DWITH_TRT_TUI", *flags], "plain_build": [],
             "header_build_tsan": ["-DWITH_TRT_TUI", *flags, "-fsanitize=thread"]}
    sources = dict.fromkeys(names, SOURCE)
    (out / "build_engine.cpp").write_text(readme_example(), encoding="utf-8")
    names["readme_example"], sources["readme_example"] = list(flags), out / "build_engine.cpp"
    jobs = {name: subprocess.Popen([compiler, *common, *extra, str(sources[name]), *link, "-o", str(out / name)],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for name, extra in names.items()}
    asan = subprocess.Popen(toolchain.compile_command(toolchain.PRELOAD_SOURCE, out / "preload_asan.so",
                                                      ("-g", "-fsanitize=address", "-fno-omit-frame-pointer")),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    built = subprocess.run([sys.executable, "-m", "trt_tui", "cpp", "build"], capture_output=True, text=True,
                           timeout=COMPILE_TIMEOUT)
    for name, job in [*jobs.items(), ("preload_asan", asan)]:
        output, _ = job.communicate(timeout=COMPILE_TIMEOUT)
        assert job.returncode == 0, f"{name} did not compile:\n{output[-3000:]}"
    assert built.returncode == 0, built.stderr
    runtime = subprocess.run([compiler, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    return CppPrograms(out / "header_build", out / "plain_build", out / "header_build_tsan", out / "preload_asan.so",
                       runtime, Path(built.stdout.strip()), out / "readme_example")


@pytest.fixture(scope="session")
def schema_check():
    """Checks records against the shipped schema, made strict: a field it does not describe is an
    error here (a reader may ignore unknown fields; the schema must still name every field)."""
    schema = copy.deepcopy(protocol.load_schema())
    for definition in schema["$defs"].values():
        definition["additionalProperties"] = False
    validator = jsonschema.Draft202012Validator(schema)

    def check(records: list[dict]) -> None:
        assert records
        for record in records:
            errors = sorted(validator.iter_errors(record), key=str)
            assert not errors, f"{json.dumps(record)}: {errors[0].message}"

    return check


@pytest.fixture
def bare_env() -> dict[str, str]:
    """The environment of a program run without trt-tui: no run socket, and the test run's own
    collector place, where no app listens."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TRT_TUI_RUN_")}
