"""The unit lane builds nothing: a TensorRT builder or a child process made by a test here fails that
test, so a test that starts building says it belongs in tests/integration/. (Fixtures shared by every
lane stay in tests/conftest.py.)"""

from __future__ import annotations

import multiprocessing.process

import pytest


@pytest.fixture(autouse=True)
def _unit_tests_build_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a TensorRT build or a build process in the unit lane: move the test to tests/integration/")

    try:
        import tensorrt_rtx
    except ImportError:  # no TensorRT-RTX here: nothing can build
        pass
    else:
        monkeypatch.setattr(tensorrt_rtx, "Builder", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
