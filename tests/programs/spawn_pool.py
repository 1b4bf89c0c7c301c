"""Builds one model twice in a multiprocessing pool of two workers.

Usage: spawn_pool.py spawn|forkserver MODEL.onnx OUTDIR. Each worker is a fresh interpreter, so it
re-runs sitecustomize: `trt-tui run` must see both builds. Prints the workers' pids.
"""

import multiprocessing
import os
import sys
import time


def build(job):
    model, engine = job
    import tensorrt_rtx as trt

    time.sleep(0.3)  # the other task goes to the other worker meanwhile
    logger = trt.Logger(trt.Logger.WARNING)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse_from_file(model)
    serialized = builder.build_serialized_network(network, builder.create_builder_config())
    with open(engine, "wb") as f:
        f.write(serialized)
    return os.getpid(), serialized.nbytes


if __name__ == "__main__":
    method, model, outdir = sys.argv[1:4]
    jobs = [(model, os.path.join(outdir, f"worker{i}.engine")) for i in range(2)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        results = pool.map(build, jobs, chunksize=1)
    print("workers:", " ".join(str(pid) for pid, _ in results))
