"""The trusted side reads a worker's peak memory over one call from the kernel (`expect.peak_memory`):
the cgroup's high-water mark where the worker has a memory cgroup, else the process's VmHWM, reset
from outside before the call. What a submission allocates shows; what it says about itself does not
count (it cannot even see /proc)."""

from __future__ import annotations

import os

import pytest

from graders.harness.core import expect
from graders.harness.core.errors import GraderFault
from graders.harness.core.student import StudentSession
from graders.harness.sandbox.client import SandboxPool

MIB = 1 << 20
SOURCE = """
import torch


def hog(mebibytes):
    block = torch.ones(mebibytes << 18)  # float32: 4 bytes each
    return float(block.sum())


def idle():
    return 1.0
"""


@pytest.fixture
def module(pool, tmp_path):
    def load(which: SandboxPool = pool):
        path = tmp_path / "probe.py"
        path.write_text(SOURCE, encoding="utf-8")
        session = StudentSession(which)
        session.add("probe", path, seed=1)
        student = session.module("probe")
        student.idle()  # loaded, and one call made: the block holds only what it measures
        return session, student

    sessions = []

    def tracked(which: SandboxPool = pool):
        sessions.append(load(which))
        return sessions[-1]

    yield tracked
    for session, _ in sessions:
        session.close()


@pytest.fixture(scope="module")
def user_pool():
    """Workers of an ordinary user (no cgroup): the process's own VmHWM is what is read."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop the zygote to nobody")
    with SandboxPool(run_as=(65534, 65534)) as pool:
        yield pool


def measured(student, call) -> expect.PeakMemory:
    with expect.peak_memory(student) as peak:
        call()
    return peak


@pytest.mark.parametrize("source", ["default", "process"])
def test_the_peak_of_one_call_is_what_it_allocated(module, source):
    session, student = module()
    if source == "process":
        session.worker.memory_files = {}  # as without a cgroup: the process's own VmHWM
    expected_source = "cgroup" if session.worker.memory_files else "process"
    big = measured(student, lambda: student.hog(48))
    assert big.source == expected_source
    assert 48 * MIB <= big.growth < 64 * MIB
    small = measured(student, lambda: student.idle())
    assert small.growth < 4 * MIB  # reset before each block: the earlier 48 MiB do not count again


def test_without_a_cgroup_the_process_peak_is_read(module, user_pool):
    _, student = module(user_pool)
    big = measured(student, lambda: student.hog(48))
    assert big.source == "process"
    assert 48 * MIB <= big.growth < 64 * MIB


def test_a_failing_call_fails_as_itself_and_leaves_nothing_open(module):
    _, student = module()
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(Exception) as raised:
        with expect.peak_memory(student):
            student.hog("many")
    assert not isinstance(raised.value, GraderFault)
    assert len(os.listdir("/proc/self/fd")) == fds


def test_without_a_way_to_reset_the_peak_it_is_the_graders_fault(module, monkeypatch):
    session, student = module()
    monkeypatch.setattr(session.worker, "reset_peak", lambda: None)
    with pytest.raises(GraderFault):
        with expect.peak_memory(student):
            student.idle()
