"""Sharded batches (`grade.py batch --shard I/N`, `--shard auto`) and `grade.py merge`: the merged
folder is byte for byte what one batch over the whole class writes (durations aside), and shards
that do not make one batch are refused with one line saying why.

The batches run as real `python grade.py batch` processes on exercise 2 only, with short deadlines.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT
from test_batch import NO_SCALING, REFERENCE, STUB, WRONG_SCALE, batch_cmd, make_zip, write_dir

from graders.harness.batch.shard import Shard, ShardError, parse_shard, project_digest, shard_of

EX = "ex02_self_attention"
# Runs compared byte for byte get a deadline no check of these submissions comes near, even on a
# loaded machine: one call timing out in one run but not the other would change a score.
CALM = ("--call-seconds", "10")
STUDENTS = ["ada", "ben", "cy", "dee", "eve", "fay", "gus", "hal", "zed", "notes.txt"]


# ---------------------------------------------------------------- choosing a shard


def test_a_students_shard_is_fixed_and_every_student_has_exactly_one():
    # fixed values: the hash is SHA-256 of the key, not Python's per-process salted hash()
    assert [shard_of(s, 3) for s in STUDENTS] == [2, 2, 0, 2, 2, 0, 2, 1, 2, 0]
    names = [f"student{i:04d}" for i in range(300)] + ["m\\xfcller", "<img src=x>", "张三"]
    for count in (1, 2, 5):
        shards = [Shard(i, count) for i in range(count)]
        assert all(sum(s.holds(n) for s in shards) == 1 for n in names)
    sizes = [sum(Shard(i, 4).holds(n) for n in names) for i in range(4)]
    assert min(sizes) > 50  # spread, not all in one shard
    probe = "from graders.harness.batch.shard import shard_of; print(shard_of('student0042', 7))"
    for seed in ("1", "2"):  # the same in another process, whatever its hash seed
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT.root, env=env, capture_output=True)
        assert out.stdout.decode().strip() == str(shard_of("student0042", 7))


@pytest.mark.parametrize(
    ("spec", "env", "expected"),
    [
        ("2/5", {}, Shard(2, 5)),
        ("0/1", {"JOB_COMPLETION_INDEX": "3"}, Shard(0, 1)),  # explicit wins over the environment
        ("auto/4", {"JOB_COMPLETION_INDEX": "3"}, Shard(3, 4)),
        ("auto", {"JOB_COMPLETION_INDEX": "0", "JOB_COMPLETIONS": "2"}, Shard(0, 2)),
        ("auto", {"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "5"}, Shard(4, 5)),
        # `--array=1-4`: the tasks are numbered from 1; `--array=0-8:2`: every other number
        ("auto", {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "4"},
         Shard(0, 4)),
        ("auto", {"SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2",
                  "SLURM_ARRAY_TASK_COUNT": "5"}, Shard(3, 5)),
    ],
)  # fmt: skip
def test_shard_specs(spec, env, expected):
    assert parse_shard(spec, env) == expected


@pytest.mark.parametrize(
    ("spec", "env", "says"),
    [
        ("5/5", {}, "shard 5 of 5 does not exist"),
        ("1/0", {}, "does not exist"),
        ("3", {}, "give I/N"),
        ("a/b", {}, "give I/N"),
        ("auto", {}, "neither JOB_COMPLETION_INDEX"),
        ("auto", {"JOB_COMPLETION_INDEX": "1"}, "set JOB_COMPLETIONS"),
        ("auto/3", {"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "4"}, "JOB_COMPLETIONS says 4"),
        ("auto", {"JOB_COMPLETION_INDEX": "x", "JOB_COMPLETIONS": "4"}, "'x' is not a whole number"),
        ("auto", {"SLURM_ARRAY_TASK_ID": "2"}, "SLURM_ARRAY_TASK_COUNT is not set"),
        ("auto", {"SLURM_ARRAY_TASK_ID": "9", "SLURM_ARRAY_TASK_COUNT": "4"}, "shard 9 of 4"),
    ],
)
def test_bad_shard_specs_say_what_is_wrong(spec, env, says):
    with pytest.raises(ShardError) as error:
        parse_shard(spec, env)
    assert says in str(error.value)


def test_the_project_digest_follows_graders_exercises_and_reference(tmp_path):
    from graders.harness.authoring.distribution import write_distribution
    from graders.harness.core.project import Project

    root = tmp_path / "course"
    write_distribution(PROJECT, root, "autograder", exercises=[EX])
    course = Project(root)
    before = project_digest(course)
    (root / "graders" / "__pycache__").mkdir(exist_ok=True)
    (root / "graders" / "__pycache__" / "x.pyc").write_bytes(b"compiled")  # not a change of code
    assert project_digest(course) == before
    for changed in (root / "reference" / f"{EX}.py", root / "exercises" / EX / "exercise.toml"):
        saved = changed.read_bytes()
        changed.write_bytes(saved + b"\n")
        assert project_digest(course) != before, changed
        changed.write_bytes(saved)
    assert project_digest(course) == before


# ---------------------------------------------------------------- sharded batches and merge


def run(subs: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`grade.py merge ARGS`, or a batch of `subs` into the folder ARGS[0] with options ARGS[1:]."""
    if args[0] == "merge":
        cmd = [sys.executable, str(PROJECT.root / "grade.py"), *args]
    else:
        cmd = batch_cmd(subs, subs.parent / args[0], *args[1:])
    env = {**os.environ, **(env or {})}
    return subprocess.run(cmd, cwd=subs.parent, capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One class graded whole, and in 3 shards (one by --shard I/N, one each from a Kubernetes and a
    Slurm environment), then merged."""
    root = tmp_path_factory.mktemp("shards")
    subs = root / "subs"
    subs.mkdir()
    sources = {"ada": REFERENCE, "ben": STUB, "cy": NO_SCALING, "dee": NO_SCALING, "eve": WRONG_SCALE,
               "fay": None, "gus": REFERENCE, "hal": WRONG_SCALE}  # fmt: skip
    for student, source in sources.items():
        write_dir(subs, student, source)
    make_zip(subs / "zed.zip", {f"hw/{EX}.py": REFERENCE.encode()})
    (subs / "notes.txt").write_text("not a submission")
    fmt = ("--jobs", "1", "--format", "gradescope", *CALM)
    whole = run(subs, "whole", *fmt)
    assert whole.returncode == 0, whole.stderr
    kube = {"JOB_COMPLETION_INDEX": "1", "JOB_COMPLETIONS": "3"}
    slurm = {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}
    for name, spec, env in (("s0", "0/3", {}), ("s1", "auto", kube), ("s2", "auto", slurm)):
        proc = run(subs, name, *fmt, "--shard", spec, env=env)
        assert proc.returncode == 0, proc.stderr
    merged = run(subs, "merge", "s0", "s1", "s2", "--out", "merged")
    assert merged.returncode == 0, merged.stderr
    return root


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file()
        and p.parts[len(folder.parts)] not in ("logs",)
        and p.name not in (".lock", "batch.json")
    }


def without(data: bytes, key: str) -> dict:
    loaded = json.loads(data)
    loaded.pop(key)
    return loaded


@pytest.mark.slow
def test_merged_shards_are_byte_for_byte_one_batch(graded):
    shards = {s: json.loads((graded / s / "batch.json").read_text())["scope"] for s in ("s0", "s1", "s2")}
    assert [shards[s]["shard"] for s in sorted(shards)] == ["0/3", "1/3", "2/3"]
    held = {s: set(scope["students"]) for s, scope in shards.items()}
    assert held == {
        "s0": {"cy", "fay", "notes.txt"},
        "s1": {"hal"},
        "s2": {"ada", "ben", "dee", "eve", "gus", "zed"},
    }
    whole, merged = files(graded / "whole"), files(graded / "merged")
    assert set(whole) == set(merged) and len(whole) == 3 + 2 * 10
    for name in ("gradebook.csv", "analytics.json", "class_report.html"):
        assert merged[name] == whole[name], name
    for name in whole:  # each result and Gradescope file: the same but for the time it took
        if name.startswith("results/"):
            assert without(merged[name], "elapsed") == without(whole[name], "elapsed"), name
        elif name.startswith("gradescope/"):
            assert without(merged[name], "execution_time") == without(whole[name], "execution_time"), name
    assert b"28" in merged["gradebook.csv"] and merged["gradebook.csv"].count(b"\r\n") == 11


@pytest.mark.slow
def test_a_merged_folder_resumes_as_one_batch(graded, tmp_path):
    shutil.copytree(graded / "merged", tmp_path / "again")
    proc = run(graded / "subs", str(tmp_path / "again"), "--jobs", "1", *CALM)
    assert proc.returncode == 0, proc.stderr
    assert "graded 0 now, 10 kept from before" in proc.stderr
    assert (tmp_path / "again" / "gradebook.csv").read_bytes() == (
        graded / "whole" / "gradebook.csv"
    ).read_bytes()


def edit_batch(folder: Path, change) -> None:
    data = json.loads((folder / "batch.json").read_text())
    change(data)
    (folder / "batch.json").write_text(json.dumps(data))


def refusal(graded: Path, tmp_path: Path, change=None, shards=("s0", "s1", "s2"), folder="s1") -> str:
    for shard in ("s0", "s1", "s2"):
        shutil.copytree(graded / shard, tmp_path / shard)
    if change:
        change(tmp_path / folder)
    out = tmp_path / "merged"
    proc = run(graded / "subs", "merge", *(str(tmp_path / s) for s in shards), "--out", str(out))
    assert proc.returncode == 2 and not (out / "gradebook.csv").exists()
    (line,) = proc.stderr.strip().splitlines()
    return line.removeprefix("error: ").replace(str(tmp_path) + "/", "")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "shards", "says"),
    [
        (None, ("s0", "s1", "s1"), "s1 and s1 are both shard 1/3: they overlap"),
        (None, ("s0", "s2"), "shard 1/3 is missing: grade it, then merge all 3"),
        (lambda f: edit_batch(f, lambda d: d["settings"].update(seed=12)), None,
         "s0 and s1 were graded with different settings (seed 11 and 12): merge only the shards of one"),
        (lambda f: edit_batch(f, lambda d: d["scope"].update(project="0" * 20)), None,
         "s0 and s1 were graded with different graders, exercises or reference (project digest "),
        (lambda f: edit_batch(f, lambda d: d["scope"].update(submissions="0" * 20)), None,
         "s0 and s1 were graded with different submissions (submissions digest "),
        (lambda f: edit_batch(f, lambda d: d["scope"].update(shard="1/4")), None,
         "the shards split the class in different numbers of parts ([3, 4])"),
        (lambda f: edit_batch(f, lambda d: d["scope"]["students"].update(cy=2)), None,
         "s0 and s1 both hold 'cy': they overlap"),
        (lambda f: (f / "results" / "hal.json").unlink(), None,
         "s1: 1 of 1 submissions of shard 1/3 have no result (did its batch finish?); "
         "run its batch again: it resumes"),
        (lambda f: edit_batch(f, lambda d: d.pop("scope")), None,
         "s1: its batch.json records no shard (graded before sharding existed?)"),
    ],
)  # fmt: skip
def test_merge_refuses_shards_that_are_not_one_batch(graded, tmp_path, change, shards, says):
    assert refusal(graded, tmp_path, change, shards or ("s0", "s1", "s2")).startswith(says)


@pytest.mark.slow
def test_merge_refuses_a_project_other_than_the_shards(graded, tmp_path):
    edit = lambda d: [d["scope"].update(project="0" * 20) for _ in [0]]  # noqa: E731
    for shard in ("s0", "s1", "s2"):
        shutil.copytree(graded / shard, tmp_path / shard)
        edit_batch(tmp_path / shard, edit)
    proc = run(graded / "subs", "merge", *(str(tmp_path / s) for s in ("s0", "s1", "s2")), "--out", "m")
    assert proc.returncode == 2
    assert f"other graders, exercises or reference than this project's (digest {'0' * 20}" in proc.stderr


def test_a_shard_resumes_only_as_the_same_shard(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    write_dir(subs, "ada", REFERENCE)
    out = tmp_path / "out"
    out.mkdir()
    settings = {"seed": 11, "lang": "en", "exercises": [EX], "call_seconds": 1.0, "run_hidden": True}
    (out / "batch.json").write_text(json.dumps({"settings": settings, "scope": {"shard": "0/2"}}))
    for extra, says in ((["--shard", "1/2"], "--shard 0/2"), ([], "--shard 0/2")):
        proc = run(subs, "out", *extra)
        assert proc.returncode == 2
        assert (
            proc.stderr.strip() == f"error: out: this batch was started with {says}; resume it the same way"
        )
    proc = run(subs, "out", "--shard", "auto")
    assert proc.returncode == 2 and "neither JOB_COMPLETION_INDEX" in proc.stderr
