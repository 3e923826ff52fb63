"""Pydantic models for everything that crosses a file or a process: manifests and results.

Manifests (`exercise.toml`) reject unknown keys. Results form one tree, check -> exercise ->
report, from which every report format (terminal, HTML, Markdown, JSON, LMS formats) is rendered.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from .i18n import Lang, Text, say

Status = Literal["passed", "failed", "error", "timeout", "not_implemented"]
Visibility = Literal["visible", "hidden"]
ID_PATTERN = r"^[a-z][a-z0-9_]*$"

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---------------------------------------------------------------- manifests


class CheckSpec(_Strict):
    """One check: a pytest test in `graders/test_<exercise>.py` marked `@check("<id>")`."""

    id: str = Field(pattern=ID_PATTERN, description="stable id, unique within the exercise")
    points: float = Field(gt=0, description="points awarded when the check passes")
    title: Text = Field(description="what the check verifies, one line")
    visibility: Visibility = Field("visible", description="hidden checks run only in LMS grading")

    def runs(self, run_hidden: bool) -> bool:
        """Does this check run (and count) where hidden checks do (`run_hidden`) or do not?"""
        return run_hidden or self.visibility != "hidden"


class DiagnosisSpec(_Strict):
    """A known mistake the grader can recognise and name."""

    message: Text = Field(description="what the mistake is, in plain words; may use {params}")
    section: Text | None = Field(None, description="statement section that explains the idea")


class ExerciseManifest(_Strict):
    """`exercises/<id>/exercise.toml`."""

    id: str = Field(pattern=ID_PATTERN)
    title: Text
    order: int = Field(ge=0, description="position in reports and listings")
    exports: list[str] = Field(min_length=1, description="names the student's module must define")
    call_seconds: float = Field(10.0, gt=0, le=120, description="deadline for one call into student code")
    banned: list[str] = Field(
        default_factory=list,
        description="dotted names a submission must not use (the built-by-hand rule: see harness.banned)",
    )
    checks: list[CheckSpec] = Field(min_length=1)
    diagnoses: dict[str, DiagnosisSpec] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _unique_checks(self) -> ExerciseManifest:
        ids = [c.id for c in self.checks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate check ids: {', '.join(dupes)}")
        bad = [d for d in self.diagnoses if not d.replace("_", "a").isalnum() or not d[:1].isalpha()]
        if bad:
            raise ValueError(f"diagnosis ids must be lowercase identifiers: {', '.join(bad)}")
        return self

    @property
    def max_score(self) -> float:
        """Every check's points: what the exercise is worth where hidden checks run."""
        return self.max_score_for(run_hidden=True)

    def graded_checks(self, run_hidden: bool) -> list[CheckSpec]:
        """The checks that run and count: all of them, or the visible ones in a student build."""
        return [c for c in self.checks if c.runs(run_hidden)]

    def max_score_for(self, run_hidden: bool) -> float:
        return sum(c.points for c in self.graded_checks(run_hidden))

    def check(self, check_id: str) -> CheckSpec:
        return next(c for c in self.checks if c.id == check_id)


# ---------------------------------------------------------------- results


# A student's matrix may hold NaN or ±inf: JSON has no such numbers, so they are written as the
# strings "NaN", "Infinity", "-Infinity" (`ser_json_inf_nan`) and read back as floats.
Cell = Annotated[
    float,
    WithJsonSchema({"anyOf": [{"type": "number"}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}),
]


class Heatmap(_Strict):
    """A matrix the student produced beside the one expected (attention weights)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

    label: str
    got: list[list[Cell]]
    expected: list[list[Cell]]


class CheckResult(_Strict):
    id: str
    title: str
    status: Status
    score: float
    max_score: float
    message: str = Field("", description="feedback: what was expected and what came back")
    diagnosis: str | None = Field(None, description="id of the recognised mistake, if any")
    diagnosis_message: str | None = Field(None, description="the mistake in plain words")
    section: str | None = Field(None, description="the statement's section that explains the mistake")
    visibility: Visibility = "visible"
    student_traceback: str = ""
    heatmaps: list[Heatmap] = Field(default_factory=list)

    def diagnosis_sentence(self, lang: Lang) -> str:
        """The diagnosis and where the statement explains it, as one line of plain text."""
        see = say("report.see_statement", section=self.section)(lang) if self.section else ""
        return " ".join(part for part in (self.diagnosis_message or "", see) if part)


class Cause(_Strict):
    """One recognised mistake and every check it failed: reports show it once, with its fix."""

    diagnosis: str = Field(description="id of the mistake (a diagnosis of the exercise)")
    message: str = Field(description="the mistake in plain words")
    section: str | None = Field(None, description="the statement's section that explains it")
    checks: list[str] = Field(description="ids of the checks it failed, in report order")
    points: float = Field(description="points those checks lost")


class Course(_Strict):
    """The course a project grades (`course.toml` at its root): reports and hand-outs name it."""

    title: Text = Field(description="the course's name, e.g. the lesson's title")
    lesson: int | None = Field(None, description="the lesson's number, where the course has one")


GENERIC_COURSE = Course(title=Text(zh="课程练习", en="Course exercises"))


StopKind = Literal["file", "crash", "timeout", "grader"]


class Stopped(_Strict):
    """Why some checks of an exercise could not judge the code at all: the file did not load
    (missing, syntax error, a refused import), the code crashed its process or ran out of time,
    or the grader itself failed. The first such check's reason; batch reports list these."""

    kind: StopKind
    check: str = Field(description="the first check it stopped")
    message: str


class ExerciseResult(_Strict):
    id: str
    title: str
    score: float
    max_score: float
    checks: list[CheckResult]
    causes: list[Cause] = Field(
        default_factory=list, description="the recognised mistakes behind the failed checks, one entry each"
    )
    output: str = Field("", description="what the student's code printed (capped)")
    output_dropped: int = Field(0, description="bytes of output dropped over the cap")
    stopped: Stopped | None = Field(None, description="set when some checks could not judge the code")

    def shared_causes(self) -> list[Cause]:
        """The causes behind more than one failed check: reports show each once, above its checks."""
        return [c for c in self.causes if len(c.checks) > 1]

    def shared_cause_of(self, check: CheckResult) -> Cause | None:
        """The shared cause a failed check belongs to, if any."""
        return next((c for c in self.shared_causes() if check.id in c.checks), None)

    def repeats_earlier(self, check: CheckResult) -> bool:
        """Does this check only repeat what an earlier check of its shared cause already says (the
        same message, e.g. one exception raised in every check)? Reports then show it once."""
        cause = self.shared_cause_of(check)
        if cause is None or cause.checks[0] == check.id:
            return False
        first = next(c for c in self.checks if c.id == cause.checks[0])
        return first.message == check.message and first.student_traceback == check.student_traceback


class Report(_Strict):
    schema_version: int = SCHEMA_VERSION
    submission: str
    score: float
    max_score: float
    seed: int
    lang: Lang
    isolation: list[str] = Field(default_factory=list, description="protections active in the sandbox")
    isolation_level: Literal["full", "partial", "minimal", "none"] = Field(
        "none",
        description="summary of `isolation`: full (root), partial (user namespaces), minimal (rlimits)",
    )
    hidden_checks_skipped: bool = Field(False, description="hidden checks were not run (student build)")
    exercises: list[ExerciseResult]
