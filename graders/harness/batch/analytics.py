"""Class analytics: what the whole class got right and which mistakes it shares.

`analyse` turns the batch's results into `ClassAnalytics` (saved as `analytics.json`); the class
report (`class_report.html`) is rendered from that same model through a Jinja template with
autoescape, so the page and the JSON always show the same figures. Score statistics cover graded
submissions only; refused ones and grader failures are counted, and they and every graded submission
with an exercise whose checks could not judge the code (did not load, crashed, timed out) are listed
with their reason.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from pathlib import Path

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from ..core.i18n import Lang, labels
from ..core.models import ExerciseManifest
from ..formats.result import SubmissionResult
from .similarity import Similarity

TEMPLATES = Path(__file__).resolve().parent.parent / "formats" / "reports" / "templates"
BINS = 10
_PARAM = re.compile(r"\{[^{}]*\}")


def class_message(manifest: ExerciseManifest | None, diagnosis: str, lang: Lang) -> str:
    """A diagnosis as the class sees it: the manifest's sentence, one student's values left out."""
    spec = manifest.diagnoses.get(diagnosis) if manifest else None
    return _PARAM.sub("…", spec.message(lang)) if spec else diagnosis


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Bin(_Model):
    low: float = Field(description="lower edge, percent of the maximum (inclusive)")
    high: float = Field(description="upper edge, percent (exclusive, except the last bin)")
    count: int


class DiagnosisCount(_Model):
    id: str
    message: str = Field(description="the mistake in plain words (the report language)")
    students: int = Field(description="how many students got this diagnosis")


class CheckStats(_Model):
    exercise: str
    id: str
    title: str
    visibility: str
    max_score: float
    attempted: int = Field(description="graded submissions that ran this check")
    passed: int
    pass_rate: float = Field(ge=0, le=1)
    statuses: dict[str, int]
    diagnoses: list[DiagnosisCount] = Field(description="most frequent first")


class ExerciseStats(_Model):
    id: str
    title: str
    max_score: float
    mean: float
    mean_fraction: float = Field(ge=0, le=1)
    full_marks: int


class Problem(_Model):
    student: str
    status: str
    problem: str | None
    reason: str


class ClassAnalytics(_Model):
    lang: Lang
    seed: int
    submissions: int
    graded: int
    refused: int
    errors: int
    max_score: float
    mean: float | None
    median: float | None
    stdev: float | None
    histogram: list[Bin]
    exercises: list[ExerciseStats]
    checks: list[CheckStats]
    misconceptions: list[DiagnosisCount] = Field(description="diagnoses across all checks, by students")
    problems: list[Problem]
    similarity: Similarity | None = Field(default=None, description="pairs sharing code (--similarity)")


def histogram(fractions: list[float], bins: int = BINS) -> list[Bin]:
    counts = [0] * bins
    for f in fractions:
        counts[min(int(f * bins), bins - 1) if f >= 0 else 0] += 1
    step = 100 / bins
    return [Bin(low=i * step, high=(i + 1) * step, count=c) for i, c in enumerate(counts)]


def _check_stats(
    manifest: ExerciseManifest, graded: list[SubmissionResult], lang: Lang, top: int
) -> list[CheckStats]:
    out = []
    for spec in manifest.checks:
        statuses: Counter[str] = Counter()
        diagnoses: Counter[str] = Counter()
        for result in graded:
            exercise = next((e for e in result.report.exercises if e.id == manifest.id), None)
            check = next((c for c in exercise.checks if c.id == spec.id), None) if exercise else None
            if check is None:
                continue
            statuses[check.status] += 1
            if check.diagnosis:
                diagnoses[check.diagnosis] += 1
        attempted = sum(statuses.values())
        out.append(
            CheckStats(
                exercise=manifest.id,
                id=spec.id,
                title=spec.title(lang),
                visibility=spec.visibility,
                max_score=spec.points,
                attempted=attempted,
                passed=statuses["passed"],
                pass_rate=statuses["passed"] / attempted if attempted else 0.0,
                statuses=dict(sorted(statuses.items())),
                diagnoses=[
                    DiagnosisCount(id=d, message=class_message(manifest, d, lang), students=n)
                    for d, n in diagnoses.most_common(top)
                ],
            )
        )
    return out


def _misconceptions(
    manifests: list[ExerciseManifest], graded: list[SubmissionResult], lang: Lang
) -> list[DiagnosisCount]:
    students: Counter[tuple[str, str]] = Counter()
    for result in graded:
        seen = {(e.id, c.diagnosis) for e in result.report.exercises for c in e.checks if c.diagnosis}
        students.update(seen)
    by_id = {m.id: m for m in manifests}
    out = []
    for (exercise, diagnosis), count in students.most_common():
        text = class_message(by_id.get(exercise), diagnosis, lang)
        out.append(DiagnosisCount(id=f"{exercise}/{diagnosis}", message=text, students=count))
    return out


def analyse(
    results: list[SubmissionResult],
    manifests: list[ExerciseManifest],
    seed: int,
    lang: Lang,
    top: int = 3,
    similarity: Similarity | None = None,
) -> ClassAnalytics:
    graded = [r for r in results if r.gradable]
    max_score = sum(m.max_score for m in manifests)
    totals = [r.score for r in graded]
    exercises = []
    for manifest in manifests:
        scores = [e.score for r in graded for e in r.report.exercises if e.id == manifest.id]
        mean = statistics.fmean(scores) if scores else 0.0
        exercises.append(
            ExerciseStats(
                id=manifest.id,
                title=manifest.title(lang),
                max_score=manifest.max_score,
                mean=mean,
                mean_fraction=min(mean / manifest.max_score, 1.0) if manifest.max_score else 0.0,
                full_marks=sum(1 for s in scores if s >= manifest.max_score),
            )
        )
    return ClassAnalytics(
        lang=lang,
        seed=seed,
        submissions=len(results),
        graded=len(graded),
        refused=sum(1 for r in results if r.status == "refused"),
        errors=sum(1 for r in results if r.status == "error"),
        max_score=max_score,
        mean=statistics.fmean(totals) if totals else None,
        median=statistics.median(totals) if totals else None,
        stdev=statistics.pstdev(totals) if totals else None,
        histogram=histogram([r.score / r.max_score if r.max_score else 0.0 for r in graded]),
        exercises=exercises,
        checks=[c for m in manifests for c in _check_stats(m, graded, lang, top)],
        misconceptions=_misconceptions(manifests, graded, lang),
        problems=[p for r in sorted(results, key=lambda r: r.student) for p in _problems(r)],
        similarity=similarity,
    )


def _problems(result: SubmissionResult) -> list[Problem]:
    """Why `result` is not fully graded: refused or failed as a whole, or graded with exercises
    whose checks could not judge the code (a file that did not load, a crash, a timeout)."""
    if not result.gradable:
        return [
            Problem(
                student=result.student, status=result.status, problem=result.problem, reason=result.reason
            )
        ]
    exercises = result.report.exercises if result.report is not None else []
    return [
        Problem(
            student=result.student,
            status=result.status,
            problem=f"{e.id}: {e.stopped.kind}",
            reason=f"{e.stopped.check}: {e.stopped.message}",
        )
        for e in exercises
        if e.stopped is not None
    ]


_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=jinja2.select_autoescape(["html.j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


_env.filters["pts"] = lambda value: f"{value:g}"


def render_html(analytics: ClassAnalytics) -> str:
    template = _env.get_template("class_report.html.j2")
    return template.render(a=analytics, t=labels(analytics.lang))
