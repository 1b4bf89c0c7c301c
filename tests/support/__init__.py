"""Plain code the tests share, one concern a module; test modules import it (`from support.events
import Recorder`: `tests/` is on `sys.path`, pyproject's `pythonpath`) and never import one another.
Fixtures stay in `conftest.py`: tests/conftest.py for every lane, and one per lane for that lane's own.

- `events`: a subscriber that records what a build reports, and events made into phase trees
- `waiting`: waiting for a condition, on a thread or under the app's pilot
- `commands`: trt-tui run in this process or as a command, and what it printed (JSON lines, one error)
- `terminal`: trt-tui on a pseudo-terminal
- `replay`: the replay test double (a recorded trace through the real monitor)
- `scripted_build`: a build that reports one event of every type, for the transports
- `app`: the app under the pilot: made on a directory, filtered, held mid-build, read as drawn
- `serve`: `trt-tui serve` as a user starts it
- `fake_gpu`: NVML's GPUs, faked for the schedulers and panels of machines without them
- `machine`: what this machine allows (a memory cgroup v1) and its processes' groups
- `models`: an ONNX model edited in place, the samples' shapes
- `history`: records written into a history, and one an older trt-tui wrote
"""
