"""Random inputs at `build` and at `watch`: 200 random byte strings and 50 random mutations of a real
model. Whatever the bytes, trt-tui prints no traceback, one line per file that does not build (naming
the file), and writes nothing for it; a mutation that is still a valid model may build, and then its
engine must be a real one."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

RANDOM_FILES = 200
MUTATIONS = 50
TIMEOUT = 600


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    kind = rng.choice(["flip", "truncate", "insert", "delete", "splice"])
    if kind == "flip":
        for _ in range(rng.randint(1, 16)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del data[rng.randrange(len(data)):]
    elif kind == "insert":
        at = rng.randrange(len(data))
        data[at:at] = rng.randbytes(rng.randint(1, 64))
    elif kind == "delete":
        at = rng.randrange(len(data))
        del data[at:at + rng.randint(1, 64)]
    else:  # a run of the header overwritten with noise
        at = rng.randrange(min(len(data), 512))
        data[at:at + 32] = rng.randbytes(32)
    return bytes(data)


@pytest.fixture(scope="module")
def fuzz_models(tmp_path_factory, sample_dir) -> list[Path]:
    rng = random.Random(20261203)
    directory = tmp_path_factory.mktemp("fuzz")
    mnist = (sample_dir / "mnist.onnx").read_bytes()
    paths = []
    for i in range(RANDOM_FILES):
        path = directory / f"random{i:03d}.onnx"
        path.write_bytes(rng.randbytes(rng.choice([0, 1, 7, 64, 512, 4096, 65536])))
        paths.append(path)
    for i in range(MUTATIONS):
        path = directory / f"mutant{i:03d}.onnx"
        path.write_bytes(mutate(mnist, rng))
        paths.append(path)
    return paths


def check_outcomes(finals: dict[str, dict], out: Path, engine_checker, models: list[Path]) -> int:
    """Every model has one final state; failed ones wrote nothing; built ones are real engines."""
    assert sorted(finals) == sorted(str(m) for m in models)
    failed = 0
    for model, event in finals.items():
        engine = out / (Path(model).stem + ".engine")
        if event["state"] == "failed":
            failed += 1
            assert model in event["error"] and "\n" not in event["error"], event
            assert not engine.exists(), f"{engine}: written for a model that failed"
        else:
            assert event["state"] == "succeeded", event
            engine_checker.assert_real_engine(engine)
    assert not list(out.glob(".*.tmp"))
    return failed


# The thread executor keeps these runs short (no process per file): what is fuzzed is how trt-tui reads
# and reports input, which both executors share; a crash of TensorRT's parser would fail the test.
FAST = ["--executor", "thread"]


def test_fuzz_build(cli_env, trt_tui_command, fuzz_models, tmp_path, engine_checker, record_property) -> None:
    out = tmp_path / "engines"
    started = time.monotonic()
    result = subprocess.run([*trt_tui_command, "build", *map(str, fuzz_models), "-o", f"{out}/", *FAST],
                            capture_output=True, text=True, env=cli_env, timeout=TIMEOUT)
    record_property("fuzz_build_s", round(time.monotonic() - started, 1))
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    named = [next((str(m) for m in fuzz_models if line.startswith(f"trt-tui: {m}: ")), line) for line in lines]
    assert len(set(named)) == len(lines) and set(named) <= {str(m) for m in fuzz_models}, \
        "each bad file gets exactly one line, naming it"
    built = {str(m) for m in fuzz_models if (out / (m.stem + ".engine")).exists()}
    assert set(named) | built == {str(m) for m in fuzz_models} and not set(named) & built
    assert len(named) >= RANDOM_FILES  # no random byte string is a model
    for model in built:
        engine_checker.assert_real_engine(out / (Path(model).stem + ".engine"))
    assert not list(out.glob(".*.tmp"))
    assert result.returncode == 2  # the empty files are unreadable input, the others failed builds


def test_fuzz_watch(cli_env, trt_tui_command, fuzz_models, tmp_path, engine_checker) -> None:
    """The same files dropped into a watched folder while it is watched."""
    watched = tmp_path / "watched"
    watched.mkdir()
    out_path, err_path = tmp_path / "out.jsonl", tmp_path / "err.txt"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        proc = subprocess.Popen([*trt_tui_command, "watch", str(watched), "--json", *FAST], stdout=out,
                                stderr=err, text=True, env=cli_env)

    def events() -> list[dict]:
        return [json.loads(line) for line in out_path.read_text().splitlines() if line.endswith("}")]

    def finals() -> list[dict]:
        return [e for e in events() if e["event"] == "state" and e["state"] in ("failed", "succeeded")]

    def wait_for(condition, what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not condition():
            assert proc.poll() is None and time.monotonic() < deadline, f"{what}: {err_path.read_text()[-2000:]}"
            time.sleep(0.2)

    try:
        wait_for(lambda: any(e["event"] == "message" and "watching" in e["message"] for e in events()),
                 "watching")
        dropped = []
        for model in fuzz_models:
            target = watched / model.name
            target.write_bytes(model.read_bytes())
            dropped.append(target.resolve())
        wait_for(lambda: len({e["model"] for e in finals()}) == len(dropped), "every file's build ended")
        time.sleep(1.0)  # nothing more may come for files that did not change
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        proc.kill()
    assert "Traceback" not in err_path.read_text()
    counts: dict[str, int] = {}
    for event in finals():
        counts[event["model"]] = counts.get(event["model"], 0) + 1
    assert all(n == 1 for n in counts.values()), {m: n for m, n in counts.items() if n != 1}
    check_outcomes({e["model"]: e for e in finals()}, watched, engine_checker, dropped)
