"""Where a build is in its life: the states its events report (`events`) and its result ends in
(`payloads.BuildResult`)."""

from __future__ import annotations

import enum


class State(str, enum.Enum):
    """Where a build is in its life. The last four are final."""

    QUEUED = "queued"
    PARSING = "parsing"
    BUILDING = "building"
    WRITING = "writing"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"

    @property
    def final(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({State.SUCCEEDED, State.FAILED, State.CANCELLED, State.SKIPPED})
