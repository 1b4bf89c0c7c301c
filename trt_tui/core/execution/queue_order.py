"""The order a batch's builds start in: the longest first.

With N builds at once, a batch ends when its last build does. Started in the order given, the longest
build may start last and run alone on one core while the others sit idle; started first, it runs
beside the short ones, which fill the other cores around it (the longest-processing-time rule, within
4/3 of the best order). How long a build takes comes from the model's last successful build in the
history; a model never built is placed by its size, scaled into seconds by the seconds per byte the
models with a history took (the median of them), or by its size alone where no model has one.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

Model = TypeVar("Model", str, Path)  # a model's path, as the caller holds it


class _Finished(Protocol):
    @property
    def duration(self) -> float: ...


class SuccessfulBuilds(Protocol):
    """The history, as far as the order asks it (`History.last_success`)."""

    def last_success(self, model: str | Path) -> _Finished | None: ...


def _size(model: str | Path) -> int:
    try:
        return os.stat(model).st_size
    except OSError:
        return 0


def longest_first(models: Sequence[Model], took: Callable[[Model], float | None]) -> list[Model]:
    """`models`, the one expected to build longest first. `took(model)`: the seconds its last
    successful build took, None where it has none. Models expected to take as long keep their order."""
    seconds = {model: took(model) for model in models}
    sizes = {model: _size(model) for model in models}
    rates = [s / sizes[m] for m, s in seconds.items() if s is not None and sizes[m] > 0]
    per_byte = statistics.median(rates) if rates else None

    def expected(model: Model) -> float:
        known = seconds[model]
        if known is not None:
            return known
        return sizes[model] * per_byte if per_byte is not None else float(sizes[model])

    return sorted(models, key=expected, reverse=True)  # sorted() is stable: ties keep their order


def longest_first_by_history(models: Sequence[Model], history: SuccessfulBuilds | None) -> list[Model]:
    """`longest_first`, each model's seconds from its last successful build in `history` (None: by
    size alone)."""
    def took(model: Model) -> float | None:
        record = history.last_success(model) if history is not None else None
        return record.duration if record is not None else None

    return longest_first(models, took)
