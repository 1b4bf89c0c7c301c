"""Fixtures of the app lane: the sample models, copied once per test module (a test may touch their
times, which the module's other tests can bear), and a private directory of them per test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def models_src(sample_dir, tmp_path_factory) -> Path:
    """The session's samples, copied for this module: copies, not links, so that a time a test touches
    stays in its module. Copying takes ~0.1 s; writing them again took each module ~2 s."""
    directory = tmp_path_factory.mktemp("app-samples")
    for src in sample_dir.glob("*.onnx"):
        shutil.copyfile(src, directory / src.name)
    return directory


@pytest.fixture
def models(models_src, tmp_path) -> Path:
    """A private directory of the samples per test (hard links: no copying 200 MB), which a test may
    change by replacing a file (writing into a link would change the module's shared sample)."""
    for src in models_src.glob("*.onnx"):
        os.link(src, tmp_path / src.name)
    return tmp_path
