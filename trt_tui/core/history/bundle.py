"""A report bundle: one `.tar.gz` with what a maintainer asks for about one recorded build.

Everything comes from the build's history record (its options, fingerprint, vitals, error), from
this host as it is now (versions, memory, the GPU through NVML where the driver is there), and from
files still where the build left them: the model (or only its hash and input shapes), the engine's
sidecar. The history keeps the build's log, its stacks and its trace's path (`kept`), within its
limit: a bundle made later holds what the app's `b` would, and `--log`, `--trace` name files in their
place; the manifest says which are missing and why.

Nothing else of the user's goes in: no environment variable is read into it, and the home directory
is written `~` in every text member, so the only path left is the model's, relative to home. The
model's files are data from whoever made the model: its external data may name `../../.ssh/id_rsa`,
an absolute path, or a link to a file elsewhere (TensorRT refuses those, and the failed build is
recorded all the same), so only regular files inside the model's own directory, reached through no
link, are copied; the manifest names every file left out and why.

A bundle is a gzip stream whose header names `GZIP_NAME`: that is how an existing file is known to
be a bundle trt-tui wrote, the only kind `-o` replaces.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import platform
import re
import shlex
import stat
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...version import __version__
from ..build import sidecar
from ..build.driver import default_output
from ..build.model_source import parsed_from_memory
from ..files import atomic
from .model_files import ModelFile, model_file
from .output_paths import OutputRefused
from .records import BuildRecord

__all__ = ["GZIP_NAME", "BundleInput", "bundle_written_by_us", "check_bundle_output", "fold_repeats",
           "rebuild_command", "write_bundle"]

GZIP_NAME = b"trt-tui-bundle.tar"  # the name in the gzip header of every bundle (see the module's doc)
_HEADER = b"\x1f\x8b\x08"  # gzip magic and deflate
_FNAME = 0x08  # gzip flag: a file name follows the fixed header
_FIXED_HEADER = 10
API_PROGRAM = "api: "  # how the record of a `trt_tui.observe` build names its program (`api.observation`)


def bundle_written_by_us(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(_FIXED_HEADER + len(GZIP_NAME) + 1)
    except OSError:
        return False
    return (head[:3] == _HEADER and bool(head[3] & _FNAME)
            and head[_FIXED_HEADER:] == GZIP_NAME + b"\0")


def check_bundle_output(path: Path, protected: list[Path]) -> None:
    """Raise `OutputRefused` (one line) where the bundle may not be written at `path`: a link, a
    directory, a missing directory, one of `protected` (the model, the history), or an existing
    file that is not a bundle of ours."""
    from ..build.driver import is_same_file

    parent = path.parent if str(path.parent) else Path(".")
    if path.is_symlink():
        raise OutputRefused(f"-o {path}: is a symbolic link; trt-tui writes bundles only to regular files")
    if path.is_dir():
        raise OutputRefused(f"-o {path}: is a directory")
    if not parent.is_dir():
        raise OutputRefused(f"-o {path}: directory {parent} does not exist")
    for other in protected:
        if is_same_file(path, other):
            raise OutputRefused(f"-o {path}: is {other}; choose another file")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise OutputRefused(f"-o {path}: exists and is not a regular file")
    if not bundle_written_by_us(path):
        raise OutputRefused(f"-o {path}: exists and is not a bundle trt-tui wrote; choose another file")


def fold_repeats(lines: list[str]) -> list[str]:
    """Runs of one repeated line as that line once, with how many times it came."""
    out: list[str] = []
    previous, count = None, 0
    for line in [*lines, None]:
        if line == previous:
            count += 1
            continue
        if previous is not None:
            out.append(previous if count == 1 else f"{previous}  [repeated {count} times]")
        previous, count = line, 1
    return out


def _size_option(size: int) -> str:
    for unit, power in (("G", 3), ("M", 2), ("K", 1)):
        if size % 1024 ** power == 0:
            return f"{size // 1024 ** power}{unit}"
    return f"{size / 1024:.6f}K"


def _shapes_text(shapes: dict, index: int) -> str:
    return ",".join(f"{name}:" + "x".join(str(d) for d in triple[index]) for name, triple in sorted(shapes.items()))


def rebuild_command(record: BuildRecord, output: str | None = None) -> list[str]:
    """`trt-tui build MODEL --force` with the options the record holds, to `output` where the history
    kept where the engine went (else its default path). `--force`: the engine built then is current,
    and without it the command would only say "up to date"."""
    from ..build.backend import CHOICES

    options = record.options
    argv = ["trt-tui", "build", record.model, "--force"]
    if output:
        argv += ["-o", output]
    if record.backend in CHOICES:
        argv += ["--backend", record.backend]
    if options.get("workspace"):
        argv += ["--workspace", _size_option(int(options["workspace"]))]
    if options.get("opt_level") is not None:
        argv += ["--opt-level", str(options["opt_level"])]
    shapes = options.get("shapes") or {}
    if shapes and all(t[0] == t[1] == t[2] for t in shapes.values()):
        argv += ["--shapes", _shapes_text(shapes, 1)]
    elif shapes:
        for index, option in enumerate(("--min-shapes", "--opt-shapes", "--max-shapes")):
            argv += [option, _shapes_text(shapes, index)]
    for cc in options.get("compute_capabilities") or ():
        argv += ["--compute-capability", str(cc)]
    return argv


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _nvml_now() -> dict:
    """Driver, CUDA and GPUs as NVML reports them now; "none" where NVML cannot start here."""
    from ..observe.nvml import nvml_started

    nvml = nvml_started()
    if nvml is None:
        return {"driver": "none", "cuda": "none", "gpus": "none"}
    found: dict = {}
    try:
        found["driver"] = _text(nvml.nvmlSystemGetDriverVersion())
        cuda = nvml.nvmlSystemGetCudaDriverVersion()
        found["cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            gpus.append({"index": index, "name": _text(nvml.nvmlDeviceGetName(handle)),
                         "memory_bytes": nvml.nvmlDeviceGetMemoryInfo(handle).total})
        found["gpus"] = gpus
    except Exception as exc:  # a driver/library mismatch, a GPU lost: say so, the rest still helps
        found["nvml_error"] = str(exc)
    return {"driver": "none", "cuda": "none", "gpus": "none", **found}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class BundleInput:
    record: BuildRecord
    include_model: bool = True
    log: Path | None = None  # a saved log of the build, where the user has one
    log_lines: list[str] | None = None  # the build's log as the app holds it (in place of `log`)
    trace: Path | None = None  # a trace trt-tui wrote of the build, where the user has one
    stacks: list[str] | None = None  # the stacks taken while it ran, as the history kept them
    output: str | None = None  # where its engine was to be written, as the history kept it


class _Members:
    """The archive's members in memory until written, each with its line in the manifest."""

    def __init__(self, home: str) -> None:
        self.home = home
        # (name in the archive, its text's bytes or the file to copy, its line in the manifest)
        self.entries: list[tuple[str, bytes | ModelFile, str]] = []
        self.notes: list[str] = []

    def scrub(self, text: str) -> str:
        # The home directory itself, not a longer name it begins (/home/ann in /home/anna).
        if self.home in ("", "/"):
            return text
        return re.sub(re.escape(self.home.rstrip("/")) + r"(?=[/\\\s\"',:;)\]]|$)", "~", text)

    def shell_path(self, path: str) -> str:
        """`path` quoted for a shell, its home directory as a `~` the shell expands (a quoted one it
        would not)."""
        if self.home not in ("", "/") and path.startswith(self.home.rstrip("/") + "/"):
            return "~/" + shlex.quote(path[len(self.home.rstrip("/")) + 1:])
        return shlex.quote(path)

    def text(self, name: str, text: str, about: str) -> None:
        self.entries.append((name, self.scrub(text).encode(), about))

    def json(self, name: str, value, about: str) -> None:
        self.text(name, json.dumps(value, indent=1, sort_keys=True, default=str, ensure_ascii=False) + "\n", about)

    def file(self, name: str, found: ModelFile, about: str) -> None:
        """A file copied as it is (a model), read only as the archive is written: a model may be
        larger than the memory left."""
        self.entries.append((name, found, about))


def _model_part(members: _Members, record: BuildRecord, include: bool) -> None:
    from ..cache.engine_cache import ContentHasher
    from ..model.modelinfo import ModelInfoError, read_model_info

    model = Path(record.model)
    # `content_hash`: trt-tui's hash of the model with its external data, the one the history keys
    # builds by; `sha256`: the .onnx file's own, what a maintainer compares a copy of it with.
    facts: dict = {"path": record.model, "content_hash_at_build": record.model_hash, "bytes": record.model_bytes}
    try:
        info = read_model_info(model)
        facts["inputs"] = [{"name": t.name, "dtype": t.dtype, "shape": t.shape_text()} for t in info.inputs]
        facts["sha256"] = sidecar.file_sha256(model)
        facts["external_data"] = [str(p) for p in info.external_data]
        facts["content_hash_now"] = ContentHasher().model_hash(model, list(info.external_data))
    except (ModelInfoError, OSError) as exc:
        info = None
        members.notes.append(f"model: not read now ({exc}); model.json has what the history recorded")
    if info is not None and record.model_hash and facts["content_hash_now"] != record.model_hash:
        members.notes.append("model: changed since this build (its content hash differs from the recorded one)")
    members.json("model.json", facts, "the model: path, SHA-256, content hash (at the build and now), inputs")
    if not include:
        members.notes.append("model: left out (--no-model); model.json has its hash and input shapes")
        return
    if info is None:
        return
    directory = Path(os.path.abspath(model.parent))
    for path in (model, *info.external_data):
        what = "the model" if path == model else "the model's external data"
        found = model_file(Path(os.path.abspath(path)), directory)
        if isinstance(found, ModelFile):
            members.file(f"model/{found.name}", found, what)
        else:
            members.notes.append(f"model: {found} ({what}); a bundle takes only regular files inside the"
                                 f" model's directory ({directory}) and follows no link")


def _engine_part(members: _Members, record: BuildRecord) -> None:
    engine = default_output(Path(record.model))
    found = sidecar.read(engine)
    key_hash = ((found or {}).get("key") or {}).get("model_hash") if isinstance((found or {}).get("key"), dict) else None
    if found is None:
        members.notes.append(f"sidecar: none at {engine.name}{sidecar.SIDECAR_SUFFIX} (the engine is not "
                             "at its default path, or was removed)")
        return
    if key_hash and record.model_hash and key_hash != record.model_hash:
        members.notes.append("sidecar: the engine at the default path was built from other model bytes;"
                             " included all the same")
    members.json("sidecar.json", found, "the engine's record (engine.build.json): its cache key, size, SHA-256")


def _log_part(members: _Members, log: Path | None, lines: list[str] | None = None) -> None:
    if lines is not None:
        members.text("log.txt", "\n".join(fold_repeats(lines)) + "\n",
                     "the build's log, as trt-tui kept it, runs of one repeated line folded with a count")
        return
    if log is None:
        members.notes.append("log: not kept by the history (off, or dropped by its limit: $TRT_TUI_HISTORY_LOGS);"
                             " pass --log FILE (a saved log of this build) to add one. The record's error, if"
                             " any, is in build.json")
        return
    text = log.read_text(encoding="utf-8", errors="replace")
    members.text("log.txt", "\n".join(fold_repeats(text.splitlines())) + "\n",
                 "the build's log (--log), runs of one repeated line folded with a count")


def _trace_part(members: _Members, trace: Path | None) -> None:
    if trace is None:
        members.notes.append("trace: none recorded for this build (it was not built with --trace, or the file"
                             " is gone); pass --trace FILE to add the Perfetto/Chrome trace of this build")
        return
    members.text("trace.json", trace.read_text(encoding="utf-8", errors="replace"),
                 "the Perfetto/Chrome trace-event file trt-tui wrote (--trace)")


def _built_where(program: str) -> str:
    """Where a build observed in another program was made ("inside train.py", "by notebook through
    trt_tui.observe")."""
    if program.startswith(API_PROGRAM):
        return f"by {program[len(API_PROGRAM):]} through trt_tui.observe"
    return f"inside {program}"


def _names_no_file(record: BuildRecord) -> bool:
    """Whether the record of a build observed in another program names no ONNX file: bytes parsed from
    memory, the program's own name where trt-tui saw no file parsed ("train.py #2", "notebook"), or a
    name given to `trt_tui.observe` that is no file. (A file gone since is still named: the model part
    says it is gone.)"""
    name, observed = Path(record.model).name, record.program or ""
    program = observed.removeprefix(API_PROGRAM)
    if parsed_from_memory(record.model) or name == program or name.startswith(program + " #"):
        return True
    return observed.startswith(API_PROGRAM) and not Path(record.model).is_file()


def _no_file(model: str) -> str:
    """Why such a build has no model file to rebuild from."""
    if parsed_from_memory(model):
        return "which parsed its ONNX model from memory (no file)"
    return f"whose network trt-tui saw parsed from no ONNX file (it is named {Path(model).name})"


def assemble(given: BundleInput, home: str | None = None) -> _Members:
    record = given.record
    members = _Members(str(Path.home()) if home is None else home)
    argv = rebuild_command(record, given.output)
    command = " ".join([*argv[:2], members.shell_path(argv[2]), *map(shlex.quote, argv[3:])])
    if record.program and _names_no_file(record):
        command = f"# built {_built_where(record.program)}, {_no_file(record.model)}: no trt-tui command rebuilds it"
    elif record.program:  # observed in another program: its options are that program's, unknown here
        command = (f"# built {_built_where(record.program)}, whose build options trt-tui does not know; this"
                   f" builds the same model with trt-tui's defaults\n{command}")
    members.text("command.txt", command + "\n", "the command that rebuilds the engine the same way (--force: the engine"
                 " built then is current)")
    members.json("build.json", {
        **record.as_json(), "model_hash": record.model_hash, "options": record.options,
        "backend_version": record.backend_version, "error": record.error, "fingerprint": record.fingerprint,
        "model_bytes": record.model_bytes,
    }, "the history's record: options, fingerprint, state, error, duration")
    members.json("vitals.json", {
        "peak_rss_bytes": record.peak_rss_bytes, "cpu_seconds": record.cpu_seconds, "heap_bytes": record.heap_bytes,
        "forecast_bytes": record.forecast_bytes, "forecast_error_bytes": record.forecast_error_bytes,
        "duration": record.duration, "phases": record.phases,
    }, "vitals: peak memory, CPU time, forecast and its error, seconds per phase")
    nvml = _nvml_now()
    fingerprint = record.fingerprint or {}
    members.json("versions.json", {
        "python": platform.python_version(), "backend": record.backend, "backend_version": record.backend_version,
        "trt_tui_at_build": fingerprint.get("trt_tui"), "trt_tui_now": __version__,
        "nvidia_driver": nvml["driver"], "cuda": nvml["cuda"],
    }, "versions: Python, TensorRT backend, trt-tui, NVIDIA driver and CUDA (\"none\" without NVML)")
    members.json("host.json", {
        "os": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
        "memory_bytes": _memory_bytes(), "cpu_at_build": fingerprint.get("host"), "gpu_at_build": fingerprint.get("gpu"),
        "gpus_now": nvml["gpus"], **({"nvml_error": nvml["nvml_error"]} if "nvml_error" in nvml else {}),
    }, "host: OS, CPU count, memory, GPU (at the build, and now)")
    _log_part(members, given.log, given.log_lines)
    _trace_part(members, given.trace)
    _engine_part(members, record)
    _model_part(members, record, given.include_model)
    if given.stacks:
        members.text("stacks.txt", "\n\n".join(given.stacks) + "\n",
                     "the stacks taken while it ran (py-spy: when it went quiet, or asked for)")
    else:
        members.notes.append("stacks: none were taken while it ran")
    return members


def _manifest(members: _Members, record: BuildRecord) -> str:
    lines = [f"trt-tui report bundle of build {record.id} ({Path(record.model).name}, {record.state})",
             f"written {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}", "",
             "MANIFEST.txt  this file"]
    lines += [f"{name}  {about}" for name, _, about in members.entries]
    lines += ["", "Not included:"] + [f"- {note}" for note in members.notes]
    lines += ["", "No environment variables are included; the home directory is written ~."]
    return members.scrub("\n".join(lines) + "\n")


def _add(tar: tarfile.TarFile, name: str, data: bytes | ModelFile, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.mtime, info.mode = mtime, 0o644
    if isinstance(data, bytes):
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        return
    with data.open() as f:  # the size of the file opened, whatever is at its path by now
        info.size = os.fstat(f.fileno()).st_size
        tar.addfile(info, f)


def write_bundle(given: BundleInput, output: Path) -> list[str]:
    """Write the bundle to `output` (checked by `check_bundle_output`) atomically; returns its
    member names."""
    members = assemble(given)
    top = f"trt-tui-bundle-{given.record.id}"
    entries = [("MANIFEST.txt", _manifest(members, given.record).encode(), "")] + members.entries
    now = int(time.time())
    with atomic.atomic_file(output, "wb") as f:
        with gzip.GzipFile(filename=GZIP_NAME.decode(), mode="wb", fileobj=f, mtime=now) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for name, data, _ in entries:
                    _add(tar, f"{top}/{name}", data, now)
    return [f"{top}/{name}" for name, _, _ in entries]

