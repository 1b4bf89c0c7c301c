"""What the app is given to show: the paths, the build options, how it looks, the settings of the
session it builds in, and where its view is kept between runs (`cli.commands.app.app_config` reads
them from the command line)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core.build.driver import BuildOptions
from ..core.execution.session_settings import SessionSettings


@dataclass
class AppConfig:
    paths: list[str] = field(default_factory=lambda: ["."])
    options: BuildOptions = field(default_factory=BuildOptions)
    theme: str | None = None
    log_level: str | None = None  # the log pane's level at start (a label of `log_level.LOG_LEVELS`);
    # None: as the user left it (`view_file`), else info
    gpu_interval: float = 1.0
    watch: bool = False
    keys: dict[str, str] = field(default_factory=dict)  # the config file's [keys]: action -> key
    notify_after: float = 10.0  # seconds: a build that ran longer rings the bell when it ends (0: never)
    session: SessionSettings = field(default_factory=SessionSettings)
    demo: bool = False  # `--demo`: paths[0] is an empty directory the app writes the sample models into
    view_file: Path | None = None  # where the view is kept between runs (`view_prefs`); None: not kept
