"""Grade one submission inside Gradescope's layout: the program behind `run_autograder`.

    python -m graders.harness.batch.autograder [--root /autograder] [--lang en|zh] [--seed N]

Gradescope unpacks the autograder zip into ROOT/source, puts the student's files in
ROOT/submission and reads ROOT/results/results.json. This grades the submission exactly as
`grade.py` does (all checks: the reference solutions are in the zip), finds the exercise files
also when the student uploaded them inside one folder, and always writes a results.json: a
submission without any exercise file, or a failure of the grader itself, gets score 0 and says why
(the traceback of a grader failure goes to stderr, which Gradescope shows the instructor only).
ROOT defaults to $AUTOGRADER_ROOT, else /autograder; the language to $GRADE_LANG, else English.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

from ..core.intake import Refusal, problem_text, require_exercise_files, submission_root
from ..core.options import lang_option
from ..core.project import default_project
from ..formats import gradescope
from ..formats.result import SubmissionResult, possible_score
from .store import write_atomic


def grade_submission(root: Path, lang: str, seed: int | None) -> SubmissionResult:
    import torch

    from ..core.runner import grade, new_seed

    torch.set_num_threads(1)
    start = time.perf_counter()
    seed = new_seed() if seed is None else seed
    project = default_project()
    manifests = project.load_manifests()
    run_hidden = project.runs_hidden
    who = {"student": "submission", "source": "submission"}
    try:
        ids = [m.id for m in manifests]
        folder = submission_root(root / "submission", ids)
        require_exercise_files(folder, ids)
        report = grade(project, folder, seed=seed, lang=lang, run_hidden=run_hidden)
    except Refusal as refusal:
        return SubmissionResult.unscored(
            "refused", refusal.problem, refusal.text, **who, seed=seed, lang=lang,
            max_score=possible_score(manifests, run_hidden), elapsed=time.perf_counter() - start,
        )  # fmt: skip
    return SubmissionResult.graded(report, **who, elapsed=time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="run_autograder",
        description=__doc__.splitlines()[0],
        parents=[lang_option(default=os.environ.get("GRADE_LANG") or "en")],
    )
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT") or "/autograder"))
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    results = args.root / "results" / "results.json"
    try:
        result = grade_submission(args.root, args.lang, args.seed)
    except Exception as exc:  # the grader failed: the student still gets a result that says so
        traceback.print_exc()
        detail = f"{type(exc).__name__}: {exc}"[:500]
        result = SubmissionResult.unscored(
            "error", "grader_failed", problem_text("grader_failed", detail=detail), student="submission",
            source="submission", seed=args.seed or 0, lang=args.lang, max_score=0.0,
        )  # fmt: skip
    write_atomic(results, gradescope.render(result))
    print(f"{result.status}: {result.score:g} / {result.max_score:g} (seed {result.seed}) -> {results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
