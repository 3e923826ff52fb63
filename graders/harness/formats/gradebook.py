"""`gradebook.csv`: one row per student, one column per exercise, the total, and why if not graded.

Every submission gets a row, including those refused (bad zip, no files) or lost to a grader
failure: their scores are 0 and `reason` says what happened. Cells that a spreadsheet would run
as a formula (starting with = + - @) are quoted with a leading apostrophe, since student names
and reasons come from the submissions. Rows end in CR LF (RFC 4180), so that the writer quotes any
field holding a CR or an LF, and every text field is `inert.single_line`: one row per student
whatever a name holds.
"""

from __future__ import annotations

import csv
import io

from ..core import inert
from ..core.models import ExerciseManifest
from .result import SubmissionResult

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: str) -> str:
    value = inert.single_line(value)
    return "'" + value if value.startswith(FORMULA_START) else value


def header(manifests: list[ExerciseManifest]) -> list[str]:
    return ["student", "status", *[m.id for m in manifests], "total", "max_total", "seed", "reason"]


def row(result: SubmissionResult, manifests: list[ExerciseManifest]) -> list[str]:
    scores = {e.id: e.score for e in result.report.exercises} if result.report else {}
    max_total = result.max_score or sum(m.max_score for m in manifests)
    reason = result.reason.replace("\n", " ")
    return [
        safe_cell(result.student),
        result.status,
        *[f"{scores.get(m.id, 0.0):g}" for m in manifests],
        f"{result.score:g}",
        f"{max_total:g}",
        str(result.seed),
        safe_cell(reason),
    ]


def render(results: list[SubmissionResult], manifests: list[ExerciseManifest]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header(manifests))
    for result in sorted(results, key=lambda r: r.student):
        writer.writerow(row(result, manifests))
    return out.getvalue()
