"""What the app is given to show: the paths, the build options, how it looks, and the settings of
the session it builds in (`cli.commands.app.app_config` reads them from the command line)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.build.driver import BuildOptions
from ..core.execution.session_settings import SessionSettings


@dataclass
class AppConfig:
    paths: list[str] = field(default_factory=lambda: ["."])
    options: BuildOptions = field(default_factory=BuildOptions)
    theme: str | None = None
    log_level: str = "info"  # the log pane's level at start (a label of `log_level.LOG_LEVELS`)
    gpu_interval: float = 1.0
    watch: bool = False
    keys: dict[str, str] = field(default_factory=dict)  # the config file's [keys]: action -> key
    notify_after: float = 10.0  # seconds: a build that ran longer rings the bell when it ends (0: never)
    session: SessionSettings = field(default_factory=SessionSettings)
