"""The shared engine cache with real builds: two "machines" (two homes, two checkouts of one model)
sharing a directory and a real S3 endpoint (moto's server), a truncated object, two processes
storing one key at once, a store that stops answering mid-fetch, and a store another real user may
read but not write."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from pathlib import Path

import jsonschema
import pytest
from support.commands import json_lines, one_error, run_command

from trt_tui.core.build import protocol
from trt_tui.core.model.samples import write_samples


def machine(root: Path, name: str, cli_env: dict[str, str], model_dir: Path) -> tuple[dict[str, str], Path]:
    """A home of its own and a checkout of its own of the model."""
    home = root / name / "home"
    env = {**cli_env, "HOME": str(home), **{f"XDG_{d}_HOME": str(home / d.lower()) for d in
                                              ("DATA", "CACHE", "CONFIG", "STATE")}}
    env.pop("TRT_TUI_HISTORY", None)
    env["TRT_TUI_CACHE"] = str(home / "trt-tui-cache")
    checkout = root / name / "checkout"
    shutil.copytree(model_dir, checkout)
    return env, checkout / "mnist.onnx"


@pytest.fixture
def mnist_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "model"
    directory.mkdir()
    write_samples(directory, ["mnist"])
    return directory


def strict_schema() -> jsonschema.Draft202012Validator:
    """The shipped event schema, where a field it does not describe is an error."""
    schema = copy.deepcopy(protocol.load_schema())
    for definition in schema["$defs"].values():
        definition["additionalProperties"] = False
    return jsonschema.Draft202012Validator(schema)


SCHEMA = strict_schema()


def build(command, env, model: Path, *extra) -> tuple[dict, str]:
    """`trt-tui build MODEL --json EXTRA` as its own process; its final state (every event checked
    against the shipped schema) and its stderr."""
    result = run_command(command, env, "build", model, "--json", *extra, timeout=180)
    assert result.returncode == 0, result.stderr
    for event in json_lines(result.stdout):
        SCHEMA.validate(event)
    states = [e for e in json_lines(result.stdout) if e["event"] == "state"]
    return states[-1], result.stderr


def test_second_machine_fetches_from_a_shared_directory(tmp_path, mnist_dir, cli_env, trt_tui_command,
                                                        engine_checker):
    shared = tmp_path / "shared"
    url = shared.as_uri()
    env_a, model_a = machine(tmp_path, "a", cli_env, mnist_dir)
    env_b, model_b = machine(tmp_path, "b", cli_env, mnist_dir)
    built, _ = build(trt_tui_command, env_a, model_a, "--cache", url)
    assert built["state"] == "succeeded"
    assert built["cache"]["result"] == "miss" and built["cache"]["bytes_stored"] == built["engine_bytes"]
    key = built["cache"]["key"]
    assert (shared / key[:2] / f"{key}.engine").is_file() and (shared / key[:2] / f"{key}.json").is_file()

    fetched, err = build(trt_tui_command, env_b, model_b, "--cache", url)
    assert fetched["state"] == "skipped" and fetched["detail"].startswith(f"fetched from {url}")
    assert fetched["cache"]["result"] == "hit" and fetched["cache"]["key"] == key
    assert fetched["cache"]["bytes_fetched"] == built["engine_bytes"]
    engine = model_b.with_suffix(".engine")
    engine_checker.assert_real_engine(engine)
    assert engine.read_bytes() == model_a.with_suffix(".engine").read_bytes()
    # the fetched engine is current here: the next run is a plain skip that asks nobody
    again, _ = build(trt_tui_command, env_b, model_b, "--cache", url)
    assert again["state"] == "skipped" and again["cache"] is None
    # and machine b's history counts the hit
    stats = run_command(trt_tui_command, env_b, "cache", "stats", "--json")
    assert stats.returncode == 0, stats.stderr
    figures = json.loads(stats.stdout)
    assert figures["hits"] == 1 and figures["misses"] == 0 and figures["bytes_fetched"] == built["engine_bytes"]


def test_truncated_object_is_a_miss_said_once_and_rebuilt(tmp_path, mnist_dir, cli_env, trt_tui_command):
    shared = tmp_path / "shared"
    env_a, model_a = machine(tmp_path, "a", cli_env, mnist_dir)
    env_b, model_b = machine(tmp_path, "b", cli_env, mnist_dir)
    built, _ = build(trt_tui_command, env_a, model_a, "--cache", shared.as_uri())
    key = built["cache"]["key"]
    stored = shared / key[:2] / f"{key}.engine"
    stored.write_bytes(stored.read_bytes()[: stored.stat().st_size // 2])
    rebuilt, err = build(trt_tui_command, env_b, model_b, "--cache", shared.as_uri())
    assert rebuilt["state"] == "succeeded" and rebuilt["cache"]["result"] == "miss"
    lines = [line for line in err.splitlines() if "corrupt" in line]
    assert len(lines) == 1 and key[:12] in lines[0], err
    assert model_b.with_suffix(".engine").stat().st_size == built["engine_bytes"]
    assert rebuilt["cache"]["bytes_stored"] == built["engine_bytes"]  # the object is whole again
    env_c, model_c = machine(tmp_path, "c", cli_env, mnist_dir)
    fetched, _ = build(trt_tui_command, env_c, model_c, "--cache", shared.as_uri())
    assert fetched["cache"]["result"] == "hit"


def test_a_record_without_its_engine_is_a_miss_and_stored_again(tmp_path, mnist_dir, cli_env, trt_tui_command):
    """An engine removed from under its record (by hand, or a half-finished clean-up): the next build
    says so, builds, and stores the engine again, so the machine after it fetches."""
    shared = tmp_path / "shared"
    env_a, model_a = machine(tmp_path, "a", cli_env, mnist_dir)
    built, _ = build(trt_tui_command, env_a, model_a, "--cache", shared.as_uri())
    key = built["cache"]["key"]
    (shared / key[:2] / f"{key}.engine").unlink()
    env_b, model_b = machine(tmp_path, "b", cli_env, mnist_dir)
    rebuilt, err = build(trt_tui_command, env_b, model_b, "--cache", shared.as_uri())
    assert rebuilt["state"] == "succeeded" and "has a record but no engine" in err, err
    assert rebuilt["cache"]["bytes_stored"] == built["engine_bytes"]
    env_c, model_c = machine(tmp_path, "c", cli_env, mnist_dir)
    fetched, _ = build(trt_tui_command, env_c, model_c, "--cache", shared.as_uri())
    assert fetched["cache"]["result"] == "hit"


def test_a_url_with_credentials_is_refused(tmp_path, mnist_dir, cli_env, trt_tui_command):
    result = run_command(trt_tui_command, cli_env, "build", mnist_dir / "mnist.onnx",
                         "--cache", "s3://AKIAXYZ:hunter2@bucket/engines")
    assert result.returncode == 2 and "credentials" in result.stderr
    assert "hunter2" not in result.stderr and "Traceback" not in result.stderr


def test_two_processes_store_one_key_at_once(tmp_path, mnist_dir, cli_env, trt_tui_command):
    shared = tmp_path / "shared"
    machines = [machine(tmp_path, name, cli_env, mnist_dir) for name in ("a", "b")]
    procs = [subprocess.Popen([*trt_tui_command, "build", str(model), "--json", "--cache", shared.as_uri()],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for env, model in machines]
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    finals = [[e for e in json_lines(out) if e["event"] == "state"][-1] for out, _ in outs]
    key = finals[0]["cache"]["key"]
    assert {f["cache"]["key"] for f in finals} == {key}
    assert sorted(p.name for p in (shared / key[:2]).iterdir()) == [f"{key}.engine", f"{key}.json"]
    record = json.loads((shared / key[:2] / f"{key}.json").read_text())
    assert record["engine_bytes"] == (shared / key[:2] / f"{key}.engine").stat().st_size
    env_c, model_c = machine(tmp_path, "c", cli_env, mnist_dir)
    fetched, _ = build(trt_tui_command, env_c, model_c, "--cache", shared.as_uri())
    assert fetched["cache"]["result"] == "hit"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def s3(tmp_path):
    """A real S3 endpoint on 127.0.0.1 (moto's server) with a bucket of this test's own (moto keeps its
    buckets in the process), the environment that names it the way every AWS client reads it, and the
    cache's URL in it."""
    moto_server = pytest.importorskip("moto.server")
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_DEFAULT_REGION":
           "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}
    import boto3

    bucket = f"engines-{uuid.uuid4().hex[:12]}"

    boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"], aws_access_key_id="testing",
                 aws_secret_access_key="testing-secret", region_name="us-east-1").create_bucket(Bucket=bucket)
    yield f"s3://{bucket}/team", env
    server.stop()


def test_s3_endpoint_second_machine_fetches(tmp_path, mnist_dir, cli_env, trt_tui_command, s3):
    url, aws = s3
    env_a, model_a = machine(tmp_path, "a", {**cli_env, **aws}, mnist_dir)
    env_b, model_b = machine(tmp_path, "b", {**cli_env, **aws}, mnist_dir)
    built, err_a = build(trt_tui_command, env_a, model_a, "--cache", url)
    assert built["cache"]["result"] == "miss" and built["cache"]["bytes_stored"] > 0, err_a
    fetched, err_b = build(trt_tui_command, env_b, model_b, "--cache", url)
    assert fetched["state"] == "skipped" and fetched["cache"]["result"] == "hit", err_b
    assert model_b.with_suffix(".engine").read_bytes() == model_a.with_suffix(".engine").read_bytes()
    assert "testing-secret" not in err_a + err_b + json.dumps([built, fetched])


def test_endpoint_killed_mid_fetch_builds_locally_within_the_wait(tmp_path, mnist_dir, cli_env, trt_tui_command,
                                                                  s3):
    """The store answers the record, then stalls on the engine (a server that stopped answering):
    the build waits at most --cache-timeout, says so once, and builds here."""
    url, aws = s3
    env_a, model_a = machine(tmp_path, "a", {**cli_env, **aws}, mnist_dir)
    built, _ = build(trt_tui_command, env_a, model_a, "--cache", url)
    assert built["cache"]["result"] == "miss"
    # a proxy in front of the endpoint that passes every request until the engine's, then holds the
    # connection and never answers (an endpoint killed mid-fetch)
    target = int(aws["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def pump(a: socket.socket, b: socket.socket, requests: bool) -> None:
        try:
            while data := a.recv(65536):
                if requests and b".engine" in data.split(b"\r\n", 1)[0]:
                    held.append(a)
                    return
                b.sendall(data)
        except OSError:
            pass

    def proxy() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", target))
            threading.Thread(target=pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, False), daemon=True).start()

    threading.Thread(target=proxy, daemon=True).start()
    env_b, model_b = machine(tmp_path, "b", {**cli_env, **aws,
                                             "AWS_ENDPOINT_URL": f"http://127.0.0.1:{listener.getsockname()[1]}"},
                             mnist_dir)
    started = time.monotonic()
    rebuilt, err = build(trt_tui_command, env_b, model_b, "--cache", url, "--cache-timeout", "3")
    elapsed = time.monotonic() - started
    listener.close()
    for s in held:
        s.close()
    assert rebuilt["state"] == "succeeded", err
    said = [line for line in err.splitlines() if "building locally" in line]
    assert len(said) == 1 and held, err
    assert elapsed < 3 * 2 + 60, elapsed  # one bounded wait (fetch; the store is not asked again) and a build
    assert os.path.getsize(model_b.with_suffix(".engine")) == built["engine_bytes"]


def test_a_project_names_a_cache_only_once_trusted_and_the_user_file_names_one(tmp_path, mnist_dir, cli_env,
                                                                            trt_tui_command):
    """`cache` routes engines somewhere: a cloned project's file sets it only once trusted; the user's own
    file sets it as any option."""
    shared = tmp_path / "shared"
    env, model = machine(tmp_path, "a", cli_env, mnist_dir)
    env.pop("TRT_TUI_CONFIG", None)
    subprocess.run(["git", "init", "-q", str(model.parent)], check=True)
    (model.parent / "pyproject.toml").write_text(f'[tool.trt-tui]\ncache = "{shared.as_uri()}"\n')
    result = run_command(trt_tui_command, env, "build", model, "--json", cwd=model.parent, timeout=180)
    assert result.returncode == 0, result.stderr
    final = [e for e in json_lines(result.stdout) if e["event"] == "state"][-1]
    assert final["state"] == "succeeded" and final["cache"] is None and not shared.exists()
    assert "cache" in result.stderr and "trust" in result.stderr, result.stderr
    assert run_command(trt_tui_command, env, "trust", model.parent).returncode == 0
    trusted, _ = build(trt_tui_command, env, model, "--force")  # run from the test's cwd: no project
    assert trusted["cache"] is None
    result = run_command(trt_tui_command, env, "build", model, "--json", "--force", cwd=model.parent, timeout=180)
    final = [e for e in json_lines(result.stdout) if e["event"] == "state"][-1]
    assert final["cache"]["result"] == "miss" and final["cache"]["bytes_stored"] > 0, result.stderr
    # the user's own file: another machine fetches with no option given
    env_b, model_b = machine(tmp_path, "b", cli_env, mnist_dir)
    env_b.pop("TRT_TUI_CONFIG", None)
    config = Path(env_b["XDG_CONFIG_HOME"]) / "trt-tui" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'cache = "{shared.as_uri()}"\n')
    fetched, err = build(trt_tui_command, env_b, model_b)
    assert fetched["cache"]["result"] == "hit", err


def test_fetched_engines_are_kept_here_and_pruned_least_recently_used_first(tmp_path, cli_env, trt_tui_command):
    """A second checkout on the machine that fetched takes the engine from the local side (no store
    asked: the store is gone); `cache prune --max-size` removes the least recently used first."""
    shared = tmp_path / "shared"
    models = tmp_path / "models"
    models.mkdir()
    write_samples(models, ["mnist", "resnet50"])
    builder, _ = machine(tmp_path, "builder", cli_env, models)
    env, _ = machine(tmp_path, "b", cli_env, models)
    keys = {}
    for name in ("resnet50", "mnist"):  # resnet50 used first: the least recently used
        built, _ = build(trt_tui_command, builder, tmp_path / "builder" / "checkout" / f"{name}.onnx",
                         "--cache", shared.as_uri())
        fetched, _ = build(trt_tui_command, env, tmp_path / "b" / "checkout" / f"{name}.onnx",
                           "--cache", shared.as_uri())
        assert fetched["cache"]["result"] == "hit"
        keys[name] = (fetched["cache"]["key"], fetched["engine_bytes"])
    kept = Path(env["TRT_TUI_CACHE"]) / "engines"
    assert sorted(p.name for p in kept.glob("*.engine")) == sorted(f"{k}.engine" for k, _ in keys.values())
    shutil.rmtree(shared)
    second = tmp_path / "b" / "second"
    shutil.copytree(models, second)
    local, err = build(trt_tui_command, env, second / "mnist.onnx", "--cache", shared.as_uri())
    assert local["state"] == "skipped" and local["detail"].startswith("fetched from the local engine cache"), err
    assert local["cache"]["result"] == "hit" and local["cache"]["bytes_fetched"] == 0
    # mnist's engine is the most recently used: a limit it fits in removes resnet50's only
    result = run_command(trt_tui_command, env, "cache", "prune", "--max-size", f"{keys['mnist'][1] // 1024 + 1}K",
                         "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["removed"] == 1
    assert sorted(p.name for p in kept.iterdir()) == [f"{keys['mnist'][0]}.engine", f"{keys['mnist'][0]}.json"]
    bad = run_command(trt_tui_command, env, "cache", "prune", "--max-size", "lots")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_an_unreachable_store_is_said_once_and_the_build_goes_on(tmp_path, mnist_dir, cli_env, trt_tui_command):
    pytest.importorskip("s3fs")
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret", "AWS_DEFAULT_REGION":
           "us-east-1", "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}  # nobody listens
    env, model = machine(tmp_path, "a", {**cli_env, **aws}, mnist_dir)
    started = time.monotonic()
    built, err = build(trt_tui_command, env, model, "--cache", "s3://nowhere/engines", "--cache-timeout", "2")
    assert built["state"] == "succeeded" and built["cache"]["result"] == "miss", err
    assert built["cache"]["bytes_stored"] == 0  # not asked again to store once it failed to answer
    said = [line for line in err.splitlines() if "cache s3://nowhere/engines" in line]
    assert len(said) == 1 and "building locally" in said[0], err
    assert "testing-secret" not in err
    assert time.monotonic() - started < 60


def store_engines(url: str, folder: Path, sizes: list[int], pause: float = 0.0) -> list[str]:
    """Engines of these sizes stored in the store at `url` in turn (`pause` seconds apart), as a build
    stores one; their keys. Their bytes are random: pruning never reads them, and fetching checks them
    against their record as it would a real engine's."""
    import numpy as np

    from trt_tui.core.cache.shared_store import SharedStore, cache_key_hex

    store, keys = SharedStore(url), []
    for n, size in enumerate(sizes):
        engine = folder / f"{n}.engine"
        engine.write_bytes(np.random.default_rng(n).bytes(size))
        key = cache_key_hex({"model": n})
        digest = hashlib.sha256(engine.read_bytes()).hexdigest()
        assert store.store(key, engine, {"engine_bytes": size, "engine_sha256": digest}) == size
        keys.append(key)
        time.sleep(pause)
    return keys


def fetchable(url: str, keys: list[str], monkeypatch, folder: Path) -> list[bool]:
    """Which of `keys` a reader of the store at `url` fetches whole (a hit): a reader that keeps no
    engine of its own (the local side), so each answer is the store's."""
    from trt_tui.core.cache.shared_store import SharedStore

    monkeypatch.setenv("TRT_TUI_CACHE", tempfile.mkdtemp(prefix="reader-", dir=folder))
    found = [SharedStore(url).fetch(key) for key in keys]
    for fetched in found:
        if fetched is not None and not fetched.kept:
            fetched.path.unlink()
    return [fetched is not None for fetched in found]


@pytest.mark.parametrize("where", ["directory", "s3"])
def test_the_store_is_pruned_to_a_size_oldest_stored_first(where, tmp_path, cli_env, trt_tui_command, monkeypatch,
                                                           request):
    """`cache prune --remote URL --max-size`: the oldest stored engines go, each with its record, until
    the store holds at most the size; what is left is fetched whole, what went is a miss."""
    if where == "s3":
        url, aws = request.getfixturevalue("s3")
        for name, value in aws.items():
            monkeypatch.setenv(name, value)
        pause = 1.1  # S3 keeps a time to the second
    else:
        url, aws, pause = (tmp_path / "store").as_uri(), {}, 0.0
    keys = store_engines(url, tmp_path, [300_000, 200_000, 100_000], pause)
    if where == "directory":  # stored three, two and one days ago
        for n, key in enumerate(keys):
            then = time.time() - (3 - n) * 86400
            for suffix in (".engine", ".json"):
                os.utime(tmp_path / "store" / key[:2] / f"{key}{suffix}", (then, then))
    env = {**cli_env, **aws}
    result = run_command(trt_tui_command, env, "cache", "prune", "--remote", url, "--max-size", "350K", "--json")
    assert result.returncode == 0, result.stderr
    pruned = json.loads(result.stdout)
    assert pruned["removed"] == 1 and 300_000 < pruned["removed_bytes"] < 301_000, pruned
    assert 300_000 < pruned["kept_bytes"] <= 350 * 1024
    assert fetchable(url, keys, monkeypatch, tmp_path) == [False, True, True]
    said = run_command(trt_tui_command, env, "cache", "prune", "--remote", url, "--max-size", "0")
    assert said.returncode == 0 and said.stdout.startswith("removed 2 engines"), said.stdout + said.stderr
    assert fetchable(url, keys, monkeypatch, tmp_path) == [False, False, False]
    if where == "directory":
        assert [p for p in (tmp_path / "store").rglob("*") if p.is_file()] == []


def test_the_store_is_pruned_by_age_on_request(tmp_path, cli_env, trt_tui_command):
    shared = tmp_path / "shared"
    models = tmp_path / "models"
    models.mkdir()
    write_samples(models, ["mnist", "resnet50"])
    env, _ = machine(tmp_path, "a", cli_env, models)
    keys = {}
    for name in ("mnist", "resnet50"):
        built, _ = build(trt_tui_command, env, tmp_path / "a" / "checkout" / f"{name}.onnx", "--cache", shared.as_uri())
        keys[name] = built["cache"]["key"]
    old = time.time() - 10 * 86400
    for suffix in (".engine", ".json"):  # mnist's engine was stored ten days ago
        os.utime(shared / keys["mnist"][:2] / f"{keys['mnist']}{suffix}", (old, old))
    result = run_command(trt_tui_command, env, "cache", "prune", "--remote", shared.as_uri(), "--older-than", "7",
                         "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["removed"] == 1
    left = sorted(p.name for p in shared.rglob("*") if p.is_file())
    assert left == [f"{keys['resnet50']}.engine", f"{keys['resnet50']}.json"]
    refused = run_command(trt_tui_command, env, "cache", "prune", "--remote", "s3://u:p@bucket/x", "--older-than", "1")
    assert refused.returncode == 2 and "credentials" in refused.stderr and "Traceback" not in refused.stderr
    bare = run_command(trt_tui_command, env, "cache", "prune", "--remote", shared.as_uri())
    assert bare.returncode == 2 and "--older-than DAYS or --max-size SIZE" in one_error(bare)
    local = run_command(trt_tui_command, env, "cache", "prune", "--older-than", "7")
    assert local.returncode == 2 and "--remote" in one_error(local)


def python_of(user) -> list[str]:
    """A Python `user` may run, with this run's packages: this one, where they may reach it; else the
    system's of the same version, given this one's site-packages (a pyenv under /root is not theirs)."""
    site_packages = sysconfig.get_paths()["purelib"]
    for python in (sys.executable, shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}",
                                                  path="/usr/bin:/bin")):
        if python is None:
            continue
        command = [python, "-c", f"import site, runpy; site.addsitedir({site_packages!r});"
                                  " runpy.run_module('trt_tui', run_name='__main__', alter_sys=True)"]
        probe = subprocess.run(["runuser", "-u", user.pw_name, "--", python, "-c", "pass"], capture_output=True)
        if probe.returncode == 0:
            return command
    pytest.skip(f"no Python {sys.version_info[0]}.{sys.version_info[1]} that user {user.pw_name} may run")


def test_a_store_this_user_may_not_write_is_said_once_and_the_builds_go_on(cli_env, other_user):
    """A store others may read, not write (a team's read-only mount): as another real user (root ignores
    modes), two builds that miss both build here and succeed, one line says the store is not writable
    (the second build does not ask again), and nothing is left in the store, not even a temporary."""
    place = Path(tempfile.mkdtemp(prefix="trt-tui-readonly-store-"))
    try:
        place.chmod(0o755)
        store = place / "store"
        store.mkdir(mode=0o755)
        work = place / "work"
        models = []
        for name in ("a", "b"):  # two checkouts of one model: one key, two misses
            models.append(work / name / "mnist.onnx")
            models[-1].parent.mkdir(parents=True)
            write_samples(models[-1].parent, ["mnist"])
        home = work / "home"
        env = {**cli_env, "HOME": str(home), "TRT_TUI_CACHE": str(work / "cache"),
               "TRT_TUI_HISTORY": str(work / "history.sqlite3"), "XDG_RUNTIME_DIR": str(work / "run"),
               "TRT_TUI_TEST_RUNTIME": str(work / "run"),
               **{f"XDG_{d}_HOME": str(home / d.lower()) for d in ("DATA", "CACHE", "CONFIG", "STATE")}}
        subprocess.run(["chown", "-R", f"{other_user.pw_uid}:{other_user.pw_gid}", str(work)], check=True)
        result = subprocess.run(["runuser", "-u", other_user.pw_name, "--", "/usr/bin/env", f"HOME={home}",
                                 *python_of(other_user), "build", *map(str, models), "--json", "-j", "1",
                                 "--cache", store.as_uri()],
                                capture_output=True, text=True, env=env, cwd=work, timeout=180)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr, result.stderr
        finals = [e for e in json_lines(result.stdout) if e["event"] == "state" and e["state"] == "succeeded"]
        assert len(finals) == 2 and all(f["cache"]["result"] == "miss" and not f["cache"]["bytes_stored"]
                                        for f in finals), result.stdout
        said = [line for line in result.stderr.splitlines() if store.as_uri() in line]
        assert len(said) == 1 and "not writable" in said[0], result.stderr
        assert all(model.with_suffix(".engine").stat().st_size == finals[0]["engine_bytes"] for model in models)
        assert list(store.iterdir()) == []
    finally:
        shutil.rmtree(place, ignore_errors=True)
