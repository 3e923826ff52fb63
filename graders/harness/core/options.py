"""Command-line options that several commands share, each defined once as an argparse parent parser.

    parser = argparse.ArgumentParser(prog=..., parents=[exercise_option(), lang_option()])

`--exercise ID` (repeatable; `args.exercise` is None or a list) and `--lang zh|en` (`args.lang`; None
means the locale's, see `i18n.default_lang`). A command words the help for what it does with them.
"""

from __future__ import annotations

import argparse

from .i18n import LANGS


def exercise_option(help: str = "only this exercise (repeatable)") -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--exercise", action="append", default=None, metavar="ID", help=help)
    return parent


def lang_option(
    help: str = "language of the output (default: from the locale)",
    default: str | None = None,
    required: bool = False,
) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--lang", choices=list(LANGS), default=default, required=required, help=help)
    return parent
