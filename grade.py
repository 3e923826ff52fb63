#!/usr/bin/env python3
"""Grade your attention-lesson exercises: `python grade.py` (see README.md, or --help)."""

import sys

from graders.harness.sandbox.launch import defer_interrupts, exit_now, prestart  # standard library only

# cli.COMMANDS: these grade nothing here
COMMANDS = ("schema", "validate", "new", "build", "batch", "merge", "similarity")

if __name__ == "__main__":
    argv = sys.argv[1:]
    if (
        not argv
        or argv[0] not in COMMANDS
        and "-h" not in argv
        and "--help" not in argv
    ):
        # the zygote imports torch while this process imports torch and pytest; a Ctrl-C meanwhile
        # is noted and raised once grading starts (cli.interruptible), after every import
        defer_interrupts()
        prestart()

    try:
        from graders.harness.cli import main

        status = main()
    except KeyboardInterrupt:  # Ctrl-C while starting, before grading installed its own handler
        from graders.harness.core.i18n import lang_of, say

        print(say("cli.interrupted")(lang_of(argv)), file=sys.stderr)
        status = 130
    if not isinstance(status, int):
        sys.exit(status)
    exit_now(status)  # every report written, the sandbox stopped: skip the interpreter's teardown
