"""LMS pipelines: batch grading results and the formats learning platforms read.

`render(report, fmt)` extends `reports.render` with `gradescope`, `prairielearn` and `junit`, so
`grade.py --format ...` and `grade.py batch` share one renderer per format. Each format is
rendered from a `SubmissionResult` (a `Report`, or the reason there is none).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.intake import Refusal, require_exercise_files
from ..core.models import Report
from ..core.project import Project
from . import gradescope, junit, prairielearn
from .result import SubmissionResult

RENDERERS: dict[str, Callable[[SubmissionResult], str]] = {
    "gradescope": gradescope.render,
    "prairielearn": prairielearn.render,
    "junit": junit.render,
}
LMS_FORMATS = tuple(RENDERERS)
EXTENSIONS = {"gradescope": "json", "prairielearn": "json", "junit": "xml", "json": "json"}


def result_of(report: Report) -> SubmissionResult:
    """A single-submission report as a result; a folder holding no exercise file is ungradable."""
    result = SubmissionResult.from_report(report)
    folder = Path(report.submission)
    if folder.is_dir():
        try:
            require_exercise_files(folder, [e.id for e in report.exercises])
        except Refusal as refusal:
            return SubmissionResult.unscored(
                "refused", refusal.problem, refusal.text, student=result.student, source=result.source,
                seed=report.seed, lang=report.lang, max_score=report.max_score,
            )  # fmt: skip
    return result


def render(report: Report, fmt: str, color: bool = False, project: Project | None = None) -> str:
    """`report` in any format: the LMS ones here, the others (text, html, md, json) in `reports`."""
    if fmt in RENDERERS:
        return RENDERERS[fmt](result_of(report))
    from .reports import render as render_report

    return render_report(report, fmt, color=color, project=project)


__all__ = ["LMS_FORMATS", "RENDERERS", "SubmissionResult", "render", "result_of"]
