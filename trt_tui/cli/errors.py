"""What every part of the CLI shares about failing: the exit codes and the usage error.

Every user error ends in one line on stderr naming the file and the reason, and an exit code:
0 everything built, 1 a model failed to parse or build, 2 usage or unreadable input, 3 a CI gate tripped
(`trt-tui build --baseline`, `--require-reproducible`: every build succeeded), 130 cancelled.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
EXIT_GATE = 3


class UsageError(Exception):
    """Bad options or unreadable input: exit 2 with the message."""
