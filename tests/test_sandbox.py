"""The sandbox's own contract: frames are validated, submission files are read safely, and the
worker really is isolated at the level it reports (root, an ordinary user with user namespaces,
and an ordinary user without them, all measured for real by dropping the zygote to `nobody`).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.harness.core.errors import SubmissionFileError
from graders.harness.core.project import default_project
from graders.harness.core.runner import grade
from graders.harness.core.student import read_submission_file
from graders.harness.sandbox import isolation, wire
from graders.harness.sandbox.client import Limits, SandboxPool, WorkerTimeout, isolation_level

PROJECT = default_project()
NOBODY = (65534, 65534)
LIMITS = Limits(call_seconds=5, call_cpu_seconds=0.3, cpu_seconds=20, output_bytes=4096)
AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to make the zygote drop to nobody)")


# ---------------------------------------------------------------- wire: every frame is checked


def frame_bytes(header_raw: bytes, *buffers: bytes) -> bytes:
    return struct.pack(">I", len(header_raw)) + header_raw + b"".join(buffers)


def recv(raw: bytes, **kwargs):
    a, b = socket.socketpair()
    try:
        a.sendall(raw)
        a.shutdown(socket.SHUT_WR)
        return wire.recv_frame(b, time.monotonic() + 2, **kwargs)
    finally:
        a.close()
        b.close()


def tensor_node(dtype: str, shape: list, idx: int = 0) -> dict:
    return {"$tensor": idx, "dtype": dtype, "shape": shape}


def test_values_round_trip_with_their_dtypes_and_shapes():
    value = {
        "t": torch.arange(6, dtype=torch.float64).reshape(2, 3),
        "b": torch.ones(2, dtype=torch.bfloat16),
        "a": np.arange(3, dtype=np.int32),
        "nested": [(1, 2.5, float("nan")), None, "text", True],
    }
    buffers: list[bytes] = []
    node = wire.encode_value(value, buffers)
    header, got_buffers = recv(wire.pack_frame({"value": node}, buffers))
    back = wire.decode_value(header["value"], got_buffers)
    assert torch.equal(back["t"], value["t"]) and back["t"].dtype == torch.float64
    assert back["b"].dtype == torch.bfloat16 and back["a"].dtype == np.int32
    assert back["nested"][0][:2] == (1, 2.5) and np.isnan(back["nested"][0][2])


def test_header_over_the_cap_is_refused_before_it_is_read():
    raw = struct.pack(">I", wire.MAX_HEADER_BYTES + 1)
    with pytest.raises(wire.WireError, match="cap"):
        recv(raw)


def test_buffers_over_the_reply_cap_are_refused():
    raw = frame_bytes(json.dumps({"buffers": [600, 600]}).encode(), b"x" * 1200)
    with pytest.raises(wire.WireError, match="cap"):
        recv(raw, max_buffer_bytes=1000)


@pytest.mark.parametrize("depth", [4, 5, 40])
def test_a_header_nested_past_the_depth_cap_is_refused_however_few_its_brackets(depth):
    """The depth is counted only when the header has more brackets than the cap allows levels:
    a header within the cap by that count is within it by any count."""
    header = b'{"a": ' + b"[" * depth + b"1" + b"]" * depth + b"}"
    if depth + 1 > 5:
        with pytest.raises(wire.WireError, match="nested"):
            recv(frame_bytes(header), max_depth=5)
    else:
        assert recv(frame_bytes(header), max_depth=5)[0]["a"]


@pytest.mark.parametrize("chars, escaped", [(10, False), (11, False), (11, True), (10, True)])
def test_a_string_over_its_cap_is_refused_written_plainly_or_escaped(chars, escaped):
    """Strings are measured once the header is longer than the cap (a decoded string is never
    longer than its bytes); `\\u0041` is six bytes for one character."""
    text = (b"\\u0041" if escaped else b"A") * chars
    header = b'{"s": "' + text + b'"}'
    if chars > 10:
        with pytest.raises(wire.WireError, match="character cap"):
            recv(frame_bytes(header), max_string_chars=10)
    else:
        assert recv(frame_bytes(header), max_string_chars=10)[0]["s"] == "A" * chars


@pytest.mark.parametrize(
    "header",
    [
        b"not json",
        b"[1, 2]",
        b'{"buffers": "many"}',
        b'{"buffers": [-1]}',
        b'{"buffers": [1.5]}',
        b'{"ok": true, "seq": 1, "value": ' + b"9" * 4400 + b"}",  # json's bare ValueError
        b"\xff\xfe{}",
    ],
    ids=lambda header: repr(header[:40]),
)
def test_malformed_headers_are_refused(header):
    with pytest.raises(wire.WireError):
        recv(frame_bytes(header))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    | st.integers(4290, 4500).map(lambda n: _BigDigits(n)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


class _BigDigits:
    """A JSON integer of `n` digits, written by hand (Python will not print one over 4 300 digits)."""

    def __init__(self, n: int) -> None:
        self.n = n


def _dumps(value) -> bytes:
    if isinstance(value, _BigDigits):
        return b"9" * value.n
    if isinstance(value, list):
        return b"[" + b",".join(_dumps(v) for v in value) + b"]"
    if isinstance(value, dict):
        return b"{" + b",".join(json.dumps(k).encode() + b":" + _dumps(v) for k, v in value.items()) + b"}"
    return json.dumps(value).encode()


HEADERS = (
    st.binary(max_size=300)
    | st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass"))
    | JSON_VALUES.map(_dumps)
    | st.dictionaries(st.sampled_from(["ok", "seq", "value", "buffers", "event"]), JSON_VALUES).map(_dumps)
)


@settings(max_examples=200, deadline=None)
@given(HEADERS)
def test_any_header_bytes_are_read_or_refused_as_the_peers_fault(header):
    """Whatever bytes a worker sends as a header, the trusted side reads a dict or raises `WireError`
    (the student's fault), never another exception (which would be blamed on the grader)."""
    try:
        got, _ = recv(frame_bytes(header))
    except wire.WireError:
        return
    assert type(got) is dict


def test_a_truncated_frame_is_a_closed_channel_not_a_hang():
    with pytest.raises(wire.ChannelClosed):
        recv(frame_bytes(json.dumps({"buffers": [100]}).encode(), b"x" * 10))


def test_a_silent_peer_times_out_at_the_deadline():
    a, b = socket.socketpair()
    try:
        a.sendall(struct.pack(">I", 50))
        start = time.monotonic()
        with pytest.raises(wire.ChannelTimeout):
            wire.recv_frame(b, time.monotonic() + 0.2)
        assert time.monotonic() - start < 2
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    "node, buffers",
    [
        (tensor_node("float128", [1]), [b"x" * 16]),  # dtype outside the allow-list
        (tensor_node("object", [1]), [b"x" * 8]),
        (tensor_node("float32", [3]), [b"x" * 8]),  # shape does not match the byte count
        (tensor_node("float32", [-1]), [b""]),  # negative dimension
        (tensor_node("float32", [1] * 9), [b"x" * 4]),  # too many dimensions
        (tensor_node("float32", [1], idx=3), [b"x" * 4]),  # buffer that does not exist
        ({"$ndarray": 0, "dtype": "bfloat16", "shape": [1]}, [b"xx"]),
        ({"$what": 1}, []),
        ({}, []),
        ({"$dict": [["k"]]}, []),
        ({"$float": "huge"}, []),
    ],
)
def test_malformed_values_are_refused(node, buffers):
    with pytest.raises(wire.WireError):
        wire.decode_value(node, buffers)


def test_nesting_and_size_caps():
    deep: list = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="deeply"):
        wire.decode_value(deep, [])
    with pytest.raises(wire.WireError, match="too many"):
        wire.decode_value([0] * (wire.MAX_NODES + 1), [])


def test_only_plain_dense_cpu_tensors_and_plain_data_are_sent():
    with pytest.raises(wire.WireError):
        wire.encode_value(torch.eye(3).to_sparse(), [])
    with pytest.raises(wire.WireError):
        wire.encode_value(np.array([object()]), [])
    with pytest.raises(wire.WireError):
        wire.encode_value(object(), [])


# ---------------------------------------------------------------- the trusted side reads only bytes


def test_submission_files_are_read_as_bytes_of_regular_files_only(tmp_path):
    good = tmp_path / "ex.py"
    good.write_bytes(b"x = 1\n\xff\xfe")
    assert read_submission_file(good) == b"x = 1\n\xff\xfe"
    link = tmp_path / "link.py"
    link.symlink_to(PROJECT.reference_path("ex02_self_attention"))
    hard = tmp_path / "hard.py"
    os.link(good, hard)
    folder = tmp_path / "folder.py"
    folder.mkdir()
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (2 << 20))
    for path, problem in [
        (link, "symbolic links"),
        (hard, "hard links"),
        (folder, "not a regular file"),
        (fifo, "not a regular file"),
        (big, "larger than"),
        (tmp_path / "missing.py", "missing.py"),
    ]:
        with pytest.raises(SubmissionFileError) as info:
            read_submission_file(path)
        assert path.name in info.value.text.en and problem in info.value.text.en


# ---------------------------------------------------------------- the worker, measured from inside

PROBE = b"""
import torch

os = torch.os
socket = torch.sys.modules["socket"]


def facts(paths, port, kill_all):
    out = {"uid": os.getuid(), "groups": os.getgroups(), "pid": os.getpid(), "ppid": os.getppid()}
    out["root"] = sorted(os.listdir("/"))
    out["readable"] = []
    for path in paths:
        try:
            with open(path, "rb") as fh:
                fh.read(1)
            out["readable"].append(path)
        except OSError:
            pass
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        out["network"] = True
    except OSError:
        out["network"] = False
    out["interfaces"] = [name for _, name in socket.if_nameindex()]
    try:
        torch.sys.modules["importlib"].import_module("xml.dom.minidom")
        out["lazy_import"] = True
    except ImportError:
        out["lazy_import"] = False
    if kill_all:  # only where a PID namespace holds it: elsewhere it would hit the machine itself
        try:
            os.kill(-1, 9)
        except OSError:
            pass
    return out


def spin():
    while True:
        pass


def shout(n):
    print("x" * n)
    return n


def leave_daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            torch.sys.modules["time"].sleep(10**6)
        os._exit(0)
    return os.getpid()
"""


class Probe:
    """One worker with the probe module loaded; `call(name, *args)` runs a probe function in it."""

    def __init__(self, pool: SandboxPool) -> None:
        self.pool = pool
        self.worker = pool.spawn(0)
        reply, _ = self.worker.request_raw(
            {"op": "load", "module": "probe", "filename": "probe.py"}, 10, [PROBE]
        )
        assert reply["ok"], reply

    def call(self, name: str, *args, timeout: float = 10):
        buffers: list[bytes] = []
        target = {"$module": "probe"}
        fn, _ = self.worker.request_raw({"op": "getattr", "target": target, "name": name}, timeout)
        header = {"op": "call", "target": fn["value"], "args": wire.encode_value(list(args), buffers)}
        header["kwargs"] = wire.encode_value({}, buffers)
        reply, bufs = self.worker.request_raw(header, timeout, buffers)
        assert reply["ok"], reply
        return wire.decode_value(reply["value"], bufs)

    def outside(self) -> dict[str, str]:
        with open(f"/proc/{self.worker.pid}/status") as fh:
            return dict(line.rstrip("\n").split(":\t", 1) for line in fh if ":\t" in line)


SECRETS = [
    str(PROJECT.reference_path("ex02_self_attention")),
    str(PROJECT.grader_path("ex02_self_attention")),
    "/etc/passwd",
    "/proc/1/environ",
    f"/proc/{os.getpid()}/environ",
]


def facts_in(pool: SandboxPool, kill_all: bool = False) -> tuple[dict, dict, list[str]]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    probe = Probe(pool)
    try:
        facts = probe.call("facts", SECRETS, listener.getsockname()[1], kill_all)
        return facts, probe.outside(), probe.worker.protections
    finally:
        probe.worker.close()
        listener.close()


def zygote_children(pool: SandboxPool) -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pool.zygote_pid:
            out.append(f"{entry}:{fields[0]}")
    return out


@pytest.fixture(scope="module")
def root_pool():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    with SandboxPool(LIMITS) as pool:
        yield pool


@pytest.fixture(scope="module")
def user_pool():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop the zygote to nobody")
    with SandboxPool(LIMITS, run_as=NOBODY) as pool:
        yield pool


@pytest.fixture(scope="module")
def bare_pool():
    if os.geteuid() != 0:
        pytest.skip("needs root to drop the zygote to nobody")
    with SandboxPool(LIMITS, run_as=NOBODY, userns=False) as pool:
        yield pool


def test_as_root_the_worker_is_alone_unprivileged_and_offline(root_pool):
    bystander = subprocess.Popen(["sleep", "60"])  # a process outside that kill(-1, 9) must not reach
    try:
        facts, outside, protections = facts_in(root_pool, kill_all=True)
        assert bystander.poll() is None, "kill(-1) in the worker reached a process outside its namespace"
    finally:
        bystander.kill()
        bystander.wait()
    assert facts["pid"] == 1 and facts["ppid"] == 0  # PID 1 of its own namespace: sees no other process
    assert facts["root"] == ["tmp"]  # an empty root: no project, no grader, no /proc, no interpreter files
    assert facts["readable"] == []
    assert facts["network"] is False and facts["interfaces"] == ["lo"]
    assert facts["uid"] >= isolation.SANDBOX_UID_BASE and facts["groups"] == []
    assert int(outside["Uid"].split()[0]) == facts["uid"] and int(outside["CapEff"], 16) == 0
    assert outside["NoNewPrivs"].strip() == "1"
    assert facts["lazy_import"] is False  # only what the zygote imported: the same everywhere
    for name in (
        "pid-namespace",
        "network-namespace",
        "empty-root",
        "unprivileged-uid",
        "no-new-privs",
        "cgroup:memory",
        "cgroup:pids",
        "rlimit:memory",
        "rlimit:processes",
        "rlimit:open_files",
    ):
        assert name in protections  # fmt: skip
    assert isolation_level(protections) == "full"


@AS_ROOT
def test_as_an_ordinary_user_with_user_namespaces_the_isolation_is_partial(user_pool):
    facts, outside, protections = facts_in(user_pool)
    assert user_pool.mode == "userns"
    assert facts["pid"] == 1 and facts["root"] == ["tmp"] and facts["readable"] == []
    assert facts["network"] is False
    assert outside["Uid"].split()[0] == str(NOBODY[0])  # the user's own uid outside: no uid switch
    assert int(outside["CapEff"], 16) == 0 and "capabilities-dropped" in protections
    assert "unprivileged-uid" not in protections and not any(p.startswith("cgroup:") for p in protections)
    assert isolation_level(protections) == "partial"


@AS_ROOT
def test_as_an_ordinary_user_the_reference_still_earns_full_marks(user_pool):
    report = grade(
        PROJECT, PROJECT.root / "reference", seed=5, exercises=["ex02_self_attention"], pool=user_pool
    )
    assert report.score == report.max_score > 0
    assert report.isolation_level == "partial"


@AS_ROOT
def test_without_user_namespaces_only_rlimits_remain_and_the_report_says_so(bare_pool):
    facts, outside, protections = facts_in(bare_pool)
    assert bare_pool.mode == "none"
    assert "usr" in facts["root"]  # what this level does NOT protect: the file system is visible
    assert facts["pid"] != 1
    assert facts["lazy_import"] is False  # imports still behave exactly as in the isolated levels
    assert {"rlimit:memory", "rlimit:processes", "no-new-privs", "import-allow-list"} <= set(protections)
    assert isolation_level(protections) == "minimal"


@AS_ROOT
def test_without_namespaces_the_zygote_sweeps_daemons_and_reaps_zombies(bare_pool):
    probe = Probe(bare_pool)
    probe.call("leave_daemon")
    time.sleep(0.2)
    assert len(zygote_children(bare_pool)) >= 2  # the worker and the orphaned daemon, re-parented here
    account = probe.worker.close()
    assert account["swept"] >= 1 and account["left"] == 0
    assert zygote_children(bare_pool) == []  # nothing alive, no zombie


def test_a_call_is_stopped_by_its_cpu_budget_before_its_wall_deadline(root_pool):
    probe = Probe(root_pool)
    start = time.monotonic()
    with pytest.raises(WorkerTimeout, match="CPU"):
        probe.call("spin", timeout=5)
    assert time.monotonic() - start < 4
    assert probe.worker.close()["left"] == 0


def test_output_is_captured_up_to_the_cap_and_the_rest_counted(root_pool):
    probe = Probe(root_pool)
    assert probe.call("shout", 20000) == 20000
    deadline = time.monotonic() + 2
    while probe.worker.output.dropped == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(probe.worker.output.data) == LIMITS.output_bytes
    assert probe.worker.output.dropped == 20001 - LIMITS.output_bytes
    probe.worker.close()


def test_workers_of_one_pool_do_not_share_a_uid(root_pool):
    a, b = Probe(root_pool), Probe(root_pool)
    try:
        assert a.outside()["Uid"] != b.outside()["Uid"]
    finally:
        a.worker.close()
        b.worker.close()


def test_the_zygote_is_started_fresh_with_a_clean_environment(root_pool):
    root_pool.spawn(0).close()
    with open(f"/proc/{root_pool.zygote_pid}/environ", "rb") as fh:
        names = {item.split(b"=", 1)[0].decode() for item in fh.read().split(b"\0") if item}
    assert names <= {"PATH", "LANG", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                     "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MALLOC_MMAP_THRESHOLD_"}  # fmt: skip
    with open(f"/proc/{root_pool.zygote_pid}/cmdline", "rb") as fh:
        assert b"-I" in fh.read().split(b"\0")


def test_pool_survives_many_short_lived_workers(root_pool):
    threads = [threading.Thread(target=lambda: root_pool.spawn(0).close()) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert zygote_children(root_pool) == []
    assert Path(f"/proc/{root_pool.zygote_pid}").exists()


def test_a_released_worker_is_reaped_before_the_next_worker_is_forked(root_pool):
    """`release` does not wait for the zygote to take the worker apart, but the zygote answers in
    turn and the pool reads that answer before it asks for the next worker: nothing of the first
    is left (no process, no zombie) when the second starts, as with `close`, which waits."""
    first = root_pool.spawn(1)
    old = first.pid
    first.release()
    second = root_pool.spawn(2)
    try:
        assert not os.path.exists(f"/proc/{old}")
        assert [entry.split(":")[0] for entry in zygote_children(root_pool)] == [str(second.pid)]
    finally:
        second.close()
    assert zygote_children(root_pool) == []


def test_a_pool_closed_right_after_a_release_ends_its_zygote_cleanly():
    """The zygote answers a `release` after the worker is gone; a grader that closes right away (a
    single grade ends so) must find it tidying up as on any other close, not dying on the answer
    it could not send (exit 1, after a traceback and a wait for the worker's cgroup)."""
    for reads_answer in (True, False):
        pool = SandboxPool()
        pool.spawn(1).release()
        launch = pool._launch
        if reads_answer:
            pool.close()  # reads the answer first
        else:
            launch.control.close()  # a grader gone without reading it
            launch.proc.wait(timeout=10)
            pool.close()
        assert launch.proc.returncode == 0
