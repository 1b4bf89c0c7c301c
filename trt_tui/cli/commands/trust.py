"""`trt-tui trust [DIR]` and `trt-tui trust --revoke [DIR]`: let a project's pyproject.toml set the
options that write, route or open something, or no longer (see `cli.trust`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import EXIT_OK, UsageError

HELP = "trust a project directory: its pyproject.toml may then set paths, executors and serve's address"


def options(t: argparse.ArgumentParser) -> None:
    t.add_argument("directory", nargs="?",
                   help="the project's directory (default: the one whose pyproject.toml applies here, else .)")
    t.add_argument("--revoke", action="store_true", help="no longer trust it")


def run(args) -> int:
    from ...core.files.printable import escaped
    from ..config_file import project_table
    from ..trust import how_to_trust, save, store_path, trusted_directories

    if args.directory is not None:
        directory = Path(args.directory).expanduser()
    elif (project := project_table(Path.cwd())) is not None:
        directory = project[0].parent
    else:
        directory = Path.cwd()
    if not directory.is_dir():
        raise UsageError(f"{directory}: not a directory")
    directory = directory.resolve()
    trusted = trusted_directories()
    if args.revoke:
        if directory not in trusted:
            line = f"{directory} was not trusted"
        else:
            save([d for d in trusted if d != directory])
            line = f"no longer trusted: {directory} (its pyproject.toml sets only harmless options again)"
    elif directory in trusted:
        line = f"already trusted: {directory}"
    else:
        save([*trusted, directory])
        line = (f"trusted: {directory}: its pyproject.toml's [tool.trt-tui] may now set any option"
                f" (kept in {store_path()}; undo: {how_to_trust(directory, revoke=True)})")
    print(f"trt-tui: {escaped(line)}", file=sys.stdout)
    return EXIT_OK
