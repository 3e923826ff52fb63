"""The trusted side's caps on a report: whatever a submission does, its report has a bounded size
and holds only inert text.

Every string a submission can influence (messages, tracebacks, diagnoses with their parameters,
printed output, the submission's own name) is cut to a cap set here, never to one the worker
claims to apply, and cleaned by `inert.clean`; heatmaps are limited in number and size. The caps
give the bound stated in the README: `report_bound(n_exercises, n_checks)` bytes of JSON at most.
"""

from __future__ import annotations

from . import inert
from .models import CheckResult, ExerciseResult, Heatmap, Report

MESSAGE_CHARS = 2000
DIAGNOSIS_CHARS = 1000
TRACEBACK_CHARS = 4000
OUTPUT_CHARS = 16_000
NAME_CHARS = 300
HEATMAPS_PER_CHECK = 2
HEATMAP_CELLS = 400
CUT = " […]"


def cap(text: str, limit: int) -> str:
    """`text` cleaned (see `inert.clean`) and cut to `limit` characters, marked where it was cut."""
    text = inert.clean(text)
    return text if len(text) <= limit else text[: limit - len(CUT)] + CUT


def _cells(matrix: list[list[float]]) -> int:
    return sum(len(row) for row in matrix)


def _heatmaps(maps: list[Heatmap]) -> list[Heatmap]:
    kept = [h for h in maps if _cells(h.got) <= HEATMAP_CELLS and _cells(h.expected) <= HEATMAP_CELLS]
    return [h.model_copy(update={"label": cap(h.label, 200)}) for h in kept[:HEATMAPS_PER_CHECK]]


def _check(check: CheckResult) -> CheckResult:
    update = {
        "message": cap(check.message, MESSAGE_CHARS),
        "student_traceback": cap(check.student_traceback, TRACEBACK_CHARS),
        "title": cap(check.title, 500),
        "heatmaps": _heatmaps(check.heatmaps),
    }
    if check.diagnosis_message is not None:
        update["diagnosis_message"] = cap(check.diagnosis_message, DIAGNOSIS_CHARS)
    return check.model_copy(update=update)


def _exercise(exercise: ExerciseResult) -> ExerciseResult:
    output = inert.clean(exercise.output)
    dropped = exercise.output_dropped
    if len(output) > OUTPUT_CHARS:
        dropped += len(output[OUTPUT_CHARS:].encode())
        output = output[:OUTPUT_CHARS]
    return exercise.model_copy(
        update={
            "checks": [_check(c) for c in exercise.checks],
            "output": output,
            "output_dropped": dropped,
            "title": cap(exercise.title, 500),
            "stopped": exercise.stopped
            and exercise.stopped.model_copy(update={"message": cap(exercise.stopped.message, MESSAGE_CHARS)}),
        }
    )


def bound_report(report: Report) -> Report:
    """`report` with every string cleaned and capped and its heatmaps limited (idempotent)."""
    return report.model_copy(
        update={
            "submission": cap(inert.display_name(report.submission), NAME_CHARS),
            "exercises": [_exercise(e) for e in report.exercises],
        }
    )


def report_bound(exercises: int, checks: int) -> int:
    """An upper bound, in bytes, of a bounded report's JSON (`model_dump_json(indent=2)`).

    A character takes at most 6 bytes in JSON (an escape such as \\u001b is already replaced by
    the 4 visible characters of `\\x1b`, each ≤ 3 bytes in UTF-8 or 6 escaped); a heatmap cell is a
    float of at most 24 characters plus indentation."""
    per_char = 6
    text = (MESSAGE_CHARS + DIAGNOSIS_CHARS + TRACEBACK_CHARS + 500 + 200) * per_char
    heatmap = HEATMAPS_PER_CHECK * (2 * HEATMAP_CELLS * 40 + 200 * per_char + 200)
    per_check = text + heatmap + 1000
    per_exercise = (OUTPUT_CHARS + 500 + MESSAGE_CHARS) * per_char + 1200
    return 4000 + NAME_CHARS * per_char + exercises * per_exercise + checks * per_check
