"""Nothing survives a worker and nothing crosses between students: a seccomp filter in every worker at
every isolation level, and a uid of its own for every worker (never reused within a run).

Each system call below is tried for real from inside a worker, through ctypes, the way a hostile
submission would; on the sandbox as it was before the filter, several of them succeeded (a key
added to the user keyring outlived the worker and was read by the next student of the same uid).
"""

from __future__ import annotations

import errno
import os
import socket

import pytest

from graders.harness.sandbox import isolation, wire
from graders.harness.sandbox.client import Limits, SandboxPool, isolation_level

NOBODY = (65534, 65534)
LIMITS = Limits(call_seconds=5, call_cpu_seconds=2, cpu_seconds=20)

# x86_64 numbers; each call is made with arguments that would succeed without the filter
PROBE = b"""
import torch

ctypes = torch.sys.modules["ctypes"]
libc = ctypes.CDLL(None, use_errno=True)
os = torch.os


def attempt(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(number, *args)
    if result == 0 and number == 56:  # clone returned in a child: leave at once
        os._exit(0)
    return [result, ctypes.get_errno()]


def calls():
    keyring = ctypes.c_int(-4)  # KEY_SPEC_USER_KEYRING
    return {
        "add_key": attempt(248, b"user", b"agw-probe", b"secret", 6, keyring),
        "request_key": attempt(249, b"user", b"agw-probe", None, 0),
        "keyctl": attempt(250, 0, keyring, 1),  # KEYCTL_GET_KEYRING_ID, create
        "unshare_user": attempt(272, 0x10000000),
        "clone_newuser": attempt(56, 0x10000000 | 17, 0, 0, 0, 0),
        "setns": attempt(308, 0, 0),
        "mount": attempt(165, b"none", b"/tmp", b"tmpfs", 0, None),
        "ptrace_traceme": attempt(101, 0, 0, 0, 0),
        "bpf": attempt(321, 0, None, 0),
        "perf_event_open": attempt(298, None, 0, -1, -1, 0),
        "userfaultfd": attempt(323, 0),
        "io_uring_setup": attempt(425, 1, None),
    }


def uid():
    return os.getuid()
"""


class Probe:
    def __init__(self, pool: SandboxPool) -> None:
        self.worker = pool.spawn(0)
        load = {"op": "load", "module": "probe", "filename": "probe.py"}
        reply, _ = self.worker.request_raw(load, 10, [PROBE])
        assert reply["ok"], reply

    def call(self, name: str):
        fn, _ = self.worker.request_raw({"op": "getattr", "target": {"$module": "probe"}, "name": name}, 10)
        header = {"op": "call", "target": fn["value"], "args": [], "kwargs": {"$dict": []}}
        reply, bufs = self.worker.request_raw(header, 10)
        assert reply["ok"], reply
        return wire.decode_value(reply["value"], bufs)

    def close(self) -> None:
        self.worker.close()


@pytest.fixture(scope="module", params=["root", "nobody", "nobody-without-userns"])
def any_pool(request):
    if os.geteuid() != 0:
        pytest.skip("needs root (to make the zygote drop to nobody for the lower levels)")
    if request.param == "root":  # the session's own pool
        yield request.getfixturevalue("pool")
        return
    options = {"nobody": {"run_as": NOBODY}, "nobody-without-userns": {"run_as": NOBODY, "userns": False}}
    with SandboxPool(LIMITS, **options[request.param]) as pool:
        yield pool


def test_every_level_installs_the_filter_and_names_it(any_pool):
    probe = Probe(any_pool)
    try:
        assert "seccomp-filter" in probe.worker.protections
        assert isolation_level(probe.worker.protections) in ("full", "partial", "minimal")
    finally:
        probe.close()


def test_the_filter_denies_keyrings_namespaces_mounts_tracing_bpf_perf_userfaultfd(any_pool):
    probe = Probe(any_pool)
    try:
        results = probe.call("calls")
    finally:
        probe.close()
    allowed = {name: r for name, r in results.items() if r[0] != -1}
    assert allowed == {}, f"system calls that went through: {allowed}"
    assert all(err in (errno.EPERM, errno.ENOSYS) for _, err in results.values()), results


def test_threads_fork_and_torch_still_work_under_the_filter(pool, grade_files):
    from conftest import reference_files

    report = grade_files(reference_files(["ex02_self_attention"]), exercises=["ex02_self_attention"])
    assert report.score == report.max_score > 0
    assert "seccomp-filter" in report.isolation


@pytest.fixture
def root_pool(pool):
    if os.geteuid() != 0:
        pytest.skip("uids are switched only as root")
    return pool


def test_no_uid_serves_two_workers_one_after_the_other(root_pool):
    uids = []
    for _ in range(5):  # one at a time: the old scheme gave every one of them the same uid
        probe = Probe(root_pool)
        uids.append(probe.call("uid"))
        probe.close()
    assert len(set(uids)) == len(uids)
    assert {isolation.uid_block_of(u) for u in uids} == {root_pool.uid_block}


def test_two_pools_hold_different_uid_blocks(root_pool):
    with SandboxPool(LIMITS) as other:
        other.spawn(0).close()
        assert other.uid_block is not None and other.uid_block != root_pool.uid_block


def test_a_uid_block_has_one_holder_machine_wide():
    block, holder = isolation.reserve_uid_block(123)
    try:
        again, second = isolation.reserve_uid_block(block)
        second.close()
        assert again != block
        with pytest.raises(OSError):
            socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(f"\0agw-uid-block-{block}".encode())
    finally:
        holder.close()
    block2, holder2 = isolation.reserve_uid_block(block)  # released with its holder
    holder2.close()
    assert block2 == block


def test_a_pool_handed_a_block_uses_it(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("uids are switched only as root")
    block, holder = isolation.reserve_uid_block(777)
    try:
        with SandboxPool(LIMITS, uid_block=block) as pool:
            probe = Probe(pool)
            assert isolation.uid_block_of(probe.call("uid")) == block
            probe.close()
    finally:
        holder.close()


def test_a_zygote_started_again_gives_out_no_uid_twice(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("uids are switched only as root")
    import signal
    import time

    with SandboxPool(LIMITS) as pool:
        first = Probe(pool)
        uids = [first.call("uid")]
        first.close()
        os.kill(pool.zygote_pid, signal.SIGKILL)  # the pool starts a new zygote on its next request
        time.sleep(0.2)
        second = Probe(pool)
        uids.append(second.call("uid"))
        second.close()
    assert uids[0] != uids[1]
    assert {isolation.uid_block_of(u) for u in uids} == {pool.uid_block}
