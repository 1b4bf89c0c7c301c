"""Compiling the preload library (`preload/preload.cpp`) that observes unmodified C++ programs.

It must be compiled against the TensorRT headers the programs were compiled against (the builder's
implementation interface, `apiv::VBuilder`, is part of them): `$TRT_TUI_TENSORRT_INCLUDE`, else the
usual places of an SDK. TensorRT's headers include CUDA's runtime header: `$TRT_TUI_CUDA_INCLUDE`,
else pip's `nvidia-cuda-runtime`, `$CUDA_HOME`, `/usr/local/cuda`. The compiler is `$CXX`, else
g++, c++ or clang++. The library goes into the user's cache (`$TRT_TUI_CACHE`, else platformdirs'
cache directory), named by the headers' version and a digest of everything it was made from, so
a new SDK or a new trt-tui compiles it again and nothing else does. It appears whole or not at all.

Installing trt-tui needs no compiler: only `trt-tui run` of a program that is not Python, and
`trt-tui cpp build`, compile (once).
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.files.cache_dirs import user_cache_subdir

ENV_INCLUDE = "TRT_TUI_TENSORRT_INCLUDE"
ENV_CUDA_INCLUDE = "TRT_TUI_CUDA_INCLUDE"
ROOT = Path(__file__).resolve().parent
INCLUDE_DIR = ROOT / "include"  # trt_tui/monitor.h
CMAKE_DIR = ROOT / "cmake"  # trt_tuiConfig.cmake
PRELOAD_SOURCE = ROOT / "preload" / "preload.cpp"
SDK_INCLUDES = ("/usr/include/x86_64-linux-gnu", "/usr/include/aarch64-linux-gnu", "/usr/include",
                "/usr/local/TensorRT-RTX/include", "/usr/local/TensorRT/include", "/opt/tensorrt/include")
CUDA_INCLUDES = ("/usr/local/cuda/include", "/usr/include")
COMPILE_TIMEOUT = 300.0  # seconds: TensorRT's headers are large, a loaded two-core machine is slow
PRELOAD_NAME = "libtrt_tui_preload.so"


class ToolchainMissing(Exception):
    """No compiler, no TensorRT headers, or the compile failed: one line saying what to set."""


def tensorrt_include() -> Path:
    """The directory holding TensorRT's `NvInfer.h`."""
    named = os.environ.get(ENV_INCLUDE)
    if named:
        if not (Path(named) / "NvInfer.h").is_file():
            raise ToolchainMissing(f"${ENV_INCLUDE}={named} holds no NvInfer.h: point it at TensorRT's include directory")
        return Path(named)
    for place in SDK_INCLUDES:
        if (Path(place) / "NvInfer.h").is_file():
            return Path(place)
    raise ToolchainMissing(f"no TensorRT C++ headers found: set ${ENV_INCLUDE} to the directory holding NvInfer.h")


def cuda_include() -> Path:
    """The directory holding CUDA's `cuda_runtime_api.h` (TensorRT's headers include it)."""
    places = []
    if named := os.environ.get(ENV_CUDA_INCLUDE):
        places.append(Path(named))
    spec = importlib.util.find_spec("nvidia")  # pip's nvidia-cuda-runtime: nvidia/cu13/include (a namespace)
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        places += sorted(Path(root).glob("cu*/include"), reverse=True) + [Path(root) / "cuda_runtime" / "include"]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        if home := os.environ.get(variable):
            places.append(Path(home) / "include")
    places += [Path(p) for p in CUDA_INCLUDES]
    for place in places:
        if (place / "cuda_runtime_api.h").is_file():
            return place
    raise ToolchainMissing(f"no CUDA runtime headers (cuda_runtime_api.h), which TensorRT's headers include: set"
                           f" ${ENV_CUDA_INCLUDE}, or pip install nvidia-cuda-runtime nvidia-cuda-crt")


def compiler() -> str:
    """The C++ compiler to use: `$CXX`, else the first of g++, c++, clang++ on PATH."""
    for name in ([os.environ["CXX"]] if os.environ.get("CXX") else []) + ["g++", "c++", "clang++"]:
        path = shutil.which(name)
        if path:
            return path
    raise ToolchainMissing("no C++ compiler (g++, c++ or clang++) on PATH: install one, or set $CXX")


def headers_version(include: Path) -> str:
    """"tensorrt-rtx-1.6.1.120" or "tensorrt-10.13.0.35", from the headers' `NvInferVersion.h`."""
    try:
        text = (include / "NvInferVersion.h").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"

    def number(name: str) -> str:
        found = re.search(rf"#define\s+{name}\s+(\d+)", text)
        return found.group(1) if found else "x"

    if "TRT_MAJOR_RTX" in text:
        return "tensorrt-rtx-" + ".".join(number(f"TRT_{part}_RTX") for part in ("MAJOR", "MINOR", "PATCH", "BUILD"))
    return "tensorrt-" + ".".join(number(f"NV_TENSORRT_{part}") for part in ("MAJOR", "MINOR", "PATCH", "BUILD"))


def cache_dir() -> Path:
    folder = user_cache_subdir("cpp")
    if folder is None:  # platformdirs is one of trt-tui's dependencies: only a broken install lacks it
        raise ModuleNotFoundError("No module named 'platformdirs'", name="platformdirs")
    return folder


def compile_command(source: Path, output: Path, extra: tuple[str, ...] = ()) -> list[str]:
    """The compiler's command line for the preload (`extra`: more flags, a sanitizer's say)."""
    return [compiler(), "-std=c++17", "-O2", "-shared", "-fPIC", "-pthread", "-fvisibility=hidden",
            "-fvisibility-inlines-hidden", "-fno-gnu-unique", "-Wno-deprecated-declarations",
            f"-I{INCLUDE_DIR}", "-isystem", str(tensorrt_include()), "-isystem", str(cuda_include()),
            *extra, str(source), "-ldl", "-o", str(output)]


def preload_library(extra: tuple[str, ...] = ()) -> Path:
    """The preload library, compiled now if the cache has none for these headers (`ToolchainMissing`
    otherwise, saying why)."""
    command = compile_command(PRELOAD_SOURCE, Path("OUT"), extra)
    digest = hashlib.sha256("\0".join(command).encode())
    for header in sorted(INCLUDE_DIR.rglob("*.h")) + [PRELOAD_SOURCE]:
        digest.update(header.read_bytes())
    folder = cache_dir() / f"{headers_version(tensorrt_include())}-{digest.hexdigest()[:16]}"
    target = folder / PRELOAD_NAME
    if target.is_file():
        return target
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another trt-tui compiling the same: wait for it
            if target.is_file():
                return target
            with tempfile.TemporaryDirectory(dir=folder) as scratch:
                staged = Path(scratch) / PRELOAD_NAME
                done = subprocess.run(compile_command(PRELOAD_SOURCE, staged, extra), capture_output=True, text=True,
                                      timeout=COMPILE_TIMEOUT)
                if done.returncode != 0:
                    first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip())
                    raise ToolchainMissing(f"compiling trt-tui's preload failed: {first[:300]}")
                os.replace(staged, target)
    except OSError as exc:
        raise ToolchainMissing(f"cannot compile trt-tui's preload into {folder}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise ToolchainMissing(f"compiling trt-tui's preload took over {COMPILE_TIMEOUT:.0f} s: gave up") from None
    return target
