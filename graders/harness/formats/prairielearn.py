"""PrairieLearn's external grader `results.json`, rendered from a `SubmissionResult`.

Field rules (PrairieLearn external grading docs): `gradable` (bool; false means "invalid, not
gradable": no points awarded or lost, no attempt used), `score` in [0, 1] (required when
gradable), `message`, `output`, `format_errors` (strings; set when not gradable), `tests[]` with
`name`, `description`, `points`, `max_points`, `message`, `output`. The whole file must stay
under 1 MB, so outputs are trimmed if it would not.
"""

from __future__ import annotations

import json

from ..core.i18n import say
from .gradescope import printed_output
from .result import SubmissionResult

MAX_BYTES = 1_000_000


def results(result: SubmissionResult) -> dict:
    lang = result.lang
    if result.report is None:
        reason = result.reason or result.problem or "?"
        return {
            "gradable": False,
            "message": say("lms.ungradable", reason=reason)(lang),
            "format_errors": [reason],
            "output": "",
            "tests": [],
        }
    report = result.report
    tests = []
    for exercise in report.exercises:
        for check in exercise.checks:
            message = check.message
            if check.diagnosis_message:
                prefix = say("report.diagnosis_prefix")(lang)
                message = f"{message}\n{prefix} {check.diagnosis_sentence(lang)}".strip()
            tests.append(
                {
                    "name": f"{exercise.id}/{check.id}",
                    "description": check.title,
                    "points": float(check.score),
                    "max_points": float(check.max_score),
                    "message": message,
                    "output": check.student_traceback,
                }
            )
    score = report.score / report.max_score if report.max_score > 0 else 0.0
    return {
        "gradable": True,
        "score": min(max(score, 0.0), 1.0),
        "message": say("lms.summary", score=report.score, max_score=report.max_score, seed=report.seed)(lang),
        "output": "\n\n".join(t for e in report.exercises if (t := printed_output(e, lang))),
        "format_errors": [],
        "tests": tests,
    }


def render(result: SubmissionResult) -> str:
    data = results(result)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if len(text.encode()) > MAX_BYTES:  # keep under PrairieLearn's limit: drop the bulky outputs first
        data["output"] = data["output"][:10_000]
        for test in data["tests"]:
            test["output"] = test["output"][:2_000]
            test["message"] = test["message"][:2_000]
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return text
