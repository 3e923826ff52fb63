#!/usr/bin/env python3
"""Grade your attention-lesson exercises: `python grade.py` (see README.md, or --help)."""

import sys

from graders.harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
