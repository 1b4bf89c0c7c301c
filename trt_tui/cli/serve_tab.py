"""One browser tab's app process of `trt-tui serve` (`python -m trt_tui.cli.serve_tab SERVER_PID
APP_ARGS...`): the ordinary app with `--attach`, bound to die with its server first
(`serve.tab_lifetime`). `commands.serve.tab_command` writes this command line; the server only runs it.
"""

from __future__ import annotations

import sys

from ..serve.tab_lifetime import die_with


def main(argv: list[str]) -> int:
    if not die_with(int(argv[0])):
        return 1
    from .main import main as app_main

    return app_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
