"""The hostile-submission suite: every attack in tests/hostile/ is graded for real, and must fail.

For each case (see tests/hostile/cases.toml and suite.py): grading finishes within the case's
budget, the report has every check of the exercise, no attacked check earns a point (attacks on
time: the total stays under the case's cap), checks the attack did not touch still pass, the grader
never blames itself, no sandbox process is left, `reference/`, `graders/` and the submission's own
files are byte-for-byte unchanged, nothing leaked into the report, and the report renders inert in
every format within its size bound. Deadlines are short (suite.LIMITS) so the suite stays fast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import suite  # noqa: E402

from graders.harness.core.project import default_project  # noqa: E402

PROJECT = default_project()
CASES = suite.load_cases(PROJECT)


@pytest.fixture(scope="module")
def hostile_pool():
    with suite.make_pool() as pool:
        yield pool


def test_the_suite_covers_at_least_eighty_attacks():
    assert len(CASES) >= 80
    assert all(case.attacked for case in CASES), "every case names the checks it attacks"


def test_grading_runs_fully_isolated_as_root(hostile_pool):
    if os.geteuid() != 0:
        pytest.skip("the full isolation level needs root")
    assert suite.pool_level(hostile_pool) == "full"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_submission_gains_nothing(case, hostile_pool, tmp_path):
    result = suite.run_case(case, PROJECT, hostile_pool, tmp_path)
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.seconds <= case.budget, f"grading took {result.seconds:.1f} s, budget {case.budget:g} s"
    assert not result.missing_checks, f"checks missing from the report: {result.missing_checks}"
    assert result.points_attacked == 0, f"{result.points_attacked:g} points on attacked checks"
    assert not result.grader_errors, f"the grader blamed itself: {result.grader_errors}"
    assert not result.earned_missing, (
        f"checks the attack did not touch stopped passing: {result.earned_missing}"
    )
    assert not result.processes_left, f"sandbox processes left behind: {result.processes_left}"
    assert not result.files_changed, f"files changed: {result.files_changed}"
    assert not result.leaks, f"found in the report: {result.leaks}"
    assert result.network_contacts == 0
    assert not result.format_problems, f"the report is not inert in every format: {result.format_problems}"
    assert not result.over_score, f"scored {result.score:g}, at most {case.score_at_most:g} allowed"
    if os.geteuid() == 0 and result.report.isolation:  # empty when no student code ran (refused file)
        assert result.report.isolation_level == "full"
    special = SPECIAL.get(case.name)
    if special:
        special(result)


# ---------------------------------------------------------------- what some attacks must also show


def _messages(result) -> str:
    return " ".join(c.message for e in result.report.exercises for c in e.checks)


def _output_is_capped(result):
    exercise = result.report.exercises[0]
    assert exercise.output_dropped > 0, "the flood should have been cut"
    assert len(exercise.output.encode()) <= 4 * suite.LIMITS.output_bytes


def _hardcoding_works_only_on_its_seed(result):
    assert result.points_on_known_seed and result.points_on_known_seed > 0, "the attack must be real"
    assert result.points_attacked == 0


def _import_refused_clearly(result):
    assert "not allowed" in _messages(result) and "'os'" in _messages(result)


def _links_refused(result):
    assert "links are refused" in _messages(result)


def _forged_replies_refused(result):
    assert "out of turn" in _messages(result)


def _timeouts_reported(result):
    statuses = {c.id: c.status for c in result.report.exercises[0].checks}
    assert all(statuses[c] == "timeout" for c in result.case.attacked)


def _one_wait_then_not_run(result):
    layer = [c for c in result.report.exercises[0].checks if c.id in result.case.attacked]
    waited = [c for c in layer if "did not return within" in c.message]
    assert len(waited) == 1, [c.message for c in layer]  # one deadline, not one per check
    assert all(c.status == "timeout" for c in layer)


def _caps_are_the_students_fault(result):
    assert "-character cap" in _messages(result) or "-byte cap" in _messages(result)  # named: not the grader


def _deep_reply_is_the_students_fault(result):
    assert "nested" in _messages(result)


SPECIAL = {
    "infinite_loop_forward": _one_wait_then_not_run,
    "lifted_message_cap": _caps_are_the_students_fault,
    "huge_string_return": _caps_are_the_students_fault,
    "deep_json_reply": _deep_reply_is_the_students_fault,
    "output_flood": _output_is_capped,
    "hardcoded_seed": _hardcoding_works_only_on_its_seed,
    "plain_imports": _import_refused_clearly,
    "symlink_to_reference": _links_refused,
    "hardlink_to_reference": _links_refused,
    "fake_reply_then_hang": _forged_replies_refused,
    "sleep_forever_call": _timeouts_reported,
    "infinite_loop_call": _timeouts_reported,
}
