"""One build per GPU for the builds that time tactics on it.

Full TensorRT times each layer's tactics on the GPU it builds for, and NVIDIA's maintainers state
that builds sharing a GPU disturb each other's timings: the engine one of them picks is then slower
than it could be. So a full-TensorRT build is given a GPU of its own, by default at most one such
build per GPU, and its build process is pinned to it (`CUDA_VISIBLE_DEVICES`); a build waiting for
one says so on its queued state ("waiting: GPU 0 busy with #3"), as the memory guard's waits do.
The pin reaches a waiting spare build process before its build (`child.serve`): it has imported
TensorRT but not started CUDA, which reads the variable when the build's Builder starts it.
TensorRT-RTX builds ahead of time without a GPU: it takes no slot and runs in parallel with
anything, limited by the scheduler's job limit and the memory guard only.

The GPUs are `--gpus 0,1` (NVML's indices, which are the PCI bus order, so the child is told
`CUDA_DEVICE_ORDER=PCI_BUS_ID` too: CUDA's own default order, fastest first, can number them
otherwise); else those this process was given in `CUDA_VISIBLE_DEVICES`, passed on as they are;
else every GPU NVML sees; else one, GPU 0 (a build with full TensorRT needs one anyway).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..build.events import Log, Severity, Waiting

if TYPE_CHECKING:
    from ..build.driver import BuildSpec
    from .job import BuildJob

VISIBLE = "CUDA_VISIBLE_DEVICES"


class GpuListError(ValueError):
    """A `--gpus` list that cannot be used; the message is the one line the user sees."""


def parse_gpus(text: str, count: int | None) -> tuple[str, ...]:
    """'0,1' → ('0', '1'): distinct indices of GPUs that exist, where `count` (NVML's) is known."""
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(not part for part in parts):
        raise GpuListError(f"{text!r} is not a list of GPU indices (try 0 or 0,1)")
    bad = next((part for part in parts if not part.isdigit()), None)
    if bad is not None:
        raise GpuListError(f"{bad!r} is not a GPU index (try 0 or 0,1)")
    indices = [int(part) for part in parts]
    twice = next((i for n, i in enumerate(indices) if i in indices[:n]), None)
    if twice is not None:
        raise GpuListError(f"GPU {twice} is given twice")
    if count is not None:
        missing = next((i for i in indices if i >= count), None)
        if missing is not None:
            have = "no GPU" if count == 0 else f"GPUs 0-{count - 1}" if count > 1 else "GPU 0 only"
            raise GpuListError(f"GPU {missing} does not exist (NVML sees {have})")
    return tuple(str(i) for i in indices)


def nvml_gpu_count() -> int | None:
    """How many GPUs NVML sees, or None where it cannot tell (no driver)."""
    from ..observe.nvml import nvml_started

    nvml = nvml_started()
    if nvml is None:
        return None
    try:
        return int(nvml.nvmlDeviceGetCount())
    except Exception:
        return None


def times_tactics_on_gpu(spec: BuildSpec) -> bool:
    """Whether the build runs with full TensorRT (which times tactics on the GPU). Answered from the
    installed files (`backend.find_backend`); a backend that is not installed fails the build on its
    own, and takes no GPU meanwhile."""
    from ..build.backend import BackendError, find_backend

    try:
        return find_backend(spec.options.backend) == "tensorrt"
    except BackendError:
        return False


class GpuSlots:
    """Which GPU each full-TensorRT build runs on; a scheduler's `gpus` (see `Scheduler`).

    `gpus`: NVML's indices of the GPUs to use (`--gpus`), one slot each; None: the default (see the
    module's docstring), worked out when a build first needs a GPU, so that a session that never
    builds with full TensorRT never starts NVML for it.
    `pins`: the executor can pin a build to its GPU (it runs the build in a process of its own);
    where it cannot (the thread executor: one process, one environment, read once by CUDA), each
    build is still given its own GPU and others wait, and its log says it is not pinned.
    `needs_gpu`: which builds take a slot (full TensorRT's)."""

    def __init__(self, gpus: Sequence[str] | None = None, *, pins: bool = True,
                 needs_gpu: Callable[[BuildSpec], bool] = times_tactics_on_gpu) -> None:
        self._gpus = tuple(gpus) if gpus else None
        self.bus_order = True  # the values are NVML's indices, not ones inherited
        self.pins = pins
        self.needs_gpu = needs_gpu
        self._given: dict[int, str] = {}  # job id -> its GPU, while it may run
        self._said: dict[int, str] = {}  # job id -> the wait reason last put on its state

    def take(self, job: BuildJob, running: list[BuildJob]) -> bool:
        """Whether `job` may start as far as GPUs go: it needs none, or one is free (then it is
        its own until it ends). If not, its queued state says which build holds which GPU."""
        if not self.needs_gpu(job.spec):
            return True
        gpus = self.gpus
        running_ids = {other.id for other in running}
        for stale in [i for i in self._given if i not in running_ids and i != job.id]:
            del self._given[stale]
        holders = {gpu: i for i, gpu in self._given.items() if i != job.id}
        free = next((gpu for gpu in gpus if gpu not in holders), None)
        if free is not None:
            self._given[job.id] = free
            self._said.pop(job.id, None)
            if not self.pins:
                job.sink(Log(job.id, 0.0, Severity.WARNING,
                             f"given GPU {free} but not pinned to it: the thread executor builds in this process,"
                             " whose CUDA sees every GPU; use --executor process to pin each build to its GPU"))
            return True
        busy = ", ".join(f"GPU {gpu} busy with #{holders[gpu]}" for gpu in gpus)
        why = f"waiting: {busy}"
        if self._said.get(job.id) != why:
            self._said[job.id] = why
            job.sink(Waiting(job.id, 0.0, why))
        return False

    @property
    def gpus(self) -> tuple[str, ...]:
        """The values a build process's `CUDA_VISIBLE_DEVICES` is set to, one slot each."""
        if self._gpus is None:
            inherited = [g.strip() for g in os.environ.get(VISIBLE, "").split(",") if g.strip()]
            if inherited:
                self._gpus, self.bus_order = tuple(inherited), False  # passed on as this process got them
            else:
                count = nvml_gpu_count()
                self._gpus = tuple(str(i) for i in range(count)) if count else ("0",)
        return self._gpus

    def give_back(self, job: BuildJob) -> None:
        """`job` will not start now after all (another check held it): its GPU is free again."""
        self._given.pop(job.id, None)

    def gpu_of(self, job: BuildJob) -> str | None:
        """The GPU `job` was given, if it needs one."""
        return self._given.get(job.id)

    def pin_env(self, job: BuildJob) -> dict[str, str]:
        """What the build process's environment gets so that CUDA there sees only its GPU."""
        gpu = self._given.get(job.id)
        if gpu is None:
            return {}
        return {VISIBLE: gpu, **({"CUDA_DEVICE_ORDER": "PCI_BUS_ID"} if self.bus_order else {})}

