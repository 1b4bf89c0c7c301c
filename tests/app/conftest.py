"""Fixtures of the app lane: the sample models, written once per test module (a test may touch their
times, which the module's other tests can bear), and a private directory of them per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trt_tui.core.model.samples import write_samples


@pytest.fixture(scope="module")
def models_src(tmp_path_factory) -> Path:
    return Path(write_samples(tmp_path_factory.mktemp("app-samples"))[0]).parent


@pytest.fixture
def models(models_src, tmp_path) -> Path:
    """A private directory of the samples per test (hard links: no copying 200 MB), which a test may
    change by replacing a file (writing into a link would change the module's shared sample)."""
    for src in models_src.glob("*.onnx"):
        os.link(src, tmp_path / src.name)
    return tmp_path
