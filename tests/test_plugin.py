"""The grading plugin, branch by branch, over a small exercise written here: how each way a check
can end (passed, a plain assert, a skip, a grader bug, the student's exception named by
KNOWN_ERRORS, an undeclared diagnosis, plain data where a function is due, a check no test
implements, a stub) becomes a status, a message, a diagnosis and `stopped`."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.harness.authoring.scaffold import new_exercise
from graders.harness.core.project import Project
from graders.harness.core.runner import grade

EID = "ex01_branches"

MANIFEST = """\
id = "ex01_branches"
order = 1
title = { zh = "分支", en = "Branches" }
exports = ["double", "boom", "DATA"]
call_seconds = 1

[[checks]]
id = "passes"
points = 1
title = { zh = "double(x) 返回 2x", en = "double(x) returns 2x" }

[[checks]]
id = "assertion"
points = 1
title = { zh = "断言", en = "An assert" }

[[checks]]
id = "skips"
points = 1
title = { zh = "跳过", en = "A skip" }

[[checks]]
id = "grader_bug"
points = 1
title = { zh = "评分程序出错", en = "A grader bug" }

[[checks]]
id = "student_raises"
points = 1
title = { zh = "学生代码抛出异常", en = "The student's code raises" }

[[checks]]
id = "undeclared"
points = 1
title = { zh = "未声明的诊断", en = "An undeclared diagnosis" }

[[checks]]
id = "plain_data"
points = 1
title = { zh = "数据而非函数", en = "Data where a function is due" }

[[checks]]
id = "missing"
points = 1
title = { zh = "没有测试实现的检查", en = "A check no test implements" }

[diagnoses.known_boom]
message = { zh = "你的 boom 出错了。", en = "Your boom raised." }
"""

GRADER = """\
import pytest
import torch

from graders.harness import check, expect

KNOWN_ERRORS = {"known_boom": r"ValueError: bad k\\.T"}


@check("passes")
def test_passes(student):
    x = torch.ones(2)
    expect.close(expect.tensor(student.double(x), "double(x)", (2,)), 2 * x, "double(x)")


@check("assertion")
def test_assertion(student):
    assert False, "a plain assert in the grader"


@check("skips")
def test_skips(student):
    pytest.skip("not today")


@check("grader_bug")
def test_grader_bug(student):
    {}["no such key"]


@check("student_raises")
def test_student_raises(student):
    student.boom(torch.ones(1))


@check("undeclared")
def test_undeclared(student):
    x = torch.ones(2)
    expect.close(student.double(x), 3 * x, "double(x)", variants={"not_in_the_manifest": 2 * x})


@check("plain_data")
def test_plain_data(student):
    student.DATA(1)
"""

STUDENT = """\
def double(x):
    return 2 * x


def boom(x):
    raise ValueError("bad k.T")


DATA = (1, 2)
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    project = Project(tmp_path_factory.mktemp("branches"))
    new_exercise(project, EID)
    project.manifest_path(EID).write_text(MANIFEST, encoding="utf-8")
    project.grader_path(EID).write_text(GRADER, encoding="utf-8")
    project.reference_path(EID).write_text(STUDENT, encoding="utf-8")
    return project


def graded(project: Project, source: str, tmp_path: Path, pool):
    folder = tmp_path / "sub"
    folder.mkdir(exist_ok=True)
    (folder / f"{EID}.py").write_text(source, encoding="utf-8")
    (result,) = grade(project, folder, seed=1, lang="en", pool=pool).exercises
    return result, {c.id: c for c in result.checks}


def test_every_way_a_check_ends(project, tmp_path, pool):
    result, checks = graded(project, STUDENT, tmp_path, pool)
    status = {cid: c.status for cid, c in checks.items()}
    assert status == {
        "passes": "passed",
        "assertion": "failed",
        "skips": "error",
        "grader_bug": "error",
        "student_raises": "failed",
        "undeclared": "error",
        "plain_data": "failed",
        "missing": "error",
    }
    assert checks["assertion"].message.startswith("a plain assert in the grader")
    assert "skip: not today" in checks["skips"].message and "not your fault" in checks["skips"].message
    assert "KeyError" in checks["grader_bug"].message and "not your fault" in checks["grader_bug"].message
    raised = checks["student_raises"]
    assert "ValueError: bad k.T" in raised.message and raised.diagnosis == "known_boom"
    assert raised.diagnosis_message == "Your boom raised."
    assert "boom" in raised.student_traceback  # the student's own frame, shown to them
    assert "undeclared diagnosis 'not_in_the_manifest'" in checks["undeclared"].message
    assert "not callable" in checks["plain_data"].message
    assert "no test implements check 'missing'" in checks["missing"].message
    assert result.score == 1 and result.max_score == 8
    # the first check that could not judge the code: the skip, a grader fault
    assert result.stopped is not None and (result.stopped.kind, result.stopped.check) == ("grader", "skips")


def test_the_stub_is_not_implemented_where_it_is_called(project, tmp_path, pool):
    stub = (
        STUDENT.replace("return 2 * x", "raise NotImplementedError")
        .replace('raise ValueError("bad k.T")', "raise NotImplementedError")
        .replace("DATA = (1, 2)", "DATA = None")
    )
    _, checks = graded(project, stub, tmp_path, pool)
    assert (
        checks["passes"].status == "not_implemented" and checks["student_raises"].status == "not_implemented"
    )
    assert checks["plain_data"].status == "failed"  # None is data, not a function left unwritten


def test_a_file_that_does_not_load_stops_every_check_that_needs_it(project, tmp_path, pool):
    result, checks = graded(project, "def double(:\n", tmp_path, pool)
    assert checks["passes"].status == "failed" and "syntax error" in checks["passes"].message
    assert result.stopped is not None and (result.stopped.kind, result.stopped.check) == ("file", "passes")
    assert checks["assertion"].status == "failed"  # a check that never asks for the student's code


def test_an_endless_loop_is_a_timeout_and_stops(project, tmp_path, pool):
    source = STUDENT.replace("    return 2 * x", "    while True:\n        pass")
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / f"{EID}.py").write_text(source, encoding="utf-8")
    (result,) = grade(project, folder, seed=1, pool=pool).exercises
    checks = {c.id: c for c in result.checks}
    assert checks["passes"].status == "timeout" and checks["undeclared"].status == "timeout"
    assert result.stopped is not None and result.stopped.kind == "timeout"


def test_data_where_code_is_due_fails_by_type_in_expect_helpers():
    from graders.harness.core import expect
    from graders.harness.core.errors import CheckFailed

    for call in (lambda: expect.introspect((1, 2)), lambda: expect.vjp(3.0, [], [], [])):
        with pytest.raises(CheckFailed, match=r"gave data \((tuple|float)\) where a function"):
            call()


def test_a_failed_check_gets_a_one_line_report_and_a_skip_keeps_pytest_s_own(project, tmp_path, pool):
    """pytest's report of a failed check carries a summary line, not a traceback pytest would have cut and
    filtered frame by frame (`--tb=no` only hid it); the outcome comes from the exception itself, so
    the check's status and message are those of `test_every_way_a_check_ends`."""

    class Reports:
        def __init__(self) -> None:
            self.seen: dict[str, pytest.TestReport] = {}

        def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
            if report.when == "call":
                self.seen[report.nodeid.rpartition("::")[2]] = report

    reports = Reports()
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / f"{EID}.py").write_text(STUDENT, encoding="utf-8")
    (result,) = grade(project, folder, seed=1, lang="en", pool=pool, progress=reports).exercises
    failed = reports.seen["test_assertion"]
    assert failed.failed and isinstance(failed.longrepr, str)
    assert failed.longrepr.startswith("AssertionError: a plain assert in the grader")
    assert reports.seen["test_student_raises"].longrepr.startswith("StudentCodeError: ")
    skipped = reports.seen["test_skips"]
    assert (
        skipped.skipped
        and isinstance(skipped.longrepr, tuple)
        and skipped.longrepr[2] == "Skipped: not today"
    )
    assert reports.seen["test_passes"].passed
    assert {c.id: c.status for c in result.checks}["assertion"] == "failed"
