"""Every exercise is complete and fair, proved by `validate` itself (the same code as
`python grade.py validate --jobs 2`, so CI grades each reference, stub and mutant once per seed, not twice):
reference = full marks under several seeds, stub = zero, every mutant caught and named, each mutant
failing exactly the checks it declares, and the same score under every seed."""

from __future__ import annotations

import pytest
from conftest import EXERCISES, PROJECT

from graders.harness.authoring.validate import DEFAULT_SEEDS, render_findings, validate_project


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


@pytest.fixture(scope="module")
def verdicts():
    """Every exercise validated once, two side by side (`validate --jobs 2`): the suite's largest part."""
    return {v.id: v for v in validate_project(PROJECT, EXERCISES, seeds=DEFAULT_SEEDS, jobs=2)}


@pytest.mark.parametrize("exercise", EXERCISES)
def test_exercise_is_fair(exercise, verdicts):
    verdict = verdicts[exercise]
    assert verdict.ok, render_findings([verdict], "en")
    assert verdict.reference_score == verdict.max_score > 0 and verdict.stub_score == 0
    assert verdict.mutants_total >= 10
    assert verdict.mutants_caught == verdict.mutants_named == verdict.mutants_total
