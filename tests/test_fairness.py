"""Every exercise has all its parts, and its mutants declare real checks and diagnoses.

The graded proof that each exercise is fair (the reference scores full marks under several seeds,
the stub zero, every mutant is caught and named and fails exactly the checks it declares, the
same code scores the same under every seed) is `python grade.py validate --jobs 2` itself, which
CI runs right after this suite (`.ci/run`): each reference, stub and mutant is graded once per seed
there, not a second time here. `tests/test_validate.py` proves that validate finds each way an
exercise can be unfair, on a small exercise of its own.
"""

from __future__ import annotations

import pytest
from conftest import EXERCISES, PROJECT

from graders.harness.authoring.mutants import load_mutants
from graders.harness.core.diagnoses import lookup


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
def test_mutants_declare_real_checks_and_diagnoses(exercise):
    manifest = PROJECT.load_manifest(exercise)
    mutants = load_mutants(PROJECT, exercise)
    assert len(mutants) >= 10, f"{exercise}: only {len(mutants)} mutants"
    checks = {c.id for c in manifest.checks}
    declared = set()
    for mutant in mutants:
        unknown = set(mutant.spec.expect) - checks
        assert not unknown, f"{mutant.name}: no such check in {exercise}: {sorted(unknown)}"
        for check_id, diagnosis in mutant.spec.expect.items():
            assert not diagnosis or lookup(manifest.diagnoses, diagnosis) is not None, (
                f"{mutant.name}: {check_id} expects {diagnosis!r}, which {exercise} does not declare"
            )
            declared.add(diagnosis)
    unexpected = set(manifest.diagnoses) - declared
    assert not unexpected, f"{exercise}: no mutant expects the diagnoses {sorted(unexpected)}"
