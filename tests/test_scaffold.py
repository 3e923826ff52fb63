"""`grade.py new <id>`: a complete, working scaffold that `validate` rejects until it is filled in."""

from __future__ import annotations

import pytest
import tomllib
from conftest import PROJECT

from graders.harness.authoring.scaffold import (
    EXAMPLE_CHECK,
    SCAFFOLD_MARKER,
    ScaffoldError,
    check_new_id,
    new_exercise,
    next_order,
)
from graders.harness.authoring.validate import validate_project
from graders.harness.cli import main
from graders.harness.core.models import ExerciseManifest
from graders.harness.core.project import Project

EID = "ex07_causal_mask"


def test_new_writes_the_four_files_two_statements_and_a_mutant(tmp_path, capsys):
    project = Project(tmp_path)
    assert main(["new", EID], project) == 0
    expected = [
        project.manifest_path(EID),
        project.statement_path(EID, "zh"),
        project.statement_path(EID, "en"),
        project.template_path(EID),
        project.reference_path(EID),
        project.grader_path(EID),
        tmp_path / "tests" / "mutants" / EID / "mutants.toml",
        tmp_path / "tests" / "mutants" / EID / "forgot_doubling.py",
    ]
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == sorted(expected)
    for path in expected[:6]:
        assert SCAFFOLD_MARKER in path.read_text(encoding="utf-8"), path
    out = capsys.readouterr().out
    assert f"created exercises/{EID}/exercise.toml" in out and "下一步" in out
    manifest = project.load_manifest(EID)  # a valid manifest, with the example check
    assert [c.id for c in manifest.checks] == [EXAMPLE_CHECK]
    assert manifest.exports == ["double"]
    for path in (project.template_path(EID), project.reference_path(EID), project.grader_path(EID)):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")


def test_validate_rejects_the_untouched_scaffold_but_it_works(tmp_path, pool):
    project = Project(tmp_path)
    new_exercise(project, EID)
    (verdict,) = validate_project(project, seeds=[5], pool=pool)
    found = [p("en") for p in verdict.problems]
    assert not verdict.ok
    assert sum(SCAFFOLD_MARKER in line for line in found) == 7  # 6 exercise files + mutants.toml
    assert (
        f"exercises/{EID}/exercise.toml: the scaffold's example check '{EXAMPLE_CHECK}' is still declared"
        in found
    )
    # everything else about the scaffold is a working example of a fair exercise
    assert len(found) == 8, found
    assert (verdict.reference_score, verdict.stub_score) == (1, 0)
    assert (verdict.mutants_total, verdict.mutants_caught, verdict.mutants_named) == (1, 1, 1)


def test_order_follows_the_existing_exercises(tmp_path):
    project = Project(tmp_path)
    new_exercise(project, "ex_a")
    new_exercise(project, "ex_b")
    assert [project.load_manifest(i).order for i in ("ex_a", "ex_b")] == [1, 2]
    assert next_order(PROJECT) == max(m.order for m in PROJECT.load_manifests()) + 1


def test_existing_id_is_refused(tmp_path, capsys):
    project = Project(tmp_path)
    assert main(["new", EID], project) == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["new", EID], project) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: exercise '{EID}' already exists")
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_existing_project_exercise_is_refused():
    for existing in PROJECT.exercise_ids():  # checked without writing anything into the real project
        with pytest.raises(ScaffoldError, match="already exists"):
            check_new_id(PROJECT, existing)


@pytest.mark.parametrize("bad", ["Ex05", "ex-05", "5ex", "ex05 demo", "class", "_ex", "ex05/../x"])
def test_bad_id_is_refused_with_one_line(tmp_path, capsys, bad):
    assert main(["new", bad], Project(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not a valid exercise id" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_manifest_template_matches_the_model():
    """The scaffold's manifest only uses keys the model knows (it would be rejected otherwise)."""
    from graders.harness.authoring.scaffold import EXAMPLE_DIAGNOSIS, MANIFEST

    text = MANIFEST.format(
        id="ex_x", marker=SCAFFOLD_MARKER, check=EXAMPLE_CHECK, diagnosis=EXAMPLE_DIAGNOSIS, order=3
    )
    manifest = ExerciseManifest.model_validate(tomllib.loads(text))
    assert manifest.diagnoses[EXAMPLE_DIAGNOSIS].section.en == "Task"
