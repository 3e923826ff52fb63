"""Every exercise is complete and fair: reference = full marks, stub = zero, mutants caught and named."""

from __future__ import annotations

import pytest
from conftest import EXERCISES, PROJECT, reference_files, template_files

from graders.harness.mutants import load_mutants, mutant_problems

MUTANTS = [m for e in EXERCISES for m in load_mutants(PROJECT, e)]


@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_has_all_parts(exercise):
    manifest = PROJECT.load_manifest(exercise)
    for path in (
        PROJECT.template_path(exercise),
        PROJECT.reference_path(exercise),
        PROJECT.grader_path(exercise),
        PROJECT.statement_path(exercise, "zh"),
        PROJECT.statement_path(exercise, "en"),
    ):
        assert path.is_file(), f"{path} is missing"
        assert path.read_text(encoding="utf-8").strip(), f"{path} is empty"
    assert manifest.id == exercise


@pytest.mark.parametrize("exercise", EXERCISES)
@pytest.mark.parametrize("seed", [1, 20261129])
def test_reference_scores_full_marks(exercise, seed, grade_files):
    report = grade_files(reference_files([exercise]), exercises=[exercise], seed=seed)
    (result,) = report.exercises
    failed = [(c.id, c.status, c.message) for c in result.checks if c.status != "passed"]
    assert not failed
    assert result.score == result.max_score > 0


@pytest.mark.parametrize("exercise", EXERCISES)
def test_stub_scores_zero_on_every_check(exercise, grade_files):
    report = grade_files(template_files([exercise]), exercises=[exercise])
    (result,) = report.exercises
    assert result.score == 0
    assert [c.id for c in result.checks if c.status == "passed"] == []
    assert {c.status for c in result.checks} <= {"not_implemented", "failed"}


@pytest.mark.parametrize("mutant", MUTANTS, ids=[f"{m.exercise}/{m.name}" for m in MUTANTS])
def test_mutant_is_caught_and_named(mutant, grade_files):
    report = grade_files({f"{mutant.exercise}.py": mutant.source}, exercises=[mutant.exercise])
    assert mutant_problems(mutant, report) == []
