"""Gradescope's autograder `results.json`, rendered from a `SubmissionResult`.

Field rules (Gradescope autograder specification): top level `score` (number), `execution_time`
(seconds), `output` (text for the whole submission), `tests[]`; each test has `name`, `score`,
`max_score`, `status` ("passed" | "failed"), `output`, `output_format` ("text" | "html" |
"simple_format" | "md" | "ansi"), `visibility` ("hidden" | "after_due_date" | "after_published" |
"visible") and `tags` (strings). Hidden checks carry `after_published`: they count, and students
see them once the instructor publishes the grades.
"""

from __future__ import annotations

import json

from ..core.i18n import say
from ..core.models import CheckResult, ExerciseResult
from .result import SubmissionResult

VISIBILITY = {"visible": "visible", "hidden": "after_published"}


def check_output(check: CheckResult, lang: str) -> str:
    """Feedback for one check: the got/expected message, the named mistake, where the code failed."""
    parts = [check.message] if check.message else []
    if check.diagnosis_message:
        parts.append(f"{say('report.diagnosis_prefix')(lang)} {check.diagnosis_sentence(lang)}")
    if check.student_traceback:
        parts.append(check.student_traceback.rstrip())
    return "\n\n".join(parts)


def printed_output(exercise: ExerciseResult, lang: str) -> str:
    if not exercise.output and not exercise.output_dropped:
        return ""
    text = f"{say('lms.printed', exercise=exercise.id)(lang)}\n{exercise.output}"
    if exercise.output_dropped:
        text += "\n" + say("report.output_cut", dropped=exercise.output_dropped)(lang)
    return text


def results(result: SubmissionResult) -> dict:
    lang = result.lang
    summary = say("lms.summary", score=result.score, max_score=result.max_score, seed=result.seed)(lang)
    out: dict = {
        "score": float(result.score),
        "execution_time": round(result.elapsed, 3),
        "output": summary,
        "output_format": "text",
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "tests": [],
        "extra_data": {"student": result.student, "status": result.status, "seed": result.seed},
    }
    if result.report is None:
        out["output"] = say("lms.ungradable", reason=result.reason)(lang)
        out["extra_data"]["problem"] = result.problem
        return out
    printed = []
    for number, exercise in enumerate(result.report.exercises, start=1):
        if text := printed_output(exercise, lang):
            printed.append(text)
        for index, check in enumerate(exercise.checks, start=1):
            tags = [exercise.id, check.id, check.status] + ([check.diagnosis] if check.diagnosis else [])
            out["tests"].append(
                {
                    "name": f"{exercise.title}: {check.title}",
                    "number": f"{number}.{index}",
                    "score": float(check.score),
                    "max_score": float(check.max_score),
                    "status": "passed" if check.status == "passed" else "failed",
                    "output": check_output(check, lang),
                    "output_format": "text",
                    "visibility": VISIBILITY[check.visibility],
                    "tags": tags,
                }
            )
    if printed:
        out["output"] = "\n\n".join([summary, *printed])
    return out


def render(result: SubmissionResult) -> str:
    return json.dumps(results(result), indent=2, ensure_ascii=False) + "\n"
