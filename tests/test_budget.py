"""Time budgets, measured on real grading: sleeping just under each call's deadline no longer earns
full marks, an endless loop costs one deadline instead of one per check, a whole submission has a
budget in single mode as in batch, and a student grading by hand sees each check as it starts.
"""

from __future__ import annotations

import os
import time

import pytest

from graders.harness.core.project import default_project
from graders.harness.core.runner import grade
from graders.harness.formats.progress import CheckProgress
from graders.harness.sandbox.client import Limits, SandboxPool

PROJECT = default_project()
EX2, EX1 = "ex02_self_attention", "ex01_attention_by_hand"
REFERENCE = PROJECT.reference_path(EX2).read_text(encoding="utf-8")
CALL = 1.0


@pytest.fixture(scope="module")
def fast_pool():
    with SandboxPool(Limits(call_seconds=CALL, submission_seconds=None)) as pool:
        yield pool


def write(folder, name: str, source: str):
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    return folder


def checks(report, exercise=EX2) -> dict:
    return {c.id: c for e in report.exercises if e.id == exercise for c in e.checks}


# every call into the submission waits 90% of its deadline, then answers correctly
SLOW = (
    REFERENCE.replace("import torch", "import time\nimport torch", 1)
    + """

_right_sdpa = scaled_dot_product_attention


def scaled_dot_product_attention(q, k, v):
    time.sleep(0.9)
    return _right_sdpa(q, k, v)


_RightLayer = SimpleSelfAttention


class SimpleSelfAttention(_RightLayer):
    def forward(self, x):
        time.sleep(0.9)
        return super().forward(x)
"""
)


def test_sleeping_just_under_every_deadline_no_longer_earns_full_marks(fast_pool, tmp_path):
    start = time.monotonic()
    report = grade(PROJECT, write(tmp_path / "s", EX2, SLOW), seed=3, exercises=[EX2], pool=fast_pool)
    took = time.monotonic() - start
    assert report.score < report.max_score / 2  # before: full marks, one 0.9 s wait per call
    statuses = {c.status for c in checks(report).values()}
    assert "timeout" in statuses
    messages = " ".join(c.message for c in checks(report).values())
    assert "time budget" in messages
    assert took < 2 * CALL + 8  # the exercise's budget (2 deadlines) and the grader's own work


LOOP = (
    REFERENCE
    + """

class SimpleSelfAttention(SimpleSelfAttention):
    def forward(self, x):
        while True:
            pass
"""
)


def test_an_endless_loop_costs_one_deadline_and_later_checks_say_not_run(fast_pool, tmp_path):
    start = time.monotonic()
    report = grade(PROJECT, write(tmp_path / "l", EX2, LOOP), seed=3, exercises=[EX2], pool=fast_pool)
    took = time.monotonic() - start
    got = checks(report)
    layer = [c for c in got.values() if c.id.startswith("layer_") and c.status != "passed"]
    waited = [c for c in layer if "did not return within" in c.message]
    skipped = [c for c in layer if c.message.startswith("Not run: an earlier call to `SimpleSelfAttention`")]
    assert len(waited) == 1, [c.message for c in layer]  # before: one deadline for every check
    assert len(skipped) >= 3 and all(c.status == "timeout" for c in skipped)
    assert all(c.status == "passed" for c in got.values() if c.id.startswith("sdpa_"))  # other code runs
    assert took < CALL + 8


def test_a_whole_submission_has_a_budget(tmp_path):
    slow_ex1 = PROJECT.reference_path(EX1).read_text(encoding="utf-8")
    folder = write(tmp_path / "w", EX2, SLOW)
    write(folder, EX1, slow_ex1)
    with SandboxPool(Limits(call_seconds=CALL, submission_seconds=1.5)) as pool:
        report = grade(PROJECT, folder, seed=3, exercises=[EX1, EX2], pool=pool)
    messages = [c.message for e in report.exercises for c in e.checks]
    assert any(m.startswith("Not run: the time budget of the whole submission") for m in messages)


def test_a_student_grading_by_hand_sees_each_check_start(pool, tmp_path):
    read, written = os.pipe()
    progress = CheckProgress(written)
    os.close(written)
    folder = write(tmp_path / "p", EX2, REFERENCE)
    grade(PROJECT, folder, seed=3, exercises=[EX2], pool=pool, progress=progress)
    progress.close()
    shown = os.read(read, 1 << 16).decode()
    os.close(read)
    total = len(PROJECT.load_manifest(EX2).checks)
    assert f"[{EX2} 1/{total}]" in shown and f"[{EX2} {total}/{total}]" in shown
    assert shown.endswith("\r\x1b[K")  # the line is cleared before the report is printed
