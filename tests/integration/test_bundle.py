"""`trt-tui bundle ID`: a real MNIST build recorded in a history, then its report bundle opened and read."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from trt_tui.core.model.samples import write_samples

MARKER = "xyz123-not-for-the-bundle"


def cli(*args: str, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trt_tui", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=cwd)


@pytest.fixture(scope="module")
def built(tmp_path_factory, cli_env):
    """A home directory with the model under it, one real build of it recorded in a history (with a
    trace), a saved log with repeated lines, and a secret in the environment of every command."""
    home = tmp_path_factory.mktemp("home")
    (model,) = write_samples(home / "models", ["mnist"])
    history = home / "history.sqlite3"
    env = dict(cli_env, HOME=str(home), TRT_TUI_SECRET_MARKER=MARKER)
    done = cli("build", str(model), "--history", str(history), "--json", "--trace", str(home / "trace.json"),
               "--opt-level", "1", "--shapes", "input:1x1x28x28", env=env)
    assert done.returncode == 0, done.stderr
    (row,) = [json.loads(line) for line in cli("history", "--json", "--history", str(history), env=env).stdout.splitlines()]
    log = home / "build.log"
    log.write_text(f"[I] reading {model}\n" + "[W] a warning said again and again\n" * 4 + "[I] done\n")
    return {"home": home, "model": model, "history": history, "env": env, "id": str(row["id"]), "log": log}


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers()}


def test_bundle_holds_what_a_maintainer_asks_for(built, tmp_path):
    home, model, env = built["home"], built["model"], built["env"]
    out = tmp_path / "report.tar.gz"
    done = cli("bundle", built["id"], "--history", str(built["history"]), "-o", str(out),
               "--log", str(built["log"]), "--trace", str(home / "trace.json"), env=env)
    assert done.returncode == 0, done.stderr
    with tarfile.open(out, "r:gz") as tar:
        names = tar.getnames()
    assert names[0] == f"trt-tui-bundle-{built['id']}/MANIFEST.txt"
    got = members(out)
    assert set(got) == {"MANIFEST.txt", "command.txt", "build.json", "vitals.json", "versions.json", "host.json",
                        "log.txt", "trace.json", "sidecar.json", "model.json", "model/mnist.onnx"}
    manifest = got["MANIFEST.txt"].decode()
    assert all(f"{name}  " in manifest for name in got if name != "MANIFEST.txt")

    build = json.loads(got["build.json"])
    assert build["model"] == "~/models/mnist.onnx" and build["state"] == "succeeded"
    assert build["options"]["opt_level"] == 1 and build["fingerprint"]["model"]["hash"] == build["model_hash"]
    versions = json.loads(got["versions.json"])
    assert versions["python"] == ".".join(map(str, sys.version_info[:3]))
    assert versions["backend"] == build["fingerprint"]["backend"] and versions["backend_version"]
    assert versions["trt_tui_now"] and versions["nvidia_driver"] and versions["cuda"]
    host = json.loads(got["host.json"])
    assert host["cpu_count"] == os.cpu_count() and host["memory_bytes"] > 0 and "gpus_now" in host
    assert json.loads(got["vitals.json"])["peak_rss_bytes"] > 0
    assert got["log.txt"].decode().splitlines() == [
        "[I] reading ~/models/mnist.onnx", "[W] a warning said again and again  [repeated 4 times]", "[I] done"]
    assert "traceEvents" in json.loads(got["trace.json"])
    engine = model.with_suffix(".engine")
    assert json.loads(got["sidecar.json"])["engine_sha256"] == hashlib.sha256(engine.read_bytes()).hexdigest()
    assert got["model/mnist.onnx"] == model.read_bytes()
    facts = json.loads(got["model.json"])
    assert facts["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()

    everything = b"".join(got.values())
    assert MARKER.encode() not in everything  # no environment variable's value
    assert str(home).encode() not in everything  # the home directory is ~ everywhere

    # The command rebuilds: run as written (the shell expands its ~), to a fresh engine path.
    command = got["command.txt"].decode().strip()
    assert command.startswith("trt-tui build ~/models/mnist.onnx ") and "--opt-level 1" in command
    fresh = tmp_path / "again.engine"
    python_m = f"{sys.executable} -m trt_tui"
    rerun = subprocess.run(["bash", "-c", python_m + command[len("trt-tui"):] + f" -o {fresh}"],
                           capture_output=True, text=True, env=env, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert fresh.stat().st_size > 0


def test_no_model_keeps_its_hash_and_shapes(built, tmp_path):
    out = tmp_path / "small.tar.gz"
    done = cli("bundle", built["id"], "--history", str(built["history"]), "-o", str(out), "--no-model",
               env=built["env"])
    assert done.returncode == 0, done.stderr
    got = members(out)
    assert not any(name.startswith("model/") for name in got)
    facts = json.loads(got["model.json"])
    assert facts["sha256"] == hashlib.sha256(built["model"].read_bytes()).hexdigest()
    assert facts["inputs"] == [{"name": "input", "dtype": "float32", "shape": "1×1×28×28"}]
    manifest = got["MANIFEST.txt"].decode()
    assert "--no-model" in manifest  # says what is missing and why
    assert "log.txt  " in manifest and got["log.txt"].strip()  # the log the history kept of the build


def test_default_name_and_own_bundle_replaced(built, tmp_path):
    """Without -o: trt-tui-bundle-ID.tar.gz in the current directory; a second run replaces it (ours)."""
    for _ in range(2):
        done = cli("bundle", built["id"], "--history", str(built["history"]), "--no-model", env=built["env"],
                   cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == [f"trt-tui-bundle-{built['id']}.tar.gz"]


@pytest.mark.parametrize("args", [["999"], ["abc"], ["9" * 30]])
def test_bad_id_is_one_line(built, tmp_path, args):
    done = cli("bundle", *args, "--history", str(built["history"]), "-o", str(tmp_path / "x.tar.gz"),
               env=built["env"])
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert args[0] in done.stderr and not (tmp_path / "x.tar.gz").exists()


def test_missing_history_is_one_line(built, tmp_path):
    missing = tmp_path / "none.sqlite3"
    done = cli("bundle", "1", "--history", str(missing), env=built["env"], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines() == [done.stderr.strip()]
    assert str(missing) in done.stderr and not missing.exists() and list(tmp_path.iterdir()) == []


def test_foreign_file_at_output_is_refused(built, tmp_path):
    foreign = tmp_path / "notes.tar.gz"
    foreign.write_bytes(b"the user's own file")
    done = cli("bundle", built["id"], "--history", str(built["history"]), "-o", str(foreign), env=built["env"])
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "not a bundle trt-tui wrote" in done.stderr
    assert foreign.read_bytes() == b"the user's own file"
    assert [p.name for p in tmp_path.iterdir()] == ["notes.tar.gz"]  # no temporary left


def test_only_runs_of_one_line_fold_and_home_is_the_whole_name():
    from trt_tui.core.history.bundle import _Members, fold_repeats

    assert fold_repeats(["a", "a", "b", "a", "c", "c", "c"]) == [
        "a  [repeated 2 times]", "b", "a", "c  [repeated 3 times]"]
    home = _Members("/home/ann")
    assert home.scrub('"/home/ann/m.onnx" /home/anna/x /home/ann') == '"~/m.onnx" /home/anna/x ~'
    assert home.shell_path("/home/ann/my models/m.onnx") == "~/'my models/m.onnx'"


@pytest.mark.parametrize("option", ["--log", "--trace"])
def test_named_file_missing_or_not_a_trace_is_one_line(built, tmp_path, option):
    text = tmp_path / "plain.txt"
    text.write_text("not a trace")
    for given, reason in ((tmp_path / "none.txt", "no such file"), (text, "not a trace trt-tui wrote")):
        if option == "--log" and reason != "no such file":
            continue
        done = cli("bundle", built["id"], "--history", str(built["history"]), option, str(given),
                   "-o", str(tmp_path / "x.tar.gz"), env=built["env"])
        assert done.returncode == 2 and len(done.stderr.splitlines()) == 1 and reason in done.stderr, done.stderr
        assert not (tmp_path / "x.tar.gz").exists()


def test_a_model_gone_and_a_build_observed_elsewhere_are_said(built, tmp_path):
    """The record of a build `trt-tui run` observed, whose model is gone since: the bundle still has the
    record, says the model could not be read, and that the command's options are trt-tui's defaults."""
    from dataclasses import replace

    from trt_tui.core.history.bundle import BundleInput, assemble
    from trt_tui.core.history.records import History

    with History(built["history"], create=False) as history:
        record = history.get(int(built["id"]))
    observed = replace(record, model=str(tmp_path / "gone.onnx"), program="python train.py", options={})
    members = assemble(BundleInput(observed), home=str(built["home"]))
    got = {name: data for name, data, _ in members.entries}
    assert not any(name.startswith("model/") for name in got)
    assert json.loads(got["model.json"])["content_hash_at_build"] == record.model_hash
    assert any(note.startswith("model: not read now") for note in members.notes)
    assert got["command.txt"].decode().startswith("# built inside python train.py, whose build options")


def test_driver_cuda_and_gpus_from_nvml(monkeypatch):
    """Where NVML starts (a GPU host), its answers fill versions and host: a scripted NVML in addition to
    the real builds above, which ran where it does not ("none")."""
    from types import SimpleNamespace

    from trt_tui.core.history import bundle
    from trt_tui.core.observe import nvml

    fake = SimpleNamespace(
        nvmlSystemGetDriverVersion=lambda: b"550.54.15", nvmlSystemGetCudaDriverVersion=lambda: 12040,
        nvmlDeviceGetCount=lambda: 1, nvmlDeviceGetHandleByIndex=lambda index: index,
        nvmlDeviceGetName=lambda handle: "NVIDIA H100 80GB HBM3",
        nvmlDeviceGetMemoryInfo=lambda handle: SimpleNamespace(total=80 << 30))
    monkeypatch.setattr(nvml, "nvml_started", lambda: fake)
    assert bundle._nvml_now() == {"driver": "550.54.15", "cuda": "12.4", "gpus": [
        {"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 80 << 30}]}


SECRET = b"SECRET_API_KEY=sk-live-not-for-any-bundle\n"


def _model_with_weights_at(directory: Path, location: str) -> Path:
    """MNIST with its weights in external data, the location then set to `location` as a model's
    maker could write it (onnx saves only plain names itself)."""
    import onnx

    from trt_tui.core.model.samples import make_model

    directory.mkdir(parents=True, exist_ok=True)
    model = directory / "net.onnx"
    onnx.save_model(make_model("mnist"), model, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    proto = onnx.load(model, load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(proto, model)
    return model


def _escapes(home: Path) -> dict[str, tuple[str, str]]:
    """Each way a model reaches a file outside its directory: (location, the manifest's line)."""
    outside = "~/secret.txt left out: outside the model's directory (the model's external data)"
    return {
        "parent": ("../../secret.txt", outside),
        "absolute": (str(home / "secret.txt"), outside),
        "file link": ("weights.bin", "weights.bin left out: a symbolic link (the model's external data)"),
        "directory link": ("data/weights.bin", "data/weights.bin left out: reached through a link to a directory"
                           " outside the model's directory (the model's external data)"),
    }


@pytest.mark.parametrize("case", ["parent", "absolute", "file link", "directory link"])
def test_bundle_copies_nothing_from_outside_the_models_directory(case, tmp_path, cli_env):
    """A model whose external data names a file elsewhere: TensorRT refuses it, the failed build is
    recorded, and its bundle still holds no byte of that file; the manifest says what it left out."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_bytes(SECRET)
    location, line = _escapes(home)[case]
    models = home / "repo" / "models"
    model = _model_with_weights_at(models, location)
    (models / "weights.bin").unlink()  # the weights onnx wrote: the model names another file
    if case == "file link":
        (models / "weights.bin").symlink_to(home / "secret.txt")
    elif case == "directory link":
        (home / "elsewhere").mkdir()
        (home / "elsewhere" / "weights.bin").write_bytes(SECRET)
        (models / "data").symlink_to(home / "elsewhere")
    env = dict(cli_env, HOME=str(home))
    history = tmp_path / "history.sqlite3"
    done = cli("build", str(model), "--history", str(history), env=env)
    assert done.returncode == 1, done.stderr  # refused by TensorRT, and recorded
    (row,) = [json.loads(text) for text in cli("history", "--json", "--history", str(history), env=env).stdout.splitlines()]
    assert row["state"] == "failed"

    out = tmp_path / "report.tar.gz"
    done = cli("bundle", str(row["id"]), "--history", str(history), "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    got = members(out)
    assert [name for name in got if name.startswith("model/")] == ["model/net.onnx"]
    assert not any(b"SECRET_API_KEY" in data for data in got.values())
    # Paths are written from home as ~ (the model's own bytes are copied as they are).
    assert not any(str(home).encode() in data for name, data in got.items() if not name.startswith("model/"))
    manifest = got["MANIFEST.txt"].decode()
    assert f"- model: {line}; a bundle takes only regular files inside the model's directory" in manifest
    assert "(~/repo/models) and follows no link" in manifest


def test_bundle_keeps_external_data_inside_the_models_directory(tmp_path, cli_env):
    """Weights in a folder beside the model are the model's: they go in, under the same relative name,
    so the bundle's model/ builds as it is."""
    home = tmp_path / "home"
    models = home / "models"
    (models / "data").mkdir(parents=True)
    model = _model_with_weights_at(models, "data/weights.bin")
    (models / "weights.bin").rename(models / "data" / "weights.bin")
    env = dict(cli_env, HOME=str(home))
    history = tmp_path / "history.sqlite3"
    done = cli("build", str(model), "--history", str(history), "--shapes", "input:1x1x28x28", env=env)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "report.tar.gz"
    assert cli("bundle", "1", "--history", str(history), "-o", str(out), env=env).returncode == 0
    got = members(out)
    assert got["model/data/weights.bin"] == (models / "data" / "weights.bin").read_bytes()
    assert got["model/net.onnx"] == model.read_bytes()
    assert "left out" not in got["MANIFEST.txt"].decode()


def test_a_model_file_replaced_after_its_check_is_not_copied(tmp_path):
    """What was checked is what is copied: a weights file swapped for a link to a secret, or its
    folder for a link to another folder, between the check and the copy is refused (and with it the
    bundle)."""
    from trt_tui.core.history.model_files import ModelFile, model_file

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "weights.bin").write_bytes(SECRET)
    models = tmp_path / "models"
    for swapped in ("data/weights.bin", "data"):
        (models / "data").mkdir(parents=True)
        weights = models / "data" / "weights.bin"
        weights.write_bytes(b"weights")
        found = model_file(weights, models)
        assert isinstance(found, ModelFile) and found.name == "data/weights.bin"
        with found.open() as f:
            assert f.read() == b"weights"
        if swapped == "data":
            (models / "data").rename(tmp_path / "old-data")
            (models / "data").symlink_to(elsewhere)
        else:
            weights.unlink()
            weights.symlink_to(elsewhere / "weights.bin")
        with pytest.raises(OSError):
            found.open()
        if swapped == "data":
            (models / "data").unlink()
        shutil.rmtree(models)


def test_a_notebook_builds_bundle_names_no_command_that_cannot_build(built, tmp_path):
    """`trt_tui.observe` records the notebook's or script's name where a model would be: the bundle's
    command says no trt-tui command rebuilds it, instead of naming a file that does not exist."""
    from dataclasses import replace

    from trt_tui.core.history.bundle import BundleInput, assemble
    from trt_tui.core.history.records import History

    with History(built["history"], create=False) as history:
        record = history.get(int(built["id"]))
    observed = replace(record, model=str(tmp_path / "notebook"), program="api: notebook", options={})
    got = {name: data for name, data, _ in assemble(BundleInput(observed), home=str(built["home"])).entries}
    command = got["command.txt"].decode()
    assert command.startswith("# built by notebook through trt_tui.observe") and "trt-tui build" not in command
