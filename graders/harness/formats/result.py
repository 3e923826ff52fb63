"""The outcome of grading one submission in a batch: a `Report`, or the reason there is none.

This is what `RESULTS/results/<student>.json` holds and what every LMS format is rendered from.
A submission is `graded` (it has a report, whatever its score), `refused` (bad input: a zip
with a path outside it, no exercise files, ...: the student's side) or `error` (the grading
process died or ran out of time: the grader's side). Refused and error rows score zero but say why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..core import inert
from ..core.bounds import NAME_CHARS, bound_report, cap
from ..core.i18n import Lang, Text
from ..core.models import ExerciseManifest, Report

RESULT_SCHEMA_VERSION = 1
ResultStatus = Literal["graded", "refused", "error"]


class SubmissionResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = RESULT_SCHEMA_VERSION
    student: str = Field(description="the student's key: folder name, or zip name without .zip")
    source: str = Field(description="the entry in the submissions folder this came from")
    status: ResultStatus
    problem: str | None = Field(None, description="id of the reason there is no report (refused / error)")
    reason: str = Field("", description="that reason in the report language")
    seed: int = Field(description="the batch seed the checks were generated from")
    lang: Lang
    score: float = Field(ge=0)
    max_score: float = Field(ge=0)
    elapsed: float = Field(0.0, ge=0, description="seconds spent grading this submission")
    fingerprint: str = Field("", description="size/mtime digest of the source, to notice a re-upload")
    report: Report | None = None

    @model_validator(mode="after")
    def _inert(self) -> SubmissionResult:
        """Names, reasons and the report hold only inert, capped text, whoever built the result:
        a name or a zip member's name (in `reason`) is the student's, and may hold any bytes."""
        self.student = cap(inert.single_line(self.student), NAME_CHARS)
        self.source = cap(inert.display_name(self.source), NAME_CHARS)
        self.reason = cap(self.reason, 2000)
        if self.report is not None:
            self.report = bound_report(self.report)
        return self

    # Every result is made by one of the two constructors below: a report, or the reason there is none.

    @classmethod
    def graded(
        cls, report: Report, *, student: str, source: str, elapsed: float = 0.0, fingerprint: str = ""
    ) -> SubmissionResult:
        """A submission that has a report (whatever its score); the report is named after `source`."""
        if report.submission != source:
            report = report.model_copy(update={"submission": source})
        return cls(
            student=student, source=source, status="graded", seed=report.seed, lang=report.lang,
            score=report.score, max_score=report.max_score, elapsed=elapsed, fingerprint=fingerprint,
            report=report,
        )  # fmt: skip

    @classmethod
    def unscored(
        cls, status: Literal["refused", "error"], problem: str, reason: Text, *, student: str, source: str,
        seed: int, lang: Lang, max_score: float, elapsed: float = 0.0, fingerprint: str = "",
    ) -> SubmissionResult:  # fmt: skip
        """A submission with no report: zero points out of `max_score`, `reason` says why."""
        return cls(
            student=student, source=source, status=status, problem=problem, reason=reason(lang), seed=seed,
            lang=lang, score=0.0, max_score=max_score, elapsed=elapsed, fingerprint=fingerprint,
        )  # fmt: skip

    @classmethod
    def from_report(cls, report: Report, elapsed: float = 0.0) -> SubmissionResult:
        """Wrap a single-submission report (the `grade.py --format ...` path)."""
        name = Path(report.submission).name or report.submission
        return cls.graded(report, student=name, source=report.submission, elapsed=elapsed)

    @property
    def gradable(self) -> bool:
        return self.status == "graded" and self.report is not None


def possible_score(manifests: list[ExerciseManifest], run_hidden: bool) -> float:
    """The maximum a submission can score: every check, or only the visible ones in a student build."""
    return sum(m.max_score_for(run_hidden) for m in manifests)
