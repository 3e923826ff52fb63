"""`grade.py batch`: zip intake rules, a whole class graded with every kind of bad submission, and
resuming for real after the batch is killed with SIGKILL or interrupted with SIGINT mid-way.

The batch runs as a real `python grade.py batch` process (its jobs are processes of their own), on
exercise 2 only and with short deadlines, so that each run takes a few seconds.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import PROJECT
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.harness.batch.progress import Progress
from graders.harness.core import inert
from graders.harness.core.intake import (
    Refusal,
    ZipCaps,
    discover,
    require_exercise_files,
    submission_root,
    unpack_zip,
)
from graders.harness.formats.result import SubmissionResult

EX = "ex02_self_attention"
FILE = f"{EX}.py"
REFERENCE = PROJECT.reference_path(EX).read_text(encoding="utf-8")
STUB = PROJECT.template_path(EX).read_text(encoding="utf-8")
NO_SCALING = (PROJECT.root / "tests" / "mutants" / EX / "no_scaling.py").read_text(encoding="utf-8")
WRONG_SCALE = (PROJECT.root / "tests" / "mutants" / EX / "wrong_scale.py").read_text(encoding="utf-8")


# ---------------------------------------------------------------- zip intake


def make_zip(
    path: Path, members: dict[str, bytes], *, link: str | None = None, encrypted: str | None = None
) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, "/etc/passwd")
        if encrypted:
            zf.writestr(encrypted, b"secret")
    if encrypted:  # zipfile cannot write encrypted entries: set the flag bit in both headers by hand
        data = bytearray(path.read_bytes())
        for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
            at = data.rfind(signature, 0, data.rfind(encrypted.encode()))
            data[at + flag_at] |= 0x1
        path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("members", "kwargs", "problem"),
    [
        ({"../evil.py": b"x"}, {}, "zip_traversal"),
        ({"sub/../../evil.py": b"x"}, {}, "zip_traversal"),
        ({"..\\evil.py": b"x"}, {}, "zip_traversal"),
        ({"/etc/evil.py": b"x"}, {}, "zip_absolute"),
        ({"C:/evil.py": b"x"}, {}, "zip_absolute"),
        ({FILE: b"x"}, {"link": "ex01_attention_by_hand.py"}, "zip_link"),
        ({FILE: b"x"}, {"encrypted": "secret.py"}, "zip_encrypted"),
    ],
)
def test_zip_refuses_escapes_links_and_encryption(tmp_path, members, kwargs, problem):
    archive = make_zip(tmp_path / "s.zip", members, **kwargs)
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(Refusal) as refused:
        unpack_zip(archive, dest)
    assert refused.value.problem == problem
    assert "s.zip" in refused.value.text.en and "s.zip" in refused.value.text.zh
    assert not (tmp_path / "evil.py").exists() and list(dest.rglob("*")) == []  # refused before writing


def test_zip_bomb_is_stopped_while_unpacking(tmp_path):
    archive = make_zip(tmp_path / "bomb.zip", {FILE: b"0" * (4 << 20)})  # compresses to a few KiB
    assert archive.stat().st_size < 64 << 10
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(Refusal) as refused:
        unpack_zip(archive, dest, ZipCaps(total_bytes=1 << 20))
    assert refused.value.problem == "zip_too_large"
    assert sum(p.stat().st_size for p in dest.rglob("*") if p.is_file()) <= (1 << 20) + (1 << 16)


def test_zip_with_too_many_files_is_refused(tmp_path):
    archive = make_zip(tmp_path / "many.zip", {f"f{i}.txt": b"" for i in range(30)})
    with pytest.raises(Refusal) as refused:
        unpack_zip(archive, tmp_path, ZipCaps(members=20))
    assert refused.value.problem == "zip_too_many"


def test_corrupt_zip_is_refused(tmp_path):
    archive = tmp_path / "junk.zip"
    archive.write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(Refusal) as refused:
        unpack_zip(archive, tmp_path)
    assert refused.value.problem == "zip_bad"


def test_zip_wrapping_one_folder_is_found(tmp_path):
    archive = make_zip(tmp_path / "s.zip", {f"homework/{FILE}": b"x = 1\n", "__MACOSX/._x": b""})
    dest = unpack_zip(archive, tmp_path / "out")
    root = submission_root(dest, [EX])
    assert (root / FILE).read_text() == "x = 1\n"
    require_exercise_files(root, [EX])
    with pytest.raises(Refusal) as refused:
        require_exercise_files(dest / "__MACOSX", [EX])
    assert refused.value.problem == "no_files"


def test_a_folder_named_after_another_s_shortened_key_keeps_a_key_of_its_own(tmp_path):
    """The unseen attack: a folder name over the key's length is shortened to `head~digest`; a
    second folder named exactly that shared its key, and its result replaced the first's."""
    victim = "victim_" + "v" * 200
    (tmp_path / victim).mkdir()
    (tmp_path / discover(tmp_path)[0].student).mkdir()  # the attacker, named after the victim's key
    keys = [e.student for e in discover(tmp_path)]
    assert len(keys) == len(set(keys)) == 2


def test_discover_keeps_every_entry_once(tmp_path):
    (tmp_path / "alice").mkdir()
    make_zip(tmp_path / "alice.zip", {FILE: b""})
    make_zip(tmp_path / "bob.zip", {FILE: b""})
    (tmp_path / "notes.txt").write_text("hi")
    (tmp_path / ".DS_Store").write_text("")
    (tmp_path / "__MACOSX").mkdir()
    (tmp_path / ".hidden_student").mkdir()  # a name that starts with a dot is still a student
    os.symlink(tmp_path / "alice", tmp_path / "linked")
    entries = {e.student: e.kind for e in discover(tmp_path)}
    assert entries == {
        ".hidden_student": "dir",
        "alice": "dir",
        "alice.zip": "zip",
        "bob": "zip",
        "notes.txt": "other",
        "linked": "link",
    }


def test_progress_bar_on_a_terminal_and_lines_otherwise():
    result = SubmissionResult(
        student="ada", source="ada", status="graded", seed=1, lang="en", score=3, max_score=4
    )
    bar, lines = io.StringIO(), io.StringIO()
    on_tty, in_log = Progress(10, 2, bar, bar=True), Progress(10, 2, lines, bar=False)
    for progress in (on_tty, in_log):
        progress.started()
        progress.start = time.monotonic() - 2.0  # one graded in 2 s -> 0.5/s, 7 left -> 0:14
        progress.advance(result)
    on_tty.close()
    drawn = bar.getvalue()
    assert "\r\x1b[2K" in drawn  # redrawn in place
    assert re.search(r"3/10\S* +0\.5/s  ETA 0:1[45] ada", ANSI.sub("", drawn.split("\r")[-1]))
    assert lines.getvalue() == "[ 3/10] ada: graded 3/4 (0.00 s; 0.5/s, ETA 0:14)\n"


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@settings(max_examples=60, deadline=None, database=None)
@given(st.text(max_size=40))
def test_the_progress_bar_shows_a_student_name_as_plain_text(name):
    result = SubmissionResult(
        student=name or "x", source="x", status="graded", seed=1, lang="en", score=1, max_score=1
    )
    bar = io.StringIO()
    progress = Progress(3, 0, bar, bar=True)
    progress.started()
    progress.advance(result)
    progress.close()
    visible = ANSI.sub("", bar.getvalue())  # the bar's own colours and cursor moves
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", visible.replace("\r", ""))
    assert inert.single_line(result.student)[:24].strip() in visible  # markup shown, not applied


# ---------------------------------------------------------------- running a batch


def write_dir(root: Path, name: str, source: str | None) -> None:
    folder = root / name
    folder.mkdir()
    if source is not None:
        (folder / FILE).write_text(source, encoding="utf-8")


def batch_cmd(subs: Path, out: Path, *extra: str) -> list[str]:
    """The command, run from `subs.parent` with relative paths (the jobs run elsewhere: paths must hold)."""
    return [
        sys.executable,
        str(PROJECT.root / "grade.py"),
        "batch",
        subs.name,
        "--out",
        os.path.relpath(out, subs.parent),
        "--exercise",
        EX,
        "--seed",
        "11",
        "--lang",
        "en",
        "--call-seconds",
        "1",
        *extra,
    ]


def run_batch(
    subs: Path, out: Path, *extra: str, timeout: float = 300, tmp: Path | None = None
) -> subprocess.CompletedProcess:
    """Run a batch; with `tmp`, as its TMPDIR (to see afterwards that nothing of it was left there)."""
    env = None if tmp is None else {**os.environ, "TMPDIR": str(tmp)}
    cmd = batch_cmd(subs, out, *extra)
    return subprocess.run(cmd, cwd=subs.parent, capture_output=True, text=True, timeout=timeout, env=env)


def gradebook_rows(out: Path) -> list[dict]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def no_temporary_files(out: Path) -> bool:
    return not [p for p in out.rglob("*") if ".tmp-" in p.name]


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """One batch over a class with good, wrong and hostile submissions (2 jobs, Gradescope format)."""
    subs = tmp_path_factory.mktemp("class")
    out = tmp_path_factory.mktemp("results") / "out"
    write_dir(subs, "ada", REFERENCE)
    write_dir(subs, "ben", STUB)
    write_dir(subs, "cy", NO_SCALING)
    write_dir(subs, "dee", NO_SCALING)
    write_dir(subs, "eve", WRONG_SCALE)
    write_dir(subs, "syntax", "def scaled_dot_product_attention(q, k, v):\n    return (\n")
    write_dir(subs, "flood", 'print("spam " * 1_000_000)\n' + REFERENCE)
    loop = "\n\ndef scaled_dot_product_attention(q, k, v):\n    while True:\n        pass\n"
    write_dir(subs, "hang", REFERENCE + loop)  # every check times out in turn: the watchdog ends it at 6 s
    write_dir(subs, "empty", None)
    write_dir(subs, "<img src=x onerror=alert(1)>", None)
    make_zip(subs / "zed.zip", {f"hw/{FILE}": REFERENCE.encode()})
    make_zip(subs / "mallory.zip", {"../../escape.py": b"print('pwned')"})
    make_zip(subs / "bomb.zip", {FILE: b"#" * (40 << 20)})
    (subs / "readme.txt").write_text("not a submission")
    # budgets past the watchdog's limit: this batch tests the watchdog (a job stopped mid-submission)
    watchdog = ["--submission-timeout", "6", "--call-seconds", "30", "--exercise-budget", "60"]
    watchdog += ["--submission-budget", "60"]
    tmp = tmp_path_factory.mktemp("tmp")
    proc = run_batch(subs, out, "--jobs", "2", "--format", "gradescope", *watchdog, tmp=tmp)
    return subs, out, proc, tmp


@pytest.mark.slow
def test_batch_grades_everyone_and_gives_every_failure_a_row(class_run):
    subs, out, proc, tmp = class_run
    assert proc.returncode == 0, proc.stderr
    rows = {r["student"]: r for r in gradebook_rows(out)}
    students = {
        "ada",
        "ben",
        "cy",
        "dee",
        "eve",
        "syntax",
        "flood",
        "hang",
        "empty",
        "<img src=x onerror=alert(1)>",
        "zed",
        "mallory",
        "bomb",
        "readme.txt",
    }
    assert set(rows) == students and len(gradebook_rows(out)) == len(students)
    assert {s: rows[s]["status"] for s in students} == {
        "ada": "graded",
        "ben": "graded",
        "cy": "graded",
        "dee": "graded",
        "eve": "graded",
        "syntax": "graded",
        "flood": "graded",
        "hang": "error",
        "empty": "refused",
        "<img src=x onerror=alert(1)>": "refused",
        "zed": "graded",
        "mallory": "refused",
        "bomb": "refused",
        "readme.txt": "refused",
    }
    full = f"{PROJECT.load_manifest(EX).max_score:g}"
    assert rows["ada"][EX] == rows["ada"]["total"] == rows["zed"]["total"] == rows["flood"]["total"] == full
    assert rows["ben"]["total"] == rows["syntax"]["total"] == "0"
    assert 0 < float(rows["cy"]["total"]) < float(full) and 0 < float(rows["eve"]["total"]) < float(full)
    assert "6 s" in rows["hang"]["reason"] and "outside" in rows["mallory"]["reason"]
    assert "zip bomb" in rows["bomb"]["reason"] and "none of the exercise files" in rows["empty"]["reason"]
    assert not (subs.parent / "escape.py").exists() and not (out / "escape.py").exists()
    assert no_temporary_files(out)
    # the job stopped mid-submission ("hang") left nothing: not its unpacked zips nor its zygote's folder
    assert list(tmp.iterdir()) == [] and not (out / ".work").exists()


@pytest.mark.slow
def test_batch_results_are_complete_seeded_and_in_gradescope_format(class_run):
    subs, out, proc, tmp = class_run
    settings = json.loads((out / "batch.json").read_text())
    assert settings["settings"]["seed"] == 11
    results = [SubmissionResult.model_validate_json(p.read_text()) for p in (out / "results").glob("*.json")]
    assert len(results) == 14 and all(r.seed == 11 for r in results)
    assert all(r.report.seed == 11 for r in results if r.report)
    flood = next(r for r in results if r.student == "flood")
    assert flood.report.exercises[0].output_dropped > 0  # the flood was capped, not carried
    for result in results:
        data = json.loads((out / "gradescope" / f"{result.student}.json").read_text())
        assert data["score"] == result.score and data["extra_data"]["seed"] == 11
    # plain progress lines when stderr is not a terminal
    assert re.search(r"^\[ ?1/14\] .+: (graded|refused|error) .*/s, ETA", proc.stderr, re.M)
    assert "peak RSS" in proc.stderr


@pytest.mark.slow
def test_class_report_and_analytics_show_the_shared_mistake(class_run):
    subs, out, proc, tmp = class_run
    figures = json.loads((out / "analytics.json").read_text())
    assert figures["submissions"] == 14 and figures["graded"] == 8 and figures["refused"] == 5
    assert figures["errors"] == 1
    assert sum(b["count"] for b in figures["histogram"]) == 8
    assert figures["histogram"][-1]["count"] == 3 and figures["histogram"][0]["count"] >= 2  # ada, zed, flood
    shared = {m["id"]: m["students"] for m in figures["misconceptions"]}
    assert shared[f"{EX}/no_scaling"] == 2
    scaling = next(c for c in figures["checks"] if c["id"] == "sdpa_scaling")
    assert scaling["attempted"] == 8 and scaling["passed"] == 3
    named = {d["id"]: d for d in scaling["diagnoses"]}
    assert scaling["diagnoses"][0]["id"] == "no_scaling" and named["no_scaling"]["students"] == 2
    assert named["wrong_scale"]["students"] == 1
    # class-wide sentences leave out one student's values instead of showing the {placeholders}
    assert "…" in named["wrong_scale"]["message"] and not any(
        "{" in m["message"] for m in figures["misconceptions"]
    )
    html = (out / "class_report.html").read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html  # autoescaped
    assert f"{100 * 3 / 8:.0f}% (3/8)" in html  # sdpa_scaling's pass rate, as in analytics.json
    assert html.count(named["no_scaling"]["message"]) >= 2  # in the check's row and the class-wide list
    # every submission not fully graded is listed with its reason, graded ones included
    listed = {p["student"]: p for p in figures["problems"]}
    assert listed["syntax"]["status"] == "graded" and listed["syntax"]["problem"] == f"{EX}: file"
    assert "syntax error" in listed["syntax"]["reason"]
    assert {"hang", "mallory", "bomb", "empty", "readme.txt"} <= set(listed)
    assert not {"ada", "ben", "cy", "zed"} & set(listed)  # wrong or unfinished is not "not graded"
    assert "syntax error" in html


# ---------------------------------------------------------------- a job's reports are grade()'s


def mixed_class(root: Path) -> dict[str, dict[str, str]]:
    """Whole submissions over every exercise: references, mutants (one draws random numbers in its
    forward pass), stubs, a broken and missing file, printed output; a reference again at the end."""
    ids = PROJECT.exercise_ids()
    ref = {e: PROJECT.reference_path(e).read_text(encoding="utf-8") for e in ids}
    stub = {e: PROJECT.template_path(e).read_text(encoding="utf-8") for e in ids}
    mutant = {
        e: (PROJECT.root / "tests" / "mutants" / e / f"{name}.py").read_text(encoding="utf-8")
        for e, name in [(ids[0], "no_softmax"), (EX, "randomness_in_forward"), (ids[2], "pe_base_1000")]
    }
    cases = {
        "a_reference": ref,
        "b_mutants": {**ref, **mutant},
        "c_stub": stub,
        "d_broken": {**ref, ids[0]: "def broken(:\n", ids[3]: ref[ids[3]] + "\nprint('hello from 4')\n"},
        "e_missing": {e: ref[e] for e in ids[1:]},
        "f_reference_again": ref,
    }
    for student, files in cases.items():
        (root / student).mkdir()
        for exercise, text in files.items():
            (root / student / f"{exercise}.py").write_text(text, encoding="utf-8")
    return cases


def assert_same_report(got, expected) -> None:
    got, expected = got.model_dump(exclude={"submission"}), expected.model_dump(exclude={"submission"})
    for mine, theirs in zip(got.pop("exercises"), expected.pop("exercises"), strict=True):
        assert mine == theirs, mine["id"]
    assert got == expected


def test_one_pytest_session_grades_each_submission_as_grade_does(tmp_path, pool):
    """`SessionGrader` (one pytest session for many submissions, as in a batch job) against a fresh
    `grade()` per submission: identical reports, whatever was graded before in the session."""
    from graders.harness.core.runner import SessionGrader, grade

    subs = tmp_path / "subs"
    subs.mkdir()
    cases = list(mixed_class(subs))
    order = cases + cases[::-1]  # each one also after every other
    got = []
    grader = SessionGrader(PROJECT, pool=pool)
    grader.run(lambda grade_one: got.extend(grade_one(subs / s, seed=31, lang="zh") for s in order))
    assert len(got) == len(order)
    for student, report in zip(order, got, strict=True):
        assert_same_report(report, grade(PROJECT, subs / student, seed=31, lang="zh", pool=pool))
    scores = {s: r.score for s, r in zip(order, got, strict=True)}
    assert scores["a_reference"] == scores["f_reference_again"] == got[0].max_score > scores["b_mutants"] > 0
    assert scores["c_stub"] == 0


def test_a_grader_that_cannot_be_collected_fails_every_submission_of_a_session(tmp_path, pool, monkeypatch):
    """pytest runs no check at all when a grader fails to import, nor does the session, for each
    submission. (grade() names the import error only the first time in a process: pytest then finds
    the broken module in sys.modules and collects nothing, so later reports say no test implements
    the check. A session collects once, so every submission gets the import error.)"""
    from graders.harness.authoring.distribution import write_distribution
    from graders.harness.core.project import Project
    from graders.harness.core.runner import SessionGrader, grade

    root = tmp_path / "course"
    write_distribution(PROJECT, root, "autograder", exercises=[EX])
    grader = root / "graders" / f"test_{EX}.py"
    grader.write_text("raise RuntimeError('this grader is broken')\n" + grader.read_text(encoding="utf-8"))
    course = Project(root)
    write_dir(tmp_path, "sub", REFERENCE)
    # pytest would find the project's own grader already imported under the same name, not this one
    monkeypatch.delitem(sys.modules, f"graders.test_{EX}", raising=False)
    got = []
    SessionGrader(course, pool=pool).run(
        lambda grade_one: got.extend(grade_one(tmp_path / "sub", seed=3) for _ in range(2))
    )
    expected = grade(course, tmp_path / "sub", seed=3, pool=pool)
    for report in got:
        checks = report.exercises[0].checks
        assert [(c.id, c.status, c.score) for c in checks] == [
            (c.id, "error", 0.0) for c in expected.exercises[0].checks
        ]
        assert all("this grader is broken" in c.message for c in checks)
    assert {c.status for c in expected.exercises[0].checks} == {"error"}


@pytest.mark.slow
def test_a_job_renews_its_pytest_session_when_a_manifest_changes(tmp_path):
    """A job collects the graders once; a manifest edited during the batch takes effect from the next
    submission, as it did when each submission ran its own pytest."""
    from graders.harness.authoring.distribution import write_distribution

    root = tmp_path / "course"
    write_distribution(PROJECT, root, "autograder", exercises=[EX])
    write_dir(tmp_path, "sub", REFERENCE)
    cmd = [sys.executable, "-m", "graders.harness.batch.dispatcher", "--job", "--project", str(root),
           "--seed", "4", "--lang", "en", "--parent", str(os.getpid())]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(PROJECT.root)}
    job = subprocess.Popen(cmd, cwd=PROJECT.root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    request = json.dumps({"student": "sub", "path": str(tmp_path / "sub"), "kind": "dir"}) + "\n"

    def ask() -> SubmissionResult:
        job.stdin.write(request)
        job.stdin.flush()
        return SubmissionResult.model_validate(json.loads(job.stdout.readline())["result"])

    try:
        assert json.loads(job.stdout.readline())["ready"] is True
        before = ask()
        manifest = root / "exercises" / EX / "exercise.toml"
        text = manifest.read_text(encoding="utf-8")
        manifest.write_text(text.replace("points = 2", "points = 7", 1), encoding="utf-8")
        after = ask()
        again = ask()
    finally:
        job.stdin.close()
        job.wait(30)
    assert before.status == after.status == again.status == "graded"
    full = PROJECT.load_manifest(EX).max_score
    assert before.score == before.max_score == full
    assert after.score == after.max_score == again.score == full + 5  # the first check: 2 points -> 7
    assert after.report.exercises[0].checks[0].max_score == 7


@pytest.mark.slow
def test_batch_results_are_the_reports_grade_gives(tmp_path, pool):
    from graders.harness.core.runner import grade

    subs = tmp_path / "subs"
    subs.mkdir()
    cases = mixed_class(subs)
    out = tmp_path / "out"
    cmd = [sys.executable, str(PROJECT.root / "grade.py"), "batch", str(subs), "--out", str(out),
           "--jobs", "1", "--seed", "11", "--lang", "en"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for student in cases:
        result = SubmissionResult.model_validate_json((out / "results" / f"{student}.json").read_text())
        assert result.status == "graded", result.reason
        assert_same_report(result.report, grade(PROJECT, subs / student, seed=11, lang="en", pool=pool))


# ---------------------------------------------------------------- resuming after a kill


def make_class(root: Path, count: int) -> Path:
    subs = root / "subs"
    subs.mkdir()
    for i in range(count):
        write_dir(subs, f"s{i:02d}", REFERENCE if i % 2 else STUB)
    return subs


def finished(out: Path) -> dict[str, tuple[int, int]]:
    """Finished results by student, with (inode, mtime) to prove they are not rewritten."""
    folder = out / "results"
    if not folder.is_dir():
        return {}
    return {p.stem: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.glob("*.json")}


def wait_for_results(out: Path, at_least: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(finished(out)) < at_least:
        assert proc.poll() is None, "the batch ended before it could be interrupted"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)


def job_pids(parent: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"graders.harness.batch.dispatcher" in cmd and b"--parent" in cmd:
                if cmd[cmd.index(b"--parent") + 1] == str(parent).encode():
                    pids.append(int(entry.name))
    return pids


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupted_batch_resumes_without_losing_or_regrading(tmp_path, sig):
    count = 14
    subs = make_class(tmp_path, count)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        batch_cmd(subs, out, "--jobs", "1"),
        cwd=subs.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_results(out, 3, proc)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    before = finished(out)
    assert 3 <= len(before) < count, "interrupt mid-way"
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "run the same command again" in err
        assert len(gradebook_rows(out)) == len(before)  # the partial gradebook holds what is finished
    deadline = time.monotonic() + 10
    while job_pids(proc.pid) and time.monotonic() < deadline:  # jobs die with the batch (via PDEATHSIG)
        time.sleep(0.1)
    assert job_pids(proc.pid) == []
    for path in (out / "results").glob("*.json"):
        SubmissionResult.model_validate_json(path.read_text())  # every result file is whole

    again = run_batch(subs, out, "--jobs", "1")
    assert again.returncode == 0, again.stderr
    after = finished(out)
    assert set(after) == {f"s{i:02d}" for i in range(count)}
    assert {s: after[s] for s in before} == before  # kept as they were, not graded again
    assert f"{len(before)} kept from before" in again.stderr
    rows = gradebook_rows(out)
    assert sorted(r["student"] for r in rows) == sorted(after)  # one row each: nothing lost or duplicated
    assert {r["total"] for r in rows} == {"0", f"{PROJECT.load_manifest(EX).max_score:g}"}
    assert no_temporary_files(out)


def test_resume_refuses_a_different_seed(tmp_path):
    subs = make_class(tmp_path, 1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "batch.json").write_text(
        json.dumps(
            {
                "settings": {
                    "seed": 5,
                    "lang": "en",
                    "exercises": [EX],
                    "call_seconds": 1.0,
                    "run_hidden": True,
                }
            }
        )
    )
    proc = run_batch(subs, out)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: out: this batch was started with --seed 5; "
        "resume it with the same value, or choose another --out"
    ]


def test_results_folder_inside_submissions_is_refused(tmp_path):
    subs = make_class(tmp_path, 1)
    proc = run_batch(subs, subs / "results")
    assert proc.returncode == 2 and "must not be inside the submissions folder" in proc.stderr
