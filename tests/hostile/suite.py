"""Run one hostile submission through the real grader and measure what must hold.

Shared by `tests/test_hostile.py` (asserts) and `benchmarks/hostile_suite.py` (prints figures).
For each case: wall time of the whole grading, points awarded on the attacked checks (and the
total, for attacks on time that may earn a little before their budget runs out), checks missing
from the report, checks the grader blamed on itself, sandbox processes left afterwards
(descendants of the zygote and processes of its uid block), files changed in `reference/`,
`graders/` and the submission folder, leaks (reference text, environments, network contacts, a
"LEAKED" line printed when a forbidden system call went through) found anywhere in the report, and
the report itself: every format renders, parses and carries nothing active, the JSON reloads, and
its size is within the bound of `bounds.report_bound`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import inert_check
import tomllib

from graders.harness.core import bounds
from graders.harness.core.models import Report
from graders.harness.core.project import Project
from graders.harness.core.runner import grade
from graders.harness.sandbox import isolation
from graders.harness.sandbox.client import Limits, SandboxPool, isolation_level

HERE = Path(__file__).resolve().parent
EXERCISE = "ex02_self_attention"  # the exercise of a case that names none
SUBMISSION_FILE = f"{EXERCISE}.py"
RECORD_SEED = 1234  # the seed the hard-coding attacker studied
CASE_SEED = 777  # the seed the suite grades with (the product's default seed is random)
LIMITS = Limits(call_seconds=1.0, call_cpu_seconds=0.5, cpu_seconds=20, memory_bytes=3 << 29)
LISTEN_PORTS = range(47913, 47923)
UNIX_LISTENER = b"\0agw-hostile-listener"
LEAK_MARKERS = ("LEAKED", "ENVIRON ", "EXFILTRATED", "pwned", "Reference solution:")
GROUPS = {"sdpa": "sdpa_", "layer": "layer_", "mha": "mha_"}
LOOSE_FILES = ("results.json", "report.json", "report.html", "conftest.py")  # must not appear beside us


@dataclass(frozen=True)
class Case:
    name: str
    attack: str
    attacked: tuple[str, ...]
    earns: tuple[str, ...]
    budget: float
    link: str | None
    needs: str | None
    exercise: str = EXERCISE
    score_at_most: float | None = None  # the total may not exceed this (attacks on time)
    exercise_seconds: float | None = None  # the exercise's time budget for this case, if not the pool's

    @property
    def folder(self) -> Path:
        return HERE / self.name

    @property
    def file(self) -> str:
        return f"{self.exercise}.py"


def _expand(spec, check_ids: list[str]) -> tuple[str, ...]:
    if spec is None:
        return ()
    if spec == "all":
        return tuple(check_ids)
    if isinstance(spec, str):
        return tuple(c for c in check_ids if c.startswith(GROUPS[spec]))
    unknown = [c for c in spec if c not in check_ids]
    if unknown:
        raise ValueError(f"cases.toml names unknown checks: {unknown}")
    return tuple(spec)


def load_cases(project: Project) -> list[Case]:
    table = tomllib.loads((HERE / "cases.toml").read_text(encoding="utf-8"))
    cases = []
    for name, spec in table.items():
        exercise = spec.get("exercise", EXERCISE)
        check_ids = [c.id for c in project.load_manifest(exercise).checks]
        doc = (HERE / name / f"{exercise}.py").read_bytes().decode("utf-8", "replace").split('"""')[1]
        cases.append(
            Case(
                name=name,
                attack=" ".join(doc.removeprefix("Hostile submission: ").split()),
                attacked=_expand(spec.get("attacked"), check_ids),
                earns=_expand(spec.get("earns"), check_ids),
                budget=float(spec["budget"]),
                link=spec.get("link"),
                needs=spec.get("needs"),
                exercise=exercise,
                score_at_most=spec.get("score_at_most"),
                exercise_seconds=spec.get("exercise_seconds"),
            )
        )
    return cases


def make_pool(**options) -> SandboxPool:
    return SandboxPool(LIMITS, **options)


def pool_level(pool: SandboxPool) -> str:
    worker = pool.spawn(0)
    try:
        return isolation_level(worker.protections)
    finally:
        worker.close()


# ---------------------------------------------------------------- measurements


def snapshot(*roots: Path) -> dict[str, str]:
    """sha256 of every file under `roots` (symlinks recorded by target), caches excluded."""
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if "__pycache__" in path.parts or ".pytest_cache" in path.parts:
                continue
            if path.is_symlink():
                out[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def guarded_paths(project: Project) -> list[Path]:
    """reference/ and graders/; outside CI, graders/harness/ minus sandbox/ is left out, since other
    engineers edit it in the same working tree while the suite runs (the sandbox cannot see any of
    it anyway: its root file system is empty)."""
    if os.environ.get("CI"):
        return [project.root / "reference", project.root / "graders"]
    graders = project.root / "graders"
    return [
        project.root / "reference",
        *sorted(p for p in graders.iterdir() if p.name != "harness"),
        graders / "harness" / "sandbox",
    ]


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, real uid) for every process, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            table[int(entry)] = (int(fields["PPid"]), int(fields["Uid"].split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    return table


def sandbox_processes(pool: SandboxPool) -> list[int]:
    """Live processes that belong to the sandbox: the zygote's descendants and the sandbox uids."""
    table = _proc_table()
    block = getattr(pool, "uid_block", None)  # None: no uid switch (or a sandbox that predates blocks)
    base, size = isolation.SANDBOX_UID_BASE, getattr(isolation, "UID_BLOCK", 1 << 16)
    found = {
        pid for pid, (_, uid) in table.items()
        if uid >= base and (block is None or (uid - base) // size == block)
    }  # fmt: skip
    frontier = [pool.zygote_pid] if pool.zygote_pid else []
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _) in table.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return sorted(found)


class Listener:
    """Loopback TCP and abstract unix listeners that count who reaches them from the sandbox."""

    def __init__(self) -> None:
        self.contacts = 0
        self.sockets = []
        for port in LISTEN_PORTS:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                s.close()
                continue
            self.sockets.append(s)
            break
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            u.bind(UNIX_LISTENER)
            self.sockets.append(u)
        except OSError:
            u.close()
        for s in self.sockets:
            s.listen(16)
            s.settimeout(0.1)
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop:
            for s in self.sockets:
                try:
                    conn, _ = s.accept()
                except OSError:
                    continue
                self.contacts += 1
                conn.close()

    def close(self) -> int:
        self._stop = True
        self._thread.join(2)
        for s in self.sockets:
            s.close()
        return self.contacts


# ---------------------------------------------------------------- running a case


@dataclass
class CaseResult:
    case: Case
    seconds: float = 0.0
    points_attacked: float = 0.0
    max_attacked: float = 0.0
    missing_checks: list[str] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)
    earned_missing: list[str] = field(default_factory=list)
    processes_left: list[int] = field(default_factory=list)
    files_changed: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    network_contacts: int = 0
    points_on_known_seed: float | None = None
    report: Report | None = None
    skipped: str = ""
    score: float = 0.0
    format_problems: list[str] = field(default_factory=list)

    @property
    def over_score(self) -> bool:
        return self.case.score_at_most is not None and self.score > self.case.score_at_most

    @property
    def ok(self) -> bool:
        return not self.skipped and not (
            self.points_attacked or self.missing_checks or self.grader_errors or self.earned_missing
            or self.processes_left or self.files_changed or self.leaks or self.network_contacts
            or self.seconds > self.case.budget or self.format_problems or self.over_score
        )  # fmt: skip

    def problems(self) -> list[str]:
        out = []
        if self.points_attacked:
            out.append(f"{self.points_attacked:g} points on attacked checks")
        if self.over_score:
            out.append(f"scored {self.score:g}, at most {self.case.score_at_most:g} allowed")
        for name in (
            "missing_checks",
            "grader_errors",
            "earned_missing",
            "processes_left",
            "files_changed",
            "leaks",
            "format_problems",
        ):
            if getattr(self, name):
                out.append(f"{name}: {getattr(self, name)}")
        if self.network_contacts:
            out.append(f"{self.network_contacts} network contacts")
        if self.seconds > self.case.budget:
            out.append(f"took {self.seconds:.1f} s, budget {self.case.budget:g} s")
        return out


def materialise(case: Case, project: Project, dest: Path) -> Path:
    """Copy the case's files into a fresh submission folder; make the links the case asks for."""
    folder = dest / "submission"
    shutil.copytree(case.folder, folder)
    for dropped in folder.glob("*.drop"):  # stored under another name so that our own pytest never sees them
        dropped.rename(dropped.with_suffix(""))
    target = folder / case.file
    if case.link:
        target.unlink()
        reference = project.reference_path(case.exercise)
        if case.link == "symlink":
            target.symlink_to(reference)
        else:
            os.link(reference, target)
    return folder


def _fill_known(folder: Path, report: Report) -> int:
    prints = report.exercises[0].output
    known = sorted(set(re.findall(r"UNSEEN (\S+)", prints)))
    path = folder / SUBMISSION_FILE
    path.write_text(path.read_text().replace("KNOWN = set()", f"KNOWN = {set(known)!r}"))
    return len(known)


def _points(report: Report, ids) -> float:
    return sum(c.score for e in report.exercises for c in e.checks if c.id in ids)


def run_case(
    case: Case, project: Project, pool: SandboxPool, workdir: Path, seed: int = CASE_SEED
) -> CaseResult:
    result = CaseResult(case)
    level = pool_level(pool)
    if case.needs == "namespaces" and level not in ("full", "partial"):
        result.skipped = f"needs a PID namespace and an empty root; this sandbox is {level}"
        return result
    folder = materialise(case, project, workdir)
    exercises = [case.exercise]
    if case.name == "hardcoded_seed":
        recorded = grade(project, folder, seed=RECORD_SEED, exercises=exercises, pool=pool)
        _fill_known(folder, recorded)
        studied = grade(project, folder, seed=RECORD_SEED, exercises=exercises, pool=pool)
        result.points_on_known_seed = _points(studied, case.attacked)
    guarded = guarded_paths(project)
    before = snapshot(*guarded, folder)
    loose = [Path(os.getcwd(), name) for name in LOOSE_FILES] + [project.root / n for n in LOOSE_FILES]
    loose_before = {p for p in loose if p.exists()}
    listener = Listener()
    limits = pool.limits
    if case.exercise_seconds is not None:  # budgets are the pool's: this case's, for its grading only
        pool.limits = dataclasses.replace(limits, exercise_seconds=case.exercise_seconds)
    start = time.monotonic()
    try:
        report = grade(project, folder, seed=seed, exercises=exercises, pool=pool)
    finally:
        result.seconds = time.monotonic() - start
        result.network_contacts = listener.close()
        pool.limits = limits
    result.report = report
    pool.settle()  # the released worker reaped, as before the next student's is forked
    result.processes_left = sandbox_processes(pool)
    result.files_changed = changed(before, snapshot(*guarded, folder))
    result.files_changed += sorted(str(p) for p in loose if p.exists() and p not in loose_before)
    manifest = project.load_manifest(case.exercise)
    got = {c.id: c for e in report.exercises for c in e.checks}
    result.score = report.score
    result.format_problems = format_problems(report, len(manifest.checks))
    result.missing_checks = [c.id for c in manifest.checks if c.id not in got]
    result.grader_errors = [f"{c.id}: {c.message[:200]}" for c in got.values() if c.status == "error"]
    result.points_attacked = _points(report, case.attacked)
    result.max_attacked = sum(c.points for c in manifest.checks if c.id in case.attacked)
    result.earned_missing = [c for c in case.earns if got.get(c) is None or got[c].status != "passed"]
    text = report.model_dump_json()
    result.leaks = [m for m in LEAK_MARKERS if m in text]
    if case.link:  # a hard link left in pytest's kept tmp dirs would raise the reference's link count for later runs
        (folder / case.file).unlink()
    return result


def format_problems(report: Report, checks: int) -> list[str]:
    """What is wrong with the report in any output format (see `inert_check.problems`)."""
    problems = inert_check.problems(report)
    size = len(report.model_dump_json(indent=2).encode())
    bound = bounds.report_bound(len(report.exercises), checks)
    if size > bound:
        problems.append(f"JSON report of {size} bytes, over its bound of {bound}")
    return problems
