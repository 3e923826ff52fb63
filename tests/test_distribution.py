"""`grade.py build student|autograder DIR`: what each distribution holds, and what the student one must not.

The leak tests do not trust the builder's own bookkeeping: they recompute, from the project's
sources, every hidden check id, title and test name, every line only a hidden test or the data
only it uses contains, and every distinctive line of the reference solutions, and grep the whole
student tree for them. The student build is then run for real with `python grade.py`.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT

from graders.harness.authoring.distribution import (
    DistributionError,
    strip_hidden_grader,
    strip_hidden_manifest,
)
from graders.harness.authoring.scaffold import new_exercise
from graders.harness.authoring.validate import check_id_of, grader_tests
from graders.harness.cli import main
from graders.harness.core.project import Project
from graders.harness.core.runner import grade

MANIFESTS = PROJECT.load_manifests()
HIDDEN = {m.id: [c for c in m.checks if c.visibility == "hidden"] for m in MANIFESTS}
SUBPROCESS_SECONDS = 180


@pytest.fixture(scope="module")
def student_dist(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("dist") / "student"
    assert main(["build", "student", str(dest)], PROJECT) == 0
    return dest


@pytest.fixture(scope="module")
def autograder_dist(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("dist") / "autograder"
    assert main(["build", "autograder", str(dest)], PROJECT) == 0
    return dest


def tree_text(root: Path) -> dict[Path, str]:
    return {
        p: p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file()
    }


def run_grade(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "grade.py", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )


# ---------------------------------------------------------------- stripping, on a synthetic grader

GRADER = '''\
"""Checks."""

import torch

from graders.harness import check, expect

SHAPES = [(2, 3)]
SECRET_SHAPES = [(7, 11)]
SECRET_SCALE = 0.123457


def secret_inputs(rng):
    return torch.randn(*SECRET_SHAPES[0], generator=rng) * SECRET_SCALE


def shared(x):
    return x


@check("visible_one")
def test_visible_one(student, rng):
    x = shared(torch.randn(*SHAPES[0], generator=rng))
    expect.close(student.f(x), x, "f(x)")


# compares with the reference on surprise shapes
@check("hidden_one")
def test_hidden_one(student, reference, rng):
    x = shared(secret_inputs(rng))
    expect.close(student.f(x), reference.f(x), "f(x)")


@check("visible_two")
def test_visible_two(student):
    expect.true(student.f is not None, None)
'''

MANIFEST = """\
id = "ex_x"
# a comment that stays
order = 1
title = { zh = "题", en = "T" }
exports = ["f"]

[[checks]]
id = "visible_one"
points = 1
title = { zh = "公开一", en = "Visible one" }

[[checks]]
id = "hidden_one"
points = 2
visibility = "hidden"
title = { zh = "秘密", en = "Secret title" }

[[checks]]
id = "visible_two"
points = 1
title = { zh = "公开二", en = "Visible two" }

[diagnoses.wrong]
message = { zh = "错。", en = "Wrong." }
"""


def test_hidden_test_and_the_data_only_it_uses_are_cut(tmp_path):
    path = tmp_path / "test_ex_x.py"
    path.write_text(GRADER, encoding="utf-8")
    out = strip_hidden_grader(path, {"hidden_one"})
    for gone in (
        "hidden_one",
        "SECRET_SHAPES",
        "SECRET_SCALE",
        "0.123457",
        "secret_inputs",
        "surprise shapes",
    ):
        assert gone not in out
    kept = ast.parse(out)
    names = {n.name for n in kept.body if isinstance(n, ast.FunctionDef)}
    assert names == {"shared", "test_visible_one", "test_visible_two"}
    assert "SHAPES = [(2, 3)]" in out and '"""Checks."""' in out
    assert strip_hidden_grader(path, set()) == GRADER


def test_hidden_id_used_elsewhere_is_refused(tmp_path):
    path = tmp_path / "test_ex_x.py"
    path.write_text(
        GRADER + '\n\n@check("visible_three")\ndef test_three(student):\n    print("hidden_one")\n'
    )
    with pytest.raises(DistributionError, match=r"test_ex_x.py:\d+: hidden check id 'hidden_one'"):
        strip_hidden_grader(path, {"hidden_one"})


def test_hidden_manifest_tables_are_cut_and_the_rest_kept(tmp_path):
    path = tmp_path / "exercise.toml"
    path.write_text(MANIFEST, encoding="utf-8")
    out = strip_hidden_manifest(path, {"hidden_one"})
    assert "hidden_one" not in out and "Secret title" not in out and "秘密" not in out
    assert "# a comment that stays" in out and "[diagnoses.wrong]" in out
    assert out.count("[[checks]]") == 2


# ---------------------------------------------------------------- the student build of this project


def hidden_markers() -> tuple[list[re.Pattern], list[str]]:
    """Patterns (ids, test names) and literal strings (titles, hidden-only lines) that must not ship."""
    patterns, literals, hidden_code = [], [], []
    for manifest in MANIFESTS:
        hidden = {c.id for c in HIDDEN[manifest.id]}
        for spec in HIDDEN[manifest.id]:
            patterns.append(re.compile(rf"(?<![A-Za-z0-9_])(?:test_)?{re.escape(spec.id)}(?![A-Za-z0-9_])"))
            literals += [spec.title.zh, spec.title.en]
        hidden_code += hidden_only_lines(PROJECT.grader_path(manifest.id), hidden)
        hidden_code += stripped_lines(PROJECT.reference_path(manifest.id).read_text(encoding="utf-8"))
    shipped = shipped_lines()
    statements = "\n".join(
        PROJECT.statement_path(m.id, lang).read_text(encoding="utf-8")
        for m in MANIFESTS
        for lang in ("zh", "en")
    )  # what a statement spells out (the contract, a formula) is disclosed on purpose
    distinctive = {
        line for line in hidden_code if len(line) >= 16 and line not in shipped and line not in statements
    }
    return patterns, literals + sorted(distinctive)


def stripped_lines(text: str) -> list[str]:
    """Code lines without indentation and trailing comments; no comments, docstrings, imports."""
    out = []
    for line in text.splitlines():
        code = line.split("  #")[0].strip()
        if code and not code.startswith(("#", '"""', "import ", "from ", "@check")):
            out.append(code)
    return out


def shipped_lines() -> set[str]:
    """Code lines students legitimately get: stubs, statements, harness and helpers, visible checks."""
    lines: set[str] = set()
    for path in (PROJECT.root / "graders").rglob("*.py"):
        if not path.name.startswith("test_"):
            lines |= set(stripped_lines(path.read_text(encoding="utf-8")))
    for manifest in MANIFESTS:
        paths = [PROJECT.template_path(manifest.id)] + [
            PROJECT.statement_path(manifest.id, x) for x in ("zh", "en")
        ]
        for path in paths:
            lines |= set(stripped_lines(path.read_text(encoding="utf-8")))
        grader = PROJECT.grader_path(manifest.id)
        hidden = {c.id for c in HIDDEN[manifest.id]}
        lines |= set(stripped_lines(grader.read_text(encoding="utf-8"))) - set(
            hidden_only_lines(grader, hidden)
        )
    return lines


def hidden_only_lines(path: Path, hidden: set[str]) -> list[str]:
    """Lines of hidden tests and of top-level data only hidden tests read, found nowhere else in the file."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()

    def is_hidden(node):
        return any(check_id_of(d) in hidden for d in getattr(node, "decorator_list", []))

    def loads(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    hidden_nodes = [n for n in tree.body if is_hidden(n)]
    visible_nodes = [n for n in tree.body if not is_hidden(n)]
    read_by_hidden = set().union(set(), *(loads(n) for n in hidden_nodes))
    for node in visible_nodes:
        targets = {t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
        if isinstance(node, ast.Assign) and targets and targets <= read_by_hidden:
            if not any(targets & loads(other) for other in visible_nodes if other is not node):
                hidden_nodes.append(node)
    hidden_lines = {i for n in hidden_nodes for i in range(n.lineno - 1, n.end_lineno)}
    elsewhere = set(stripped_lines("\n".join(lines[i] for i in range(len(lines)) if i not in hidden_lines)))
    inside = stripped_lines("\n".join(lines[i] for i in sorted(hidden_lines)))
    return [line for line in inside if line not in elsewhere]


def test_the_leak_detector_sees_the_hidden_checks():
    """Guard against a vacuous leak test: there is something hidden to look for."""
    patterns, literals = hidden_markers()
    assert patterns and literals
    assert any("reference." in lit for lit in literals)  # a hidden test's own line
    assert any(lit.startswith("return ") for lit in literals)  # a reference solution's line


def test_student_build_leaks_nothing_hidden(student_dist):
    patterns, literals = hidden_markers()
    files = tree_text(student_dist)
    leaks = []
    for path, text in files.items():
        where = path.relative_to(student_dist)
        leaks += [f"{where}: {p.pattern}" for p in patterns if p.search(text)]
        leaks += [f"{where}: {lit!r}" for lit in literals if lit in text]
    assert leaks == []
    references = {p.read_bytes() for p in (PROJECT.root / "reference").glob("*.py")}
    assert not [p for p in files if p.read_bytes() in references]


def test_student_build_holds_only_what_students_need(student_dist):
    files = {p.relative_to(student_dist).as_posix() for p in student_dist.rglob("*") if p.is_file()}
    tops = {f.split("/")[0] for f in files}
    assert tops == {
        "README.md", "grade.py", "pyproject.toml", "course.toml", "exercises", "graders", "student_template"
    }  # fmt: skip
    assert Project(student_dist).course() == PROJECT.course()
    assert (
        (student_dist / "README.md")
        .read_text(encoding="utf-8")
        .startswith(f"# {PROJECT.course().title.zh} · {PROJECT.course().title.en}\n")
    )
    assert not [
        f for f in files if "__pycache__" in f or f.endswith(".pyc") or f.startswith((".git", "tests/"))
    ]
    for manifest in MANIFESTS:
        eid = manifest.id
        for path in (
            f"student_template/{eid}.py",
            f"exercises/{eid}/statement.zh.md",
            f"exercises/{eid}/statement.en.md",
        ):
            assert path in files
            assert (student_dist / path).read_bytes() == (PROJECT.root / path).read_bytes()
        shipped = Project(student_dist).load_manifest(eid)
        visible = [c for c in manifest.checks if c.visibility == "visible"]
        assert shipped.checks == visible
        tests = grader_tests(ast.parse((student_dist / f"graders/test_{eid}.py").read_text(encoding="utf-8")))
        assert sorted(t.check for t in tests) == sorted(c.id for c in visible)


def test_student_build_runs_visible_checks_only(student_dist, tmp_path):
    dist = tmp_path / "dist"
    shutil.copytree(student_dist, dist)
    first = run_grade(dist, "--lang", "en", "--seed", "3")
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Created" in first.stderr and "student_template/" in first.stderr
    assert sorted(p.name for p in (dist / "submission").iterdir()) == sorted(
        p.name for p in (dist / "student_template").iterdir()
    )
    assert "Hidden checks are not run in the student distribution; they run when you submit." in first.stdout
    # the reference solutions earn every visible point without any reference code in the build
    for manifest in MANIFESTS:
        shutil.copyfile(PROJECT.reference_path(manifest.id), dist / "submission" / f"{manifest.id}.py")
    second = run_grade(dist, "--format", "json", "--out", "report.json", "--seed", "3", "--lang", "zh")
    assert second.returncode == 0, second.stderr[-2000:]
    report = json.loads((dist / "report.json").read_text(encoding="utf-8"))
    assert report["hidden_checks_skipped"] is True
    for exercise, manifest in zip(report["exercises"], MANIFESTS, strict=True):
        visible = [c for c in manifest.checks if c.visibility == "visible"]
        assert [c["id"] for c in exercise["checks"]] == [c.id for c in visible]
        assert [c["status"] for c in exercise["checks"]] == ["passed"] * len(visible)
    assert (
        report["score"]
        == report["max_score"]
        == sum(c.points for m in MANIFESTS for c in m.checks if c.visibility == "visible")
    )


# ---------------------------------------------------------------- the autograder build


def test_autograder_build_has_everything_to_grade(autograder_dist, pool, tmp_path):
    files = {p.relative_to(autograder_dist).as_posix() for p in autograder_dist.rglob("*") if p.is_file()}
    assert not [f for f in files if f.startswith(("tests/", ".git")) or "__pycache__" in f]
    for manifest in MANIFESTS:
        for path in (
            PROJECT.reference_path(manifest.id),
            PROJECT.grader_path(manifest.id),
            PROJECT.manifest_path(manifest.id),
        ):
            relative = path.relative_to(PROJECT.root).as_posix()
            assert (autograder_dist / relative).read_bytes() == path.read_bytes()
    project = Project(autograder_dist)
    submission = tmp_path / "submission"
    shutil.copytree(autograder_dist / "reference", submission)
    report = grade(project, submission, seed=11, pool=pool)
    assert not report.hidden_checks_skipped
    assert report.score == report.max_score == sum(m.max_score for m in MANIFESTS)
    assert {c.id for e in report.exercises for c in e.checks if c.visibility == "hidden"} == {
        c.id for checks in HIDDEN.values() for c in checks
    }


# ---------------------------------------------------------------- refusing to build


def test_non_empty_destination_is_refused(tmp_path, capsys):
    (tmp_path / "keep.txt").write_text("mine")
    assert main(["build", "student", str(tmp_path)], PROJECT) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "folder is not empty" in err
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_destination_inside_the_sources_is_refused(tmp_path, capsys):
    (tmp_path / "exercises").mkdir()
    assert main(["build", "autograder", str(tmp_path / "exercises" / "out")], Project(tmp_path)) == 2
    assert "inside the project's exercises/ folder" in capsys.readouterr().err
    assert not (tmp_path / "exercises" / "out").exists()


def test_missing_part_is_named_and_nothing_written(tmp_path, capsys):
    project = Project(tmp_path / "course")
    new_exercise(project, "ex_a")
    (tmp_path / "course" / "grade.py").write_text("")
    project.statement_path("ex_a", "zh").unlink()
    assert main(["build", "student", str(tmp_path / "out")], project) == 2
    err = capsys.readouterr().err
    assert err == "error: cannot build the student distribution, missing: exercises/ex_a/statement.zh.md\n"
    assert not (tmp_path / "out").exists()
    project.reference_path("ex_a").unlink()
    assert main(["build", "autograder", str(tmp_path / "out")], project) == 2
    assert "reference/ex_a.py" in capsys.readouterr().err


def test_build_refuses_what_validate_rejects_and_writes_nothing(tmp_path, capsys):
    project = Project(tmp_path / "course")
    new_exercise(project, "ex01_untouched")  # the scaffold: TODO titles that must not reach students
    (project.root / "grade.py").write_text("", encoding="utf-8")
    dest = tmp_path / "out"
    for kind in ("student", "autograder"):
        assert main(["build", kind, str(dest)], project) == 2
        err = capsys.readouterr().err
        assert "`grade.py validate` rejects it" in err and "TODO(grade.py new)" in err
        assert not dest.exists()


def test_unknown_kind_is_bad_usage(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["build", "gradebook", str(tmp_path / "out")], PROJECT)
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err
