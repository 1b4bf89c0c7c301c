"""What a build fingerprint costs: `python bench/fingerprint.py [--reps N]`.

For each sample model, its fingerprint (`EngineCache.fingerprint`: content hash plus a digest per
initializer and node, read with trt-tui's own protobuf reader), which the cache's decision waits for
where an engine with its record exists, measured
- cold: a new ContentHasher and an empty digest memo (the first build of a model in a process, or one
  after the file changed), and
- warm: both memos hit (the model unchanged since the last look: a `watch` or the app's `r`),
as medians over N repetitions; `decide_no_engine_s`: the decision where there is no engine yet (or
with --force), which hashes nothing (the fingerprint is taken beside the build); plus the size of the
history row's fingerprint. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from trt_tui.core.build.driver import BuildSpec  # noqa: E402
from trt_tui.core.cache import fingerprint  # noqa: E402
from trt_tui.core.cache.engine_cache import ContentHasher, EngineCache  # noqa: E402
from trt_tui.core.model.samples import write_samples  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="trt-tui-bench-fp-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    results = {}
    for model in write_samples(directory):
        spec = BuildSpec(model, model.with_suffix(".engine"))
        cold, warm, deferred = [], [], []
        for _ in range(args.reps):
            fingerprint._digest_memo.clear()
            cache = EngineCache(ContentHasher())
            t = time.perf_counter()
            decision = cache.decide(spec)
            deferred.append(time.perf_counter() - t)
            assert decision.deferred
            t = time.perf_counter()
            fp = cache.fingerprint(spec)
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            cache.fingerprint(spec)
            warm.append(time.perf_counter() - t)
        results[model.name] = {
            "model_bytes": model.stat().st_size,
            "initializers": len(fp.model["initializers"]),
            "nodes": len(fp.model["nodes"]),
            "cold_s": statistics.median(cold),
            "warm_s": statistics.median(warm),
            "decide_no_engine_s": statistics.median(deferred),
            "fingerprint_json_bytes": len(json.dumps(fp.as_dict())),
        }
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
