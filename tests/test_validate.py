"""`grade.py validate`: it passes a fair exercise and names each way an exercise can be unfair.

The exercises here are scaffolds (`grade.py new`) in a temporary project, filled in and then
broken one way at a time; the project's own exercises get the static half of validate (the graded
half is what CI's `python grade.py validate --jobs 2` runs, after the suite).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import EXERCISES, PROJECT

from graders.harness.authoring.scaffold import EXAMPLE_CHECK, EXAMPLE_DIAGNOSIS, SCAFFOLD_MARKER, new_exercise
from graders.harness.authoring.validate import (
    ExerciseVerdict,
    render_findings,
    render_table,
    render_total,
    static_checks,
    validate_project,
)
from graders.harness.cli import main
from graders.harness.core.plugin import derive_seed
from graders.harness.core.project import Project

EID = "ex09_double"


def filled_scaffold(root: Path, exercise_id: str = EID) -> Project:
    """A project holding one scaffolded exercise with every placeholder filled in (a fair exercise)."""
    project = Project(root)
    for path in new_exercise(project, exercise_id):
        text = (
            path.read_text(encoding="utf-8").replace(SCAFFOLD_MARKER + ": ", "").replace(SCAFFOLD_MARKER, "")
        )
        text = text.replace(EXAMPLE_CHECK, "doubles").replace(EXAMPLE_DIAGNOSIS, "forgot_doubling")
        path.write_text(text, encoding="utf-8")
    return project


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def run(project: Project, pool, seeds=(1,)) -> ExerciseVerdict:
    (verdict,) = validate_project(project, seeds=seeds, pool=pool)
    return verdict


def problems(verdict: ExerciseVerdict) -> str:
    return "\n".join(p("en") for p in verdict.problems)


# ---------------------------------------------------------------- a fair exercise passes


def test_filled_scaffold_is_fair(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    verdict = run(project, pool, seeds=(1, 2))
    assert verdict.problems == [], problems(verdict)
    assert verdict.warnings == []
    assert (verdict.reference_score, verdict.stub_score, verdict.max_score) == (1, 0, 1)
    assert (verdict.mutants_total, verdict.mutants_caught, verdict.mutants_named) == (1, 1, 1)
    assert verdict.status == "ok"


def test_table_has_the_figures(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    verdicts = [run(project, pool)]
    table = render_table(verdicts, "en")
    header, rule, row = table.splitlines()
    assert header.split() == [
        "exercise",
        "reference",
        "stub",
        "mutants",
        "caught",
        "mutants",
        "named",
        "worst",
        "single",
        "mistake",
        "status",
    ]
    assert re.fullmatch(
        rf"{EID}\s+1/1 \(100%\)\s+0/1 \(0%\)\s+1/1 \(100%\)\s+1/1 \(100%\)\s+-1 \(forgot_doubling\)\s+ok", row
    ), row
    assert "caught 1/1 (100%), named 1/1 (100%)" in render_total(verdicts, "en")
    assert "变异体被抓到 1/1（100%）" in render_total(verdicts, "zh")
    assert render_findings(verdicts, "en") == ""


# ---------------------------------------------------------------- each way to be unfair


def test_reference_that_fails_is_reported_once_with_its_seeds(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.reference_path(EID), "return 2 * x", "return 3 * x")
    verdict = run(project, pool, seeds=(1, 2))
    assert verdict.reference_score == 0
    lines = [p("en") for p in verdict.problems if "reference" in p("en")]
    assert len(lines) == 1 and "seed 1, 2" in lines[0] and "'doubles' failed" in lines[0]


def test_stub_that_passes_a_check(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.template_path(EID), 'raise NotImplementedError("double")', "return 2 * x")
    verdict = run(project, pool)
    assert verdict.stub_score == 1
    assert "stub: check 'doubles' passed" in problems(verdict)


def test_mutant_that_is_not_caught(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    mutant = project.root / "tests" / "mutants" / EID / "forgot_doubling.py"
    edit(mutant, "return x\n", "return x + x\n")
    verdict = run(project, pool)
    assert (verdict.mutants_caught, verdict.mutants_named) == (0, 0)
    assert "mutant forgot_doubling: scored full marks" in problems(verdict)
    assert "diagnosis 'forgot_doubling': no mutant" in problems(verdict)


def test_a_score_that_moves_with_the_seed_is_a_problem(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    mutant = project.root / "tests" / "mutants" / EID / "forgot_doubling.py"
    # right only when the check's first input entry is positive: two seeds that draw opposite signs
    edit(mutant, "return x\n", "return 2 * x if x[0, 0] > 0 else x\n")

    def first_entry(seed: int) -> float:
        rng = torch.Generator().manual_seed(derive_seed(seed, EID, "doubles"))
        return torch.randn(3, 5, generator=rng)[0, 0].item()

    right = next(s for s in range(1, 50) if first_entry(s) > 0)
    wrong = next(s for s in range(1, 50) if first_entry(s) < 0)
    verdict = run(project, pool, seeds=(right, wrong))
    assert (
        f"mutant forgot_doubling: the result depends on the seed: seed {right} scores 1, seed {wrong} "
        "scores 0 (doubles passed → failed:forgot_doubling)" in problems(verdict)
    ), problems(verdict)
    assert verdict.status != "ok"


def test_mutant_caught_but_misnamed(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    mutant = project.root / "tests" / "mutants" / EID / "forgot_doubling.py"
    edit(mutant, "return x\n", "return 4 * x\n")  # loses the point, matches no declared variant
    verdict = run(project, pool)
    assert (verdict.mutants_total, verdict.mutants_caught, verdict.mutants_named) == (1, 1, 0)
    assert "mutant forgot_doubling: doubles: diagnosis None, expected 'forgot_doubling'" in problems(verdict)


def test_mutant_expecting_an_undeclared_diagnosis(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.root / "tests" / "mutants" / EID / "mutants.toml", '= "forgot_doubling"', '= "halved"')
    assert "expects diagnosis 'halved', which the manifest does not declare" in problems(run(project, pool))


def test_diagnosis_no_mutant_produces(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    with project.manifest_path(EID).open("a", encoding="utf-8") as fh:
        fh.write('\n[diagnoses.tripled]\nmessage = { zh = "你乘了 3。", en = "You multiplied by 3." }\n')
    verdict = run(project, pool)
    assert problems(verdict).splitlines() == [
        "diagnosis 'tripled': no mutant in tests/mutants/ex09_double gets it "
        "(add a mutant or drop the diagnosis)"
    ]


def test_checks_and_tests_must_match_one_to_one(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    with project.manifest_path(EID).open("a", encoding="utf-8") as fh:
        fh.write(
            '\n[[checks]]\nid = "orphan"\npoints = 1\n'
            'title = { zh = "无人实现", en = "Nobody implements this" }\n'
        )
    with project.grader_path(EID).open("a", encoding="utf-8") as fh:
        fh.write(
            '\n\n@check("doubles")\ndef test_again(student):\n    pass\n'
            '\n\n@check("undeclared")\ndef test_undeclared(student):\n    pass\n'
            "\n\ndef test_unmarked(student):\n    pass\n"
        )
    found = problems(run(project, pool))
    assert "check 'orphan': no @check test in graders/test_ex09_double.py implements it" in found
    assert "check 'doubles': implemented by several tests: test_doubles, test_again" in found
    assert "test_undeclared is marked @check('undeclared') but the manifest declares no such check" in found
    assert "test_unmarked has no @check(id) marker" in found
    assert "reference (seed 1): check 'orphan'" not in found  # reported once, statically


def test_exports_checked_statically_in_stub_and_reference(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.template_path(EID), "def double(", "def doubled(")
    edit(project.grader_path(EID), "student.double(x)", "student.double(x) + 0 * student.helper(x)")
    found = problems(run(project, pool))
    assert (
        "student_template/ex09_double.py: does not define 'double' at module level (listed in exports)"
        in found
    )
    assert "reference/ex09_double.py" not in found.split("\n")[0]
    assert "uses student.helper but 'helper' is not in exports" in found


def test_visible_check_must_not_use_the_reference(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(
        project.grader_path(EID),
        "def test_doubles(student, rng):",
        "def test_doubles(student, rng, reference):",
    )
    assert "visible check 'doubles' (test_doubles) uses `reference`" in problems(run(project, pool))


def test_both_languages_and_same_placeholders(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.manifest_path(EID), 'en = " double(x) returns 2x"', 'en = " "')
    edit(
        project.manifest_path(EID),
        'en = "You returned x itself instead of 2x."',
        'en = "You returned {got}."',
    )
    found = problems(run(project, pool))
    assert "exercise.toml: checks.doubles.title: the en text is empty" in found
    assert (
        "diagnoses.forgot_doubling.message: zh and en use different placeholders (zh [], en ['got'])" in found
    )


def test_sections_and_chinese_are_warnings(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(
        project.manifest_path(EID),
        'section = { zh = "任务", en = "Task" }',
        'section = { zh = "任务", en = "Homework" }',
    )
    edit(project.manifest_path(EID), 'zh = " double(x) 返回 2x"', 'zh = "double(x) returns 2x"')
    verdict = run(project, pool)
    assert verdict.ok and verdict.status == "warn"
    warnings = "\n".join(w("en") for w in verdict.warnings)
    assert "section “Homework” is not a heading of exercises/ex09_double/statement.en.md" in warnings
    assert "checks.doubles.title: the zh text has no Chinese character" in warnings


def test_broken_grader_and_manifest_are_problems_not_tracebacks(tmp_path, pool):
    project = filled_scaffold(tmp_path)
    edit(project.grader_path(EID), "def test_doubles(student, rng):", "def test_doubles(student, rng:")
    found = problems(run(project, pool))
    assert found.startswith("graders/test_ex09_double.py:") and "syntax error" in found
    edit(project.manifest_path(EID), "points = 1", 'points = "many"\ncolour = "red"')
    found = problems(run(project, pool))
    assert "exercises/ex09_double/exercise.toml: checks.0.points:" in found
    assert "exercises/ex09_double/exercise.toml: checks.0.colour: Extra inputs are not permitted" in found


# ---------------------------------------------------------------- the command


def test_command_exit_status_and_output(tmp_path, capsys):
    project = filled_scaffold(tmp_path)
    assert main(["validate", "--seeds", "3", "--lang", "en"], project) == 0
    out = capsys.readouterr().out
    assert f"{EID}  1/1 (100%)" in out and "FAIL" not in out
    edit(project.template_path(EID), 'raise NotImplementedError("double")', "return 2 * x")
    assert main(["validate", "--seeds", "3", "--lang", "zh", "--exercise", EID], project) == 1
    out = capsys.readouterr().out
    assert "FAIL ex09_double: 模板：检查 'doubles' 通过了" in out and "合计：1 个练习，1 个不合格" in out


@pytest.mark.parametrize(
    "argv, says",
    [
        (["validate", "--exercise", "nope"], "unknown exercise 'nope'"),
        (["validate", "--seeds", "one,two"], "not a comma-separated list of integers"),
        (["validate", "--frobnicate"], "unrecognized arguments"),
    ],
)
def test_command_bad_usage_exits_2(tmp_path, capsys, argv, says):
    project = filled_scaffold(tmp_path)
    try:
        status = main(argv, project)
    except SystemExit as exc:  # argparse's own exit for bad arguments
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


# ---------------------------------------------------------------- the project's own exercises


@pytest.mark.parametrize("exercise", EXERCISES)
def test_project_exercises_pass_the_static_half(exercise):
    verdict = ExerciseVerdict(exercise)
    static_checks(PROJECT, PROJECT.load_manifest(exercise), verdict)
    assert problems(verdict) == ""
