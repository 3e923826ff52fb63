"""Intake reads a zip's end records before parsing it; after any batch (interrupted, killed; a clean
one with a job stopped by the watchdog is in test_batch.py) and after Ctrl-C in single mode, nothing
is left in the temporary folder or the process table. Real batches and a real `python grade.py`,
each with its own TMPDIR to look into afterwards.
"""

from __future__ import annotations

import csv
import os
import signal
import struct
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from graders.harness.cli import html_report_path
from graders.harness.core.i18n import say
from graders.harness.core.intake import (
    EOCD,
    EOCD64,
    EOCD64_LOCATOR,
    MAX_TREE_DEPTH,
    Entry,
    Refusal,
    ZipCaps,
    check_tree,
    fingerprint,
    unpack_zip,
    walk_tree,
)
from graders.harness.core.project import default_project
from graders.harness.sandbox import isolation

PROJECT = default_project()
EX = "ex02_self_attention"
FILE = f"{EX}.py"
REFERENCE = PROJECT.reference_path(EX).read_text(encoding="utf-8")
HANG = REFERENCE + "\n\ndef scaled_dot_product_attention(q, k, v):\n    while True:\n        pass\n"


# ---------------------------------------------------------------- zip: the end records first


def zip64_claiming(entries: int, directory_bytes: int) -> bytes:
    """End records (ZIP64) declaring `entries` entries, with no central directory behind them."""
    record = EOCD64.pack(0x06064B50, 44, 45, 45, 0, 0, entries, entries, directory_bytes, 0)
    locator = EOCD64_LOCATOR.pack(0x07064B50, 0, 0, 1)
    end = EOCD.pack(0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return record + locator + end


def test_a_zip_declaring_a_million_entries_is_refused_from_its_end_record(tmp_path):
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(zip64_claiming(1_400_000, 64 << 20))
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out")
    assert refusal.value.problem == "zip_too_many"  # before: "zip_bad", once ZipFile had tried to parse it
    assert "1400000" in refusal.value.text.en


def zip_with_lying_end_record(n: int) -> bytes:
    """A real zip of one file plus `n` empty entries whose classic end record says 1 entry, while the
    ZIP64 record and locator right before it (where `zipfile` looks, whatever the classic record
    says) declare them all: the unseen attack's archive, small."""
    data, name = REFERENCE.encode(), FILE.encode()
    crc = zlib.crc32(data)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(data), len(data), len(name), 0)

    def central(fname: bytes, size: int, crc: int) -> bytes:
        fields = (0x02014B50, 20, 20, 0, 0, 0, 0, crc, size, size, len(fname), 0, 0, 0, 0, 0, 0)
        return struct.pack("<IHHHHHHIIIHHHHHII", *fields) + fname

    first = central(name, len(data), crc)
    directory = first + b"".join(central(b"p%06d" % i, 0, 0) for i in range(n))
    start = len(local) + len(name) + len(data)
    record = EOCD64.pack(0x06064B50, 44, 45, 45, 0, 0, n + 1, n + 1, len(directory), start)
    locator = EOCD64_LOCATOR.pack(0x07064B50, 0, start + len(directory), 1)
    lie = EOCD.pack(0x06054B50, 0, 0, 1, 1, len(first), start, 0)
    return local + name + data + directory + record + locator + lie


def test_a_zip64_record_behind_a_modest_classic_record_counts(tmp_path, monkeypatch):
    archive = tmp_path / "lie.zip"
    archive.write_bytes(zip_with_lying_end_record(30))
    assert len(zipfile.ZipFile(archive).infolist()) == 31  # what zipfile would parse
    monkeypatch.setattr(zipfile.ZipFile, "__init__", lambda *a, **k: pytest.fail("parsed before refusing"))
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out", ZipCaps(members=20))
    assert refusal.value.problem == "zip_too_many" and "31" in refusal.value.text.en


def test_a_central_directory_over_its_cap_is_refused_before_parsing(tmp_path):
    archive = tmp_path / "wide.zip"
    archive.write_bytes(zip64_claiming(10, 50 << 20))
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out")
    assert refusal.value.problem == "zip_directory_too_large"


def test_a_real_zip_over_the_entry_cap_is_refused_with_its_count(tmp_path):
    archive = tmp_path / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(30):
            zf.writestr(f"f{i}.txt", b"x")
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out", ZipCaps(members=20))
    assert refusal.value.problem == "zip_too_many" and "30" in refusal.value.text.en


def test_a_file_without_end_record_is_a_bad_zip(tmp_path):
    archive = tmp_path / "junk.zip"
    archive.write_bytes(b"PK\x03\x04" + os.urandom(200))
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out")
    assert refusal.value.problem == "zip_bad"


def test_a_normal_zip_still_unpacks(tmp_path):
    archive = tmp_path / "ok.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"hw/{FILE}", REFERENCE)
    assert (unpack_zip(archive, tmp_path / "out") / "hw" / FILE).read_text() == REFERENCE
    assert struct.calcsize("<IHHHHIIH") == EOCD.size == 22


# ---------------------------------------------------------------- deep trees: refused, never a crash


def deep_tree(root: Path, depth: int) -> None:
    """`depth` folders `d` nested in `root`, made through directory fds (the whole path may be longer
    than the file system allows in one name)."""
    fd = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def remove_deep_tree(root: Path) -> None:
    """Undo `deep_tree` without recursion (pytest's own clean-up of tmp_path would recurse past the
    limit), innermost folder first."""
    fds = [os.open(root, os.O_RDONLY)]
    while True:
        try:
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        except FileNotFoundError:
            break
    os.close(fds.pop())
    while fds:
        fd = fds.pop()
        os.rmdir("d", dir_fd=fd)
        os.close(fd)


@pytest.fixture
def deep(tmp_path):
    """`deep_tree`, removed afterwards."""
    made = []

    def make(root: Path, depth: int) -> None:
        deep_tree(root, depth)
        made.append(root)

    yield make
    for root in made:
        remove_deep_tree(root)


@pytest.mark.parametrize("depth", [MAX_TREE_DEPTH, 1500, 2500])
def test_a_folder_nested_thousands_deep_is_refused_and_digested_without_recursion(tmp_path, deep, depth):
    student = tmp_path / "deep_student"
    student.mkdir()
    (student / FILE).write_text(REFERENCE, encoding="utf-8")
    deep(student, depth)  # before: RecursionError in fingerprint's rglob aborted the whole batch
    assert len(fingerprint(Entry("deep_student", student, "dir"))) == 24
    paths, too_deep = walk_tree(student)
    assert too_deep is not None and len(paths) <= MAX_TREE_DEPTH + 1
    with pytest.raises(Refusal) as refusal:
        check_tree(student, "deep_student")
    assert refusal.value.problem == "too_deep"
    assert "deep_student" in refusal.value.text.en and str(MAX_TREE_DEPTH) in refusal.value.text.en


def test_a_folder_just_within_the_depth_cap_is_graded(tmp_path, deep):
    deep(tmp_path, MAX_TREE_DEPTH - 1)
    check_tree(tmp_path, "ok")  # no refusal
    assert walk_tree(tmp_path)[1] is None


def test_a_zip_entry_nested_thousands_deep_is_refused_before_unpacking(tmp_path):
    archive = tmp_path / "deep.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(FILE, REFERENCE)
        zf.writestr("d/" * 1500 + "x.txt", b"x")  # before: "the grader failed: RecursionError"
    with pytest.raises(Refusal) as refusal:
        unpack_zip(archive, tmp_path / "out")
    assert refusal.value.problem == "too_deep" and "deep.zip" in refusal.value.text.en
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.slow
def test_a_batch_with_a_deep_folder_refuses_that_student_and_grades_the_rest(tmp_path, deep):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for name in ("ada", "deep"):
        (subs / name).mkdir()
        (subs / name / FILE).write_text(REFERENCE, encoding="utf-8")
    deep(subs / "deep", 2000)
    proc = subprocess.run(batch(subs, out, "--jobs", "1"), capture_output=True, text=True, timeout=300,
                          env=env_with_tmp(tmp_path / "tmp"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = {r["student"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"ada", "deep"}
    assert rows["ada"]["status"] == "graded" and float(rows["ada"]["total"]) > 0
    assert rows["deep"]["status"] == "refused" and "nested" in rows["deep"]["reason"]


# ---------------------------------------------------------------- nothing left behind


def leftovers(*folders: Path) -> list[str]:
    """Processes whose working folder lies in one of `folders` (zygotes run there) and files left in them."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if any(cwd.startswith(str(f)) for f in folders):
            found.append(f"process {entry.name} in {cwd}")
    for folder in folders:
        found += [f"file {p}" for p in folder.rglob("*")] if folder.exists() else []
    return found


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def env_with_tmp(tmp: Path) -> dict[str, str]:
    tmp.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(tmp), "LANG": "en_US.UTF-8", "LC_ALL": ""}


def make_class(root: Path) -> Path:
    subs = root / "subs"
    subs.mkdir()
    for name, source in (("ada", REFERENCE), ("hang", HANG)):
        (subs / name).mkdir()
        (subs / name / FILE).write_text(source, encoding="utf-8")
    with zipfile.ZipFile(subs / "zed.zip", "w") as zf:
        zf.writestr(f"hw/{FILE}", REFERENCE)
    return subs


def batch(subs: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(PROJECT.root / "grade.py"), "batch", str(subs), "--out", str(out),
            "--exercise", EX, "--seed", "3", "--call-seconds", "1", *extra]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_or_killed_batch_leaves_nothing_behind(tmp_path, sig):
    subs, out, tmp = make_class(tmp_path), tmp_path / "out", tmp_path / "tmp"
    proc = subprocess.Popen(
        batch(subs, out, "--jobs", "2"), env=env_with_tmp(tmp),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert wait_until(lambda: leftovers(tmp, out / ".work") != [], timeout=120), "the jobs never started"
    time.sleep(1.0)
    proc.send_signal(sig)
    proc.communicate(timeout=60)
    # a killed batch cannot clean up after itself: its jobs (PR_SET_PDEATHSIG) and zygotes do
    work = [tmp] if sig == signal.SIGKILL else [tmp, out / ".work"]
    assert wait_until(lambda: not leftovers(*work), timeout=15), leftovers(*work)


def orphan_cgroups() -> set[str]:
    """Worker cgroup directories whose zygote is gone (root with cgroups only: none are made
    otherwise); those of zygotes still running, other graders' on this machine, are theirs."""
    bases = {isolation._cgroup_dir(c) for c in ("memory", "pids", "cpuacct")} - {None}
    found = {d for base in bases for d in Path(base).glob(f"{isolation.CGROUP_PREFIX}*")}
    return {str(d) for d in found if not Path("/proc", d.name.split("-")[1]).exists()}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or isolation._cgroup_dir("pids") is None, reason="cgroups need root")
def test_a_finished_batch_leaves_no_worker_cgroup(tmp_path):
    """Its jobs end their own way, so their zygotes remove their workers' cgroups: left behind, the
    directories piled up by the thousand, and a new zygote whose pid matched an old name ran its
    workers without the process cap (and its report said so, unlike its neighbour's)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("ada", "bea", "cy"):
        (subs / name).mkdir(parents=True)
        (subs / name / FILE).write_text(REFERENCE, encoding="utf-8")
    before = orphan_cgroups()
    done = subprocess.run(batch(subs, out, "--jobs", "2"), env=env_with_tmp(tmp_path / "tmp"),
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "cgroup:pids" in (out / "results" / "ada.json").read_text()
    assert orphan_cgroups() - before == set()


@pytest.mark.skipif(os.geteuid() != 0 or isolation._cgroup_dir("pids") is None, reason="cgroups need root")
def test_a_new_zygote_sweeps_the_empty_cgroups_of_dead_zygotes():
    """A SIGKILLed zygote cannot tidy up; the next one removes what it left, not what a live one owns."""
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    base = Path(isolation._cgroup_dir("pids"))
    stale = base / isolation.cgroup_name(int(dead.stdout), 1)
    live = base / isolation.cgroup_name(os.getpid(), 1)
    stale.mkdir(), live.mkdir()
    try:
        assert isolation.sweep_stale_cgroups(min_age=3600) == 0 and stale.exists()  # too young to tell
        isolation.sweep_stale_cgroups(min_age=0)
        assert not stale.exists() and live.exists()
    finally:
        for d in (stale, live):
            if d.exists():
                d.rmdir()


def single(path: Path, *extra: str) -> list[str]:
    grade_py = str(PROJECT.root / "grade.py")
    return [sys.executable, grade_py, str(path), "--exercise", EX, "--seed", "1", *extra]


def workers_in(tmp: Path) -> list[int]:
    """Children of the zygotes running in `tmp`: the workers that run student code."""
    zygotes = {int(line.split()[1]) for line in leftovers(tmp) if line.startswith("process ")}
    children = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) in zygotes:
            children.append(int(entry.parent.name))
    return children


@pytest.mark.slow
@pytest.mark.parametrize("lang, when", [("en", "grading"), ("zh", "grading"), ("en", "starting")])
def test_ctrl_c_in_single_mode_stops_at_once_writes_nothing_and_leaves_nothing(tmp_path, lang, when):
    sub, tmp = tmp_path / "work", tmp_path / "tmp"
    sub.mkdir()
    (sub / FILE).write_text(HANG, encoding="utf-8")
    env = {**env_with_tmp(tmp), "LANG": "zh_CN.UTF-8" if lang == "zh" else "en_US.UTF-8"}
    proc = subprocess.Popen(single(sub), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if when == "starting":  # the zygote is starting, this process still imports torch and pytest
        assert wait_until(lambda: leftovers(tmp) != [], timeout=60), "the sandbox never started"
    else:
        assert wait_until(lambda: workers_in(tmp) != [], timeout=60), "grading never started"
        time.sleep(1.0)  # inside a check now: the endless loop is running
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    # at once: well before the endless loop's first call deadline (10 s) would have ended it
    assert time.monotonic() - start < 9, "Ctrl-C must stop grading at once"
    assert proc.returncode == 130
    assert out == ""
    assert err.strip().splitlines() == [say("cli.interrupted")(lang)]
    assert not html_report_path(PROJECT, sub).exists()
    assert wait_until(lambda: not leftovers(tmp)), leftovers(tmp)


def test_a_ctrl_c_while_starting_is_held_until_grading_takes_it():
    """grade.py defers Ctrl-C through its imports (one raised inside pydantic's Rust core came out
    as a PanicException and a traceback); `interruptible` then raises it, once."""
    from graders.harness.sandbox.launch import defer_interrupts, take_interrupts

    try:
        defer_interrupts()
        os.kill(os.getpid(), signal.SIGINT)  # noted, not raised
        assert take_interrupts() is True
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        assert take_interrupts() is False  # taken once
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
