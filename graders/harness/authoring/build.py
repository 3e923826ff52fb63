"""`python grade.py build KIND DIR`: write what a course hands out.

    student      statements, stubs, visible checks, the harness (`distribution`)
    autograder   everything an LMS needs to grade: all checks, the reference (`distribution`)
    gradescope   a ready Gradescope autograder zip (`authoring.gradescope_build`)

Each builder refuses what `validate` rejects and writes nothing unless the whole build can be made.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ..core.i18n import default_lang
from ..core.options import exercise_option, lang_option
from ..core.project import Project
from .distribution import DistributionError, write_distribution
from .gradescope_build import write_gradescope_zip

Builder = Callable[[Project, Path, "list[str] | None"], list[Path]]

BUILDERS: dict[str, Builder] = {
    "student": lambda project, dest, only: write_distribution(project, dest, "student", exercises=only),
    "autograder": lambda project, dest, only: write_distribution(project, dest, "autograder", exercises=only),
    "gradescope": lambda project, dest, only: write_gradescope_zip(project, dest, exercises=only),
}


def cmd_build(argv: list[str], project: Project) -> int:
    """`build KIND DIR`: write a distribution; 0 when written, 2 on bad usage or a project problem."""
    parser = argparse.ArgumentParser(
        prog="grade.py build",
        description="Write a distribution of this course: student (statements, stubs, visible checks, "
        "harness; no reference, no hidden check), autograder (everything an LMS needs to grade) or "
        "gradescope (a Gradescope autograder zip).",
        parents=[exercise_option(), lang_option("language of the notebooks")],
    )
    parser.add_argument("kind", choices=sorted(BUILDERS), help="which distribution")
    parser.add_argument("dest", type=Path, help="a new or empty folder")
    parser.add_argument(
        "--notebook",
        action="store_true",
        help="student build: also a Jupyter notebook per exercise (notebooks/<id>.ipynb) that grades itself",
    )
    args = parser.parse_args(argv)
    if args.notebook and args.kind != "student":
        parser.error("--notebook goes with the student build")
    try:
        if args.notebook:
            lang = args.lang or default_lang()
            written = write_distribution(
                project, args.dest, "student", exercises=args.exercise, notebooks=lang
            )
        else:
            written = BUILDERS[args.kind](project, args.dest, args.exercise)
    except DistributionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.kind} distribution: {len(written)} files written to {args.dest}")
    return 0
