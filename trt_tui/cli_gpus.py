"""The GPU option: `--gpus 0,1`, the GPUs that full-TensorRT builds take one each (`core.gpu_slots`)."""

from __future__ import annotations

import argparse


def gpu_list(text: str) -> tuple[str, ...]:
    """An argparse type: distinct GPU indices, each of a GPU that exists where NVML can tell. Asked
    only when the option is given (NVML is then started in this process, so its build processes
    are spawned, not forked: `pool.may_fork`)."""
    from .core.gpu_slots import GpuListError, nvml_gpu_count, parse_gpus

    try:
        return parse_gpus(text, nvml_gpu_count())
    except GpuListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_gpus_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpus", type=gpu_list, default=None, metavar="LIST",
                   help="GPUs for full-TensorRT builds, one build per GPU at a time, each process pinned to"
                        " its GPU, e.g. 0,1 (default: every GPU; TensorRT-RTX builds use none)")
