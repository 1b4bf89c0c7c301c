"""DenseNet fetched from the shared cache against DenseNet built, side by side in one run.

Each round is two "machines" (a home and a checkout of the model each) and one shared store:
`built` is machine A's `trt-tui build MODEL --cache URL` (a miss: it builds, then stores the engine);
`fetched` is machine B's same command right after (a hit: it fetches, checks and installs the engine).
Both are whole CLI runs, timed from the command's start to its exit. The store is a directory
(`file://`, as an NFS mount is used) and, where moto is installed, a real S3 endpoint on 127.0.0.1
(moto's server). Medians over the rounds, and each fetch's ratio to its build, printed as JSON.

    python bench/shared_cache.py [ROUNDS]    # default 3
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def machine(root: Path, name: str, model_dir: Path, extra_env: dict[str, str]) -> tuple[dict[str, str], Path]:
    home = root / name
    env = {**os.environ, **extra_env, "HOME": str(home), "PYTHONPATH": str(REPO),
           **{f"XDG_{d}_HOME": str(home / d.lower()) for d in ("DATA", "CACHE", "CONFIG", "STATE")}}
    env.pop("TRT_TUI_HISTORY", None)
    env.pop("TRT_TUI_CONFIG", None)
    checkout = home / "checkout"
    shutil.copytree(model_dir, checkout)
    return env, checkout / "densenet.onnx"


def timed(env: dict[str, str], model: Path, url: str) -> tuple[float, dict]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "trt_tui", "build", str(model), "--json", "--cache", url],
                            env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(result.stderr)
    final = [e for e in map(json.loads, result.stdout.splitlines()) if e["event"] == "state"][-1]
    return elapsed, final


def main() -> None:
    from trt_tui.core.model.samples import write_samples

    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    root = Path(tempfile.mkdtemp(prefix="trt-tui-bench-cache-"))
    model_dir = root / "model"
    model_dir.mkdir()
    write_samples(model_dir, ["densenet"])
    stores: dict[str, tuple[str, dict[str, str]]] = {}
    server = None
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        ThreadedMotoServer = None
    try:
        figures: dict[str, dict[str, list[float]]] = {}
        for n in range(rounds):
            stores = {"file": ((root / f"shared-{n}").as_uri(), {})}
            if ThreadedMotoServer is not None:
                import boto3

                if server is None:
                    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
                    server.start()
                host, port = server.get_host_and_port()
                aws = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION":
                       "us-east-1", "AWS_ENDPOINT_URL": f"http://{host}:{port}"}
                bucket = f"bench-{uuid.uuid4().hex[:10]}"
                boto3.client("s3", endpoint_url=aws["AWS_ENDPOINT_URL"], aws_access_key_id="bench",
                             aws_secret_access_key="bench", region_name="us-east-1").create_bucket(Bucket=bucket)
                stores["s3"] = (f"s3://{bucket}/engines", aws)
            for store, (url, extra) in stores.items():
                env_a, model_a = machine(root / f"{store}-{n}", "a", model_dir, extra)
                env_b, model_b = machine(root / f"{store}-{n}", "b", model_dir, extra)
                built, a = timed(env_a, model_a, url)
                fetched, b = timed(env_b, model_b, url)
                assert a["cache"]["result"] == "miss" and b["cache"]["result"] == "hit", (a, b)
                assert model_a.with_suffix(".engine").read_bytes() == model_b.with_suffix(".engine").read_bytes()
                into = figures.setdefault(store, {"built_s": [], "fetched_s": [], "engine_bytes": []})
                into["built_s"].append(built)
                into["fetched_s"].append(fetched)
                into["engine_bytes"].append(b["engine_bytes"])
        out = {}
        for store, f in figures.items():
            built, fetched = statistics.median(f["built_s"]), statistics.median(f["fetched_s"])
            out[store] = {"rounds": rounds, "built_median_s": round(built, 2), "fetched_median_s": round(fetched, 2),
                          "fetched_over_built": round(fetched / built, 3), "engine_bytes": f["engine_bytes"][0],
                          "built_s": [round(x, 2) for x in f["built_s"]],
                          "fetched_s": [round(x, 2) for x in f["fetched_s"]]}
        print(json.dumps({"model": "densenet.onnx", "load_avg": os.getloadavg(), "stores": out}, indent=1))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
