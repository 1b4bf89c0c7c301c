"""What trt-tui reads from a C++ program's report (`trt_tui/monitor.h` sends its events as the
protocol's JSON lines), and where it looks for what compiles the preload."""

from __future__ import annotations

import json

import pytest

from trt_tui.core.build.events import Finished, PhaseStart, Started, State, Step
from trt_tui.cpp import toolchain
from trt_tui.run.relays import _json_events


def test_json_lines_become_events_and_bad_ones_are_left_out():
    lines = [
        '{"v":1,"event":"state","job":1,"t":0.000000,"state":"building","detail":"pid 7","backend":"tensorrt-rtx 1.7.1","at":1.5}',
        '{"v":1,"event":"phase_start","job":1,"t":0.1,"phase":0,"name":"Building engine","parent":null,"num_steps":6}',
        '{"v":1,"event":"step","job":1,"t":0.2,"phase":0,"step":5}',
        '{"v":2,"event":"step","job":1,"t":0.3,"phase":0,"step":5}',  # a newer protocol: not read
        "not json",
        '{"v":1,"event":"no such event","job":1}',
        '{"v":1,"event":"step","job":true,"t":0.3,"phase":0,"step":5}',  # a job that is no build id
        '{"v":1,"event":"state","job":1,"t":0.4,"state":"cancelled","detail":"cancelled in Building engine \\u203a X"}',
    ]
    events = _json_events(lines)
    assert [type(e) for e in events] == [Started, PhaseStart, Step, Finished]
    assert events[0].backend == "tensorrt-rtx 1.7.1" and events[1].parent is None
    assert events[3].state is State.CANCELLED and events[3].detail == "cancelled in Building engine \u203a X"
    assert _json_events("not a list") == [] and _json_events([json.dumps({"v": 1})]) == []


def test_missing_headers_say_what_to_set(monkeypatch, tmp_path):
    monkeypatch.setenv(toolchain.ENV_INCLUDE, str(tmp_path))
    with pytest.raises(toolchain.ToolchainMissing, match=r"TRT_TUI_TENSORRT_INCLUDE=.* holds no NvInfer.h"):
        toolchain.tensorrt_include()
    monkeypatch.delenv(toolchain.ENV_INCLUDE)
    monkeypatch.setattr(toolchain, "SDK_INCLUDES", (str(tmp_path),))
    with pytest.raises(toolchain.ToolchainMissing, match=r"set \$TRT_TUI_TENSORRT_INCLUDE"):
        toolchain.tensorrt_include()


def test_the_headers_version_names_the_cache(tmp_path):
    (tmp_path / "NvInferVersion.h").write_text("#define TRT_MAJOR_RTX 1\n#define TRT_MINOR_RTX 6\n#define TRT_PATCH_RTX 1\n"
                                               "#define TRT_BUILD_RTX 120\n")
    assert toolchain.headers_version(tmp_path) == "tensorrt-rtx-1.6.1.120"
    (tmp_path / "NvInferVersion.h").write_text("#define NV_TENSORRT_MAJOR 10\n#define NV_TENSORRT_MINOR 13\n"
                                               "#define NV_TENSORRT_PATCH 0\n#define NV_TENSORRT_BUILD 35\n")
    assert toolchain.headers_version(tmp_path) == "tensorrt-10.13.0.35"


def test_the_package_ships_the_header_and_the_cmake_package():
    assert (toolchain.INCLUDE_DIR / "trt_tui" / "monitor.h").is_file()
    assert (toolchain.CMAKE_DIR / "trt_tuiConfig.cmake").is_file() and toolchain.PRELOAD_SOURCE.is_file()
