"""The phase tree of one build, rebuilt from its events.

The monitor assigns phase ids; this module only folds events into a tree, so the same code serves
the headless renderer, the app and tests, whether the events came from a thread, a child process or a
recorded trace. It is not thread-safe: each consumer owns its own tree and feeds it from one thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .events import Event, Finished, PhaseFinish, PhaseStart, State, Step


@dataclass
class Phase:
    id: int
    name: str
    parent: int | None
    num_steps: int
    started: float
    steps_done: int = 0
    finished: float | None = None
    children: list[int] = field(default_factory=list)
    unfinished: bool = False  # running at a cancel or a crash: closed by the tree, or by TensorRT at the cancel
    stopped: bool = False  # of those, the innermost: where its build stopped

    @property
    def active(self) -> bool:
        return self.finished is None

    @property
    def finished_early(self) -> bool:
        """TensorRT may finish a phase before reporting all its steps (errors, shortcuts, cancel)."""
        return self.finished is not None and self.steps_done < self.num_steps

    @property
    def fraction(self) -> float:
        if self.finished is not None:
            return 1.0
        if self.num_steps <= 0:
            return 0.0
        return min(1.0, self.steps_done / self.num_steps)

    def elapsed(self, now: float) -> float:
        return (self.finished if self.finished is not None else now) - self.started


class PhaseTree:
    """Phases by id, with parent/child links and the currently active path."""

    def __init__(self) -> None:
        self.phases: dict[int, Phase] = {}
        self.roots: list[int] = []
        self.last_t: float = 0.0

    def apply(self, event: Event) -> Phase | None:
        """Fold one event in; returns the phase it touched (None for non-phase events)."""
        if isinstance(event, Step):
            phase = self.phases.get(event.phase)
            if phase is not None:
                phase.steps_done = max(phase.steps_done, event.step + 1)
        elif isinstance(event, PhaseStart):
            phase = Phase(event.phase, event.name, event.parent, event.num_steps, event.t)
            self.phases[event.phase] = phase
            parent = self.phases.get(event.parent) if event.parent is not None else None
            if parent is None:
                self.roots.append(phase.id)
            else:
                parent.children.append(phase.id)
        elif isinstance(event, PhaseFinish):
            phase = self.phases.get(event.phase)
            if phase is not None and phase.finished is None:
                phase.finished = event.t
        else:
            phase = None
            if isinstance(event, Finished) and event.state in (State.CANCELLED, State.FAILED):
                # A killed or crashed build never finishes its phases: close them, and mark the one
                # it stopped in (the innermost: the others only enclose it).
                innermost = self.deepest_active()
                for open_phase in self.phases.values():
                    if open_phase.finished is None:
                        open_phase.finished = max(event.t, open_phase.started)
                        open_phase.unfinished = True
                        open_phase.stopped = open_phase is innermost
        self.last_t = max(self.last_t, event.t)  # the build's clock, from every kind of event
        return phase

    def extend(self, events: Iterable[Event]) -> None:
        for event in events:
            self.apply(event)

    def walk(self) -> Iterator[tuple[int, Phase]]:
        """Depth-first, in start order, with each phase's depth."""
        stack = [(0, pid) for pid in reversed(self.roots)]
        while stack:
            depth, pid = stack.pop()
            phase = self.phases[pid]
            yield depth, phase
            stack.extend((depth + 1, cid) for cid in reversed(phase.children))

    def active(self) -> list[tuple[int, Phase]]:
        return [(depth, phase) for depth, phase in self.walk() if phase.active]

    def deepest_active(self) -> Phase | None:
        """The innermost running phase: where a build is now, or where it stopped."""
        active = self.active()
        return max(active, key=lambda item: (item[0], item[1].started))[1] if active else None

    def path(self, phase: Phase) -> list[Phase]:
        chain = [phase]
        while chain[-1].parent is not None and chain[-1].parent in self.phases:
            chain.append(self.phases[chain[-1].parent])
        return chain[::-1]

    def durations(self) -> dict[str, float]:
        """Total seconds per phase path ("Building engine/Optimizing graph"), reused names summed."""
        totals: dict[str, float] = {}
        for _, phase in self.walk():
            if phase.finished is None:
                continue
            key = "/".join(p.name for p in self.path(phase))
            totals[key] = totals.get(key, 0.0) + phase.finished - phase.started
        return totals

    def overall_fraction(self) -> float:
        """Progress of the whole build: the top phase's steps, refined by its running child."""
        if not self.roots:
            return 0.0
        return self._refined(self.phases[self.roots[-1]])

    def _refined(self, phase: Phase) -> float:
        if phase.finished is not None and not phase.finished_early:
            return 1.0
        if phase.num_steps <= 0:
            return 0.0
        # A phase that TensorRT finished early (a cancel, an error) keeps the progress it had made,
        # its children's included: a cancel ends every open phase early at once, and counting only
        # a parent's own steps then took the progress back.
        # Only the newest child counts: an older one's steps are in this phase's own count.
        newest = self.phases[phase.children[-1]] if phase.children else None
        inner = self._refined(newest) if newest is not None and (newest.active or newest.finished_early) else 0.0
        return min(1.0, (phase.steps_done + inner) / phase.num_steps)


def cancelled_detail(where: Sequence[str], how: str | None = None) -> str:
    """What a cancelled build says: "cancelled in Building engine › Optimizing graph" (or just
    "cancelled" before any phase), then how it was stopped, in brackets, when it was forced."""
    text = f"cancelled in {' › '.join(where)}" if where else "cancelled"
    return f"{text} ({how})" if how else text
