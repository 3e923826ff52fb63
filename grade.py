#!/usr/bin/env python3
"""Grade your attention-lesson exercises: `python grade.py` (see README.md, or --help)."""

import sys

from graders.harness.sandbox.launch import prestart  # standard library only: torch is not loaded yet

if __name__ == "__main__":
    argv = sys.argv[1:]
    if (
        not argv
        or argv[0] not in ("schema", "validate", "new", "build", "batch")
        and "-h" not in argv
        and "--help" not in argv
    ):
        prestart()  # the zygote imports torch while this process imports torch and pytest

    try:
        from graders.harness.cli import main

        status = main()
    except KeyboardInterrupt:  # Ctrl-C while starting, before grading installed its own handler
        from graders.harness.i18n import lang_of, say

        print(say("interrupted")(lang_of(argv)), file=sys.stderr)
        status = 130
    sys.exit(status)
