"""Mutant submissions: known mistakes an exercise's grader must catch and name.

`tests/mutants/<exercise>/mutants.toml` declares each mutant; its source is
`tests/mutants/<exercise>/<name>.py`, a whole submission file for that exercise::

    [no_scaling]
    description = "scores not divided by √d_k"
    expect = { sdpa_scaling = "no_scaling", sdpa_matches_oracle = "no_scaling" }

`expect` lists *exactly* the checks the mutant fails: each one maps to the diagnosis it must get
("" where the mistake cannot be named but must still lose the points). A mutant that fails any
other check shows a check whose title holds losing points, and `validate` rejects it: a check
fails only when its title is false, and one mistake costs only the checks it makes false.
"""

from __future__ import annotations

from pathlib import Path

import tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.models import Report
from ..core.project import ManifestError, Project


class MutantSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=1)
    expect: dict[str, str] = Field(
        min_length=1, description="check id -> expected diagnosis id ('' for none)"
    )
    origin: str | None = Field(None, description="where the mistake was seen (a tracker or forum address)")


class Mutant(BaseModel):
    exercise: str
    name: str
    source: Path
    spec: MutantSpec


def mutants_dir(project: Project) -> Path:
    return project.root / "tests" / "mutants"


def load_mutants(project: Project, exercise_id: str) -> list[Mutant]:
    folder = mutants_dir(project) / exercise_id
    path = folder / "mutants.toml"
    if not path.is_file():
        return []
    shown = path.relative_to(project.root)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError([f"{shown}: not valid TOML: {exc}"]) from None
    out, lines = [], []
    for name, raw in data.items():
        try:
            spec = MutantSpec.model_validate(raw)
        except ValidationError as exc:
            lines += [f"{shown}: {name}.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            continue
        source = folder / f"{name}.py"
        if not source.is_file():
            lines.append(f"{shown}: {name}: source file {source.name} is missing")
            continue
        out.append(Mutant(exercise=exercise_id, name=name, source=source, spec=spec))
    if lines:
        raise ManifestError(lines)
    return out


def mutant_problems(mutant: Mutant, report: Report) -> list[str]:
    """Why a graded mutant does not meet its declaration (empty when it fails exactly the declared
    checks, each with its declared diagnosis)."""
    exercise = next(e for e in report.exercises if e.id == mutant.exercise)
    checks = {c.id: c for c in exercise.checks}
    problems = []
    if exercise.score >= exercise.max_score:
        problems.append("scored full marks")
    for check_id, diagnosis in mutant.spec.expect.items():
        result = checks.get(check_id)
        if result is None:
            problems.append(f"{check_id}: no such check")
        elif result.status == "passed":
            problems.append(f"{check_id}: passed")
        elif result.status == "error":
            problems.append(f"{check_id}: grader error: {result.message}")
        elif diagnosis and result.diagnosis != diagnosis:
            problems.append(
                f"{check_id}: diagnosis {result.diagnosis!r}, expected {diagnosis!r} ({result.message})"
            )
    for check in exercise.checks:
        if check.status != "passed" and check.id not in mutant.spec.expect:
            problems.append(
                f"{check.id}: failed ({check.status}, diagnosis {check.diagnosis!r}) but is not declared:"
                f" does its title hold for this mistake? ({check.message})"
            )
    return problems


def failing_checks(report: Report, exercise_id: str) -> dict[str, str]:
    """check id -> "<status>:<diagnosis>" for every check of `exercise_id` that did not pass."""
    exercise = next(e for e in report.exercises if e.id == exercise_id)
    return {c.id: f"{c.status}:{c.diagnosis or ''}" for c in exercise.checks if c.status != "passed"}
