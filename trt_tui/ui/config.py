"""What the app is given to run: the paths, the build options and how builds run (`cli.app_config`
reads it from the command line)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.build import BuildOptions
from ..core.executors import DEFAULT_CANCEL_GRACE
from ..core.memory_limit import MemoryLimit
from ..core.vitals import DEFAULT_VITALS, VitalsConfig


@dataclass
class AppConfig:
    paths: list[str] = field(default_factory=lambda: ["."])
    jobs: int = 2
    options: BuildOptions = field(default_factory=BuildOptions)
    executor: str | None = None
    cancel_grace: float = DEFAULT_CANCEL_GRACE
    theme: str | None = None
    log_level: str = "info"  # the log pane's level at start (a label of `log_level.LOG_LEVELS`)
    gpu_interval: float = 1.0
    watch: bool = False
    history: str | None = None  # None: $TRT_TUI_HISTORY or the user data directory
    trace: str | None = None
    cache: bool = True
    attach: str | None = None  # a build server's socket (`trt-tui serve`): view its builds, own none
    ray: dict | None = None  # the Ray executor's options, with executor "ray"
    vitals: VitalsConfig | None = DEFAULT_VITALS
    keys: dict[str, str] = field(default_factory=dict)  # the config file's [keys]: action -> key
    spare_memory: int | None = None  # the process executor's cap on its spare's heap reserve (None: 2 GiB)
    notify_after: float = 10.0  # seconds: a build that ran longer rings the bell when it ends (0: never)
    memory_limit: MemoryLimit | None = None  # each build process's limit (`core.memory_limit`)
    gpus: tuple[str, ...] | None = None  # the GPUs full-TensorRT builds take one each (`core.gpu_slots`)
