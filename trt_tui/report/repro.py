"""`--repro N`: each model built N more times, each in a process of its own, each to a temporary file
(never over the user's engine, never skipped as up to date), and the engines' SHA-256 compared.

The digests come from the builds' final events (`engine_sha256`); only where they differ are the
engines read, to say where the bytes first differ. TensorRT-RTX gives byte-identical engines for the same
model and options across processes, so a difference points at the model or the builder, not at chance.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.build.events import State
from ..core.build.tracker import BuildTracker
from ..core.files.units import plural

__all__ = ["ReproVerdict", "first_difference", "repro_outputs", "verdict"]

CHUNK = 1 << 20


def repro_outputs(model: Path, times: int, directory: Path) -> list[Path]:
    """Where the `times` builds of `model` write, in `directory` (new, the model's own): a folder each,
    as an engine's build record goes beside it."""
    stem = model.name.removesuffix(".onnx")
    outputs = []
    for i in range(1, times + 1):
        (directory / str(i)).mkdir()
        outputs.append(directory / str(i) / f"{stem}.engine")
    return outputs


def first_difference(a: Path, b: Path) -> int | None:
    """The offset of the first byte that differs (the shorter file's length where one is the other's
    start), None where the files are equal."""
    offset = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            ca, cb = fa.read(CHUNK), fb.read(CHUNK)
            if ca != cb:
                n = min(len(ca), len(cb))
                return offset + next((i for i in range(n) if ca[i] != cb[i]), n)
            if not ca:
                return None
            offset += len(ca)


@dataclass(frozen=True)
class ReproVerdict:
    model: str
    times: int
    digests: list[str]  # of the engines built, in order
    sizes: list[int]
    failed: list[str]  # why a build gave no engine
    difference: str | None  # where the first engine that differs from the first one does

    @property
    def reproducible(self) -> bool:
        return not self.failed and len(set(self.digests)) == 1 and len(self.digests) == self.times

    def line(self) -> str:
        if self.failed:
            return f"{self.model}: not compared: {'; '.join(self.failed)}"
        if self.reproducible:
            return (f"{self.model}: reproducible: {plural(self.times, 'build')} in separate processes, "
                    f"SHA-256 {self.digests[0][:16]}…, {self.sizes[0]:,} bytes")
        distinct = len(set(self.digests))
        return f"{self.model}: NOT reproducible: {distinct} different engines in {self.times} builds; {self.difference}"


def verdict(model: str, builds: list[tuple[Path, BuildTracker]]) -> ReproVerdict:
    """Compare the engines `builds` (each its output and its tracker) wrote."""
    digests, sizes, failed, paths = [], [], [], []
    for output, build in builds:
        final = build.result
        if build.state is not State.SUCCEEDED or final is None or not final.engine_sha256:
            failed.append(f"{output.name}: {build.state.value}" + (f": {build.error}" if build.error else ""))
            continue
        digests.append(final.engine_sha256)
        sizes.append(final.engine_bytes or 0)
        paths.append(output)
    difference = None
    for i in range(1, len(digests)):
        if digests[i] != digests[0]:
            offset = first_difference(paths[0], paths[i])
            difference = (f"build 1: {sizes[0]:,} bytes, SHA-256 {digests[0][:16]}…; build {i + 1}: {sizes[i]:,} bytes,"
                          f" SHA-256 {digests[i][:16]}…; first differing byte at offset {offset:,}"
                          if offset is not None else f"build {i + 1}: the files on disk are equal")
            break
    return ReproVerdict(model, len(builds), digests, sizes, failed, difference)
