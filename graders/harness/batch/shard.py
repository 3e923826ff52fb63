"""Sharded batches and `grade.py merge`: one class graded by N machines, merged into one result.

    python grade.py batch SUBMISSIONS --out OUT_I --shard I/N     (0 <= I < N), or --shard auto[/N]
    python grade.py merge OUT_0 ... OUT_N-1 --out OUT [--format gradescope|prairielearn|junit]

A shard grades the students whose key (`Entry.student`) hashes to it: the first 8 bytes of the
key's SHA-256, as an integer, modulo N. The hash is not Python's `hash()` (salted per process), so
a rerun, a resume or another machine picks the same students. Every batch records in `batch.json`
its *scope*: the shard, the position of each of its students among all the entries of the
submissions folder, a digest of every entry's key (the same folder?) and of the project
(`project_digest`: exercises, graders and harness, reference; the same grading code?).

`merge` refuses shards that do not make one batch (different settings, project or submissions,
two copies of a shard, a shard missing or unfinished), then writes into OUT the results, the
per-format LMS files, `gradebook.csv`, `analytics.json` and `class_report.html` exactly as one
`batch` over the whole folder would (results in the same order, so even ties come out the same),
and a `batch.json` whose scope is the whole class: `grade.py batch SUBMISSIONS --out OUT` then
resumes from the merged folder as from its own.

`--shard auto` reads the index from the scheduler: `JOB_COMPLETION_INDEX` (a Kubernetes Indexed
Job; the count from `/N` or from `JOB_COMPLETIONS`, which Kubernetes does not set: the recipe in
docs/scale-out.md sets it) or `SLURM_ARRAY_TASK_ID` (a Slurm job array; index counted from
`SLURM_ARRAY_TASK_MIN` in steps of `SLURM_ARRAY_TASK_STEP`, count from `SLURM_ARRAY_TASK_COUNT`).
"""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.project import Project
from ..formats import RENDERERS
from ..formats.result import SubmissionResult
from .store import ResultStore, write_atomic

PROJECT_TREES = ("exercises", "graders", "reference")  # what decides a grade (graders/ holds the harness)
_SPEC = re.compile(r"^(?:(\d+)|auto)(?:/(\d+))?$")


class ShardError(ValueError):
    """A bad --shard value, or shards that cannot be merged: one line for the user."""


@dataclass(frozen=True)
class Shard:
    index: int
    count: int

    def holds(self, student: str) -> bool:
        return shard_of(student, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(student: str, count: int) -> int:
    """The shard of `student` among `count`: stable across processes, runs and machines."""
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % count


def _int(env: Mapping[str, str], name: str) -> int:
    try:
        return int(env[name])
    except ValueError:
        raise ShardError(f"--shard auto: {name}={env[name]!r} is not a whole number") from None


def parse_shard(spec: str, env: Mapping[str, str]) -> Shard:
    """`I/N`, `auto/N` or `auto` (see the module's docstring) as a `Shard`; `ShardError` if bad."""
    match = _SPEC.match(spec.strip())
    if not match or (match.group(1) is not None and match.group(2) is None):
        raise ShardError(f"--shard {spec}: give I/N (0 <= I < N), auto/N or auto")
    count = int(match.group(2)) if match.group(2) else None
    if match.group(1) is not None:
        index = int(match.group(1))
    elif "JOB_COMPLETION_INDEX" in env:  # Kubernetes Indexed Job
        index = _int(env, "JOB_COMPLETION_INDEX")
        if "JOB_COMPLETIONS" in env:
            count = _agree(count, _int(env, "JOB_COMPLETIONS"), "JOB_COMPLETIONS")
        if count is None:
            raise ShardError(
                "--shard auto: JOB_COMPLETION_INDEX is set but not the number of shards: "
                "give --shard auto/N or set JOB_COMPLETIONS (the Job's completions) in the pod's env"
            )
    elif "SLURM_ARRAY_TASK_ID" in env:  # Slurm job array, whatever its first index and step
        first = _int(env, "SLURM_ARRAY_TASK_MIN") if "SLURM_ARRAY_TASK_MIN" in env else 0
        step = _int(env, "SLURM_ARRAY_TASK_STEP") if "SLURM_ARRAY_TASK_STEP" in env else 1
        offset = _int(env, "SLURM_ARRAY_TASK_ID") - first
        if step < 1 or offset % step:
            raise ShardError(f"--shard auto: SLURM_ARRAY_TASK_ID is not on the array's grid (step {step})")
        index = offset // step
        if "SLURM_ARRAY_TASK_COUNT" in env:
            count = _agree(count, _int(env, "SLURM_ARRAY_TASK_COUNT"), "SLURM_ARRAY_TASK_COUNT")
        if count is None:
            raise ShardError("--shard auto: SLURM_ARRAY_TASK_COUNT is not set: give --shard auto/N")
    else:
        raise ShardError(
            "--shard auto: neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID "
            "(Slurm job array) is set; give --shard I/N"
        )
    if count < 1 or not 0 <= index < count:
        raise ShardError(f"--shard {spec}: shard {index} of {count} does not exist (0 <= I < N)")
    return Shard(index, count)


def _agree(given: int | None, found: int, name: str) -> int:
    if given is not None and given != found:
        raise ShardError(f"--shard auto/{given}: {name} says {found} shards")
    return found


def project_digest(project: Project) -> str:
    """A digest of every file that decides a grade: exercises, graders (with the harness), reference."""
    digest = hashlib.sha256()
    for tree in PROJECT_TREES:
        base = project.root / tree
        files = sorted(
            p for p in base.rglob("*")
            if p.is_file() and "__pycache__" not in p.relative_to(base).parts and p.suffix != ".pyc"
        ) if base.is_dir() else []  # fmt: skip
        digest.update(f"{tree}\0{len(files)}\n".encode())
        for path in files:
            data = path.read_bytes()
            digest.update(f"{path.relative_to(base).as_posix()}\0{len(data)}\n".encode("utf-8", "replace"))
            digest.update(data)
    return digest.hexdigest()[:20]


def scope(entries: list, shard: Shard | None, project: Project) -> dict:
    """What `batch.json` records of a batch's reach: see the module's docstring."""
    keys = [e.student for e in entries]
    return {
        "shard": str(shard) if shard else None,
        "entries": len(keys),
        "submissions": hashlib.sha256("\n".join(keys).encode("utf-8", "surrogatepass")).hexdigest()[:20],
        "project": project_digest(project),
        "students": {e.student: i for i, e in enumerate(entries) if shard is None or shard.holds(e.student)},
    }


# ---------------------------------------------------------------- merge


def merge_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="grade.py merge",
        description="Merge the results folders of a sharded batch (grade.py batch --shard I/N) into one, "
        "with the gradebook, class report, analytics and LMS files of one batch over every submission.",
    )
    p.add_argument("shards", type=Path, nargs="+", help="the results folders of the shards, one each")
    p.add_argument("--out", type=Path, required=True, help="the merged results folder (new or empty)")
    p.add_argument(
        "--format", choices=sorted(RENDERERS), default=None,
        help="also write each result in this LMS format (formats the shards wrote are always kept)",
    )  # fmt: skip
    return p


@dataclass
class ShardFolder:
    path: Path
    settings: dict
    scope: dict


def _read(path: Path) -> ShardFolder:
    if not path.is_dir():
        raise ShardError(f"{path}: not a folder")
    stored = ResultStore(path).read_settings()
    if not stored or "settings" not in stored:
        raise ShardError(f"{path}: not a batch results folder (no readable batch.json)")
    if not isinstance(stored.get("scope"), dict):
        raise ShardError(f"{path}: its batch.json records no shard (graded before sharding existed?)")
    return ShardFolder(path, stored["settings"], stored["scope"])


def check_shards(folders: list[ShardFolder], project: Project) -> None:
    """Refuse, with one line naming the folders and the difference, shards that are not one batch."""
    first = folders[0]
    for other in folders[1:]:
        for key, value in first.settings.items():
            if other.settings.get(key) != value:
                raise ShardError(
                    f"{first.path} and {other.path} were graded with different settings ({key} "
                    f"{value} and {other.settings.get(key)}): merge only the shards of one batch"
                )
        for key, what in (("project", "graders, exercises or reference"), ("submissions", "submissions")):
            if other.scope.get(key) != first.scope.get(key) or other.scope.get("entries") != first.scope.get(
                "entries"
            ):
                raise ShardError(
                    f"{first.path} and {other.path} were graded with different {what} "
                    f"({key} digest {first.scope.get(key)} and {other.scope.get(key)}): "
                    "grade every shard from the same copy"
                )
    here = project_digest(project)
    if first.scope.get("project") != here:
        raise ShardError(
            f"the shards were graded with other graders, exercises or reference than this project's "
            f"(digest {first.scope.get('project')}, here {here}): merge them where they were graded"
        )
    specs: dict[str, Path] = {}
    for folder in folders:
        spec = folder.scope.get("shard") or "0/1"
        if spec in specs:
            raise ShardError(f"{specs[spec]} and {folder.path} are both shard {spec}: they overlap")
        specs[spec] = folder.path
    counts = {int(s.split("/")[1]) for s in specs}
    if len(counts) > 1:
        raise ShardError(f"the shards split the class in different numbers of parts ({sorted(counts)})")
    (count,) = counts
    missing = [f"{i}/{count}" for i in range(count) if f"{i}/{count}" not in specs]
    if missing:
        raise ShardError(f"shard {', '.join(missing)} is missing: grade it, then merge all {count}")
    seen: dict[str, Path] = {}
    for folder in folders:
        for student in folder.scope.get("students", {}):
            if student in seen:
                raise ShardError(f"{seen[student]} and {folder.path} both hold {student!r}: they overlap")
            seen[student] = folder.path
    if len(seen) != first.scope.get("entries"):
        raise ShardError(f"the shards hold {len(seen)} students, the class {first.scope.get('entries')}")


def prepare_merge(args: argparse.Namespace, project: Project) -> tuple[list[ShardFolder], list, set[str]]:
    """The shards named by `merge`'s arguments, checked to make one batch (`ShardError` if not), their
    results in the order one batch lists them, and the LMS formats to write."""
    out = args.out.resolve()
    if any(out == f.resolve() for f in args.shards):
        raise ShardError(f"{args.out}: is one of the shards; merge into another folder")
    if args.out.exists() and (not args.out.is_dir() or _holds_other_than_a_merge(args.out)):
        raise ShardError(f"{args.out}: exists and is not empty; merge into a new folder")
    folders = [_read(path) for path in args.shards]
    check_shards(folders, project)
    results, formats = _collect(folders)
    if args.format:
        formats.add(args.format)
    return folders, results, formats


def write_merged(store: ResultStore, folders: list[ShardFolder], results: list, formats: set[str]) -> None:
    """Each result and its LMS files as the shard wrote them, then `batch.json` for the whole class."""
    for student, result, text, source in results:
        for fmt in sorted(formats):
            copied = source / fmt / store.format_path(student, fmt).name
            if copied.is_file():
                write_atomic(store.format_path(student, fmt), copied.read_text(encoding="utf-8"))
            else:
                store.ensure_format(result, fmt)
        write_atomic(store.result_path(student), text)
    whole = {**folders[0].scope, "shard": None}
    whole["students"] = {s: p for f in folders for s, p in f.scope["students"].items()}
    merged = [str(f.path) for f in sorted(folders, key=lambda f: _index(f.scope))]
    store.write_settings({"settings": folders[0].settings, "scope": whole, "merged": merged})


def _index(scope: dict) -> int:
    return int((scope.get("shard") or "0/1").split("/")[0])


def _holds_other_than_a_merge(out: Path) -> bool:
    stored = ResultStore(out).read_settings()
    if stored is not None:
        return "merged" not in stored
    return any(p.name != ".lock" for p in out.iterdir())


def _collect(folders: list[ShardFolder]) -> tuple[list[tuple[str, SubmissionResult, str, Path]], set[str]]:
    """Every shard's results in the order one batch would list them, and the LMS formats written."""
    collected, formats = [], set()
    for folder in folders:
        store = ResultStore(folder.path)
        formats |= {fmt for fmt in RENDERERS if (folder.path / fmt).is_dir()}
        missing = []
        for student, position in folder.scope["students"].items():
            path = store.result_path(student)
            result = store.load(student)
            if result is None or result.seed != folder.settings.get("seed"):
                missing.append(student)
                continue
            collected.append((position, student, result, path.read_text(encoding="utf-8"), folder.path))
        if missing:
            spec = folder.scope.get("shard") or "0/1"
            raise ShardError(
                f"{folder.path}: {len(missing)} of {len(folder.scope['students'])} submissions of shard "
                f"{spec} have no result (did its batch finish?); run its batch again: it resumes"
            )
    collected.sort(key=lambda c: c[0])
    return [c[1:] for c in collected], formats
