"""The log pane's level (`l`), and what choosing it means for the builds that start afterwards.

The pane filters what a build recorded. A build records TensorRT's lines from INFO up, and its
verbose lines only if it asked for them as it started (`BuildOptions.verbose`: its logger, in its own
process where it has one, drops them otherwise, cheaply). So choosing verbose cannot show verbose
lines of a build already running: the builds that start from then on are asked for them.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.build.driver import BuildOptions
from ..core.build.events import Severity

LOG_LEVELS = (Severity.WARNING, Severity.INFO, Severity.VERBOSE, Severity.ERROR)


def options_at(options: BuildOptions, level: Severity) -> BuildOptions:
    """The options a build that starts now gets, with the pane at `level`."""
    return replace(options, verbose=True) if level is Severity.VERBOSE and not options.verbose else options


def level_note(level: Severity, options: BuildOptions, served: bool) -> str | None:
    """What to tell the user on choosing `level`, where the builds' own recording matters."""
    if level is not Severity.VERBOSE or options.verbose:
        return None
    if served:
        return ("Verbose lines: this tab's builds run on the build server, which records them only if it"
                " was started with --verbose")
    return "Verbose lines: recorded by builds that start from now (those already running record from INFO up)"
