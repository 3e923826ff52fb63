"""One batch job: a long-lived trusted grading process with its own zygote, fed over a pipe.

Started by `grade.py batch` as `python -m graders.harness.batch.dispatcher --job ...`. It imports the
harness, pytest and torch once, starts its sandbox pool once (a `BatchPool`: a spare worker
forked ahead, see `batch/pool.py`), says `{"ready": true}` on stdout,
then reads one request per line on stdin (`{"student", "path", "kind", "fingerprint"}`) and
answers each with one line `{"result": SubmissionResult, "rss_kb", "zygote_kb"}`. pytest runs
once for the whole job (`runner.SessionGrader`: configured and the graders collected once, the
checks run again for each submission). Student code still runs only in the worker forked for each
submission, never in this process.

It dies with its parent (PR_SET_PDEATHSIG), and on SIGTERM kills its live workers and zygote and
removes its temporary folder (`--work`, its TMPDIR: unpacked zips, the zygote's folder) before
exiting, so a batch killed at any moment leaves no grading process and no file behind; should the job
itself be killed by SIGKILL, its zygote kills its workers (the control socket closes) and the batch
removes the folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.intake import (
    Entry,
    Refusal,
    check_tree,
    problem_text,
    require_exercise_files,
    submission_root,
    unpack_zip,
)
from ..core.models import ExerciseManifest
from ..core.options import exercise_option, lang_option
from ..core.project import Project
from ..core.settings import Settings
from ..formats.result import SubmissionResult, possible_score
from ..sandbox.client import Limits, SandboxPool
from .pool import BatchPool

if TYPE_CHECKING:
    from ..core.runner import SessionGrader



@dataclass(frozen=True)
class CachedProject(Project):
    """The project as a job sees it: manifests parsed once and kept while their file is unchanged
    (every submission of a batch loads them all)."""

    _parsed: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def load_manifest(self, exercise_id: str) -> ExerciseManifest:
        path = self.manifest_path(exercise_id)
        stamp = path.stat().st_mtime_ns if path.is_file() else None
        cached = self._parsed.get(exercise_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        manifest = super().load_manifest(exercise_id)
        self._parsed[exercise_id] = (stamp, manifest)
        return manifest


def grade_entry(
    entry: Entry,
    fingerprint: str,
    project: Project,
    settings: Settings,
    pool: SandboxPool,
    grader: SessionGrader | None = None,
) -> SubmissionResult:
    """Grade one submission (in `grader`'s pytest session if given); never raises for anything the
    submission does."""
    from ..core.runner import grade  # loaded by `main` while the zygote starts; see there

    start = time.perf_counter()
    manifests = project.load_manifests(settings.exercises)
    ids = [m.id for m in manifests]
    who = {"student": entry.student, "source": entry.source, "fingerprint": fingerprint}
    max_score = possible_score(manifests, settings.run_hidden)
    unscored = {**who, "seed": settings.seed, "lang": settings.lang, "max_score": max_score}
    try:
        if entry.kind in ("other", "link"):
            problem = "not_submission" if entry.kind == "other" else "link_entry"
            raise Refusal(problem, source=entry.source)
        with tempfile.TemporaryDirectory(prefix="agw-batch-") as tmp:
            if entry.kind == "notebook":  # graded as it is: its cells are read as bytes, like a .py
                folder = entry.path
            else:
                if entry.kind == "dir":
                    check_tree(entry.path, entry.source)  # a tree thousands deep: refused, not a crash
                folder = entry.path if entry.kind == "dir" else unpack_zip(entry.path, Path(tmp) / "unpacked")
                folder = submission_root(folder, ids)
                require_exercise_files(folder, ids)
            if grader is not None:
                report = grader.grade(folder, seed=settings.seed, lang=settings.lang)
            else:
                report = grade(project, folder, settings=settings, pool=pool)
        return SubmissionResult.graded(report, **who, elapsed=time.perf_counter() - start)
    except Refusal as refusal:
        return SubmissionResult.unscored(
            "refused", refusal.problem, refusal.text, **unscored, elapsed=time.perf_counter() - start
        )
    except Exception as exc:  # the trusted side failed: record it for this submission, keep going
        reason = problem_text("grader_failed", detail=f"{type(exc).__name__}: {exc}"[:500])
        return SubmissionResult.unscored(
            "error", "grader_failed", reason, **unscored, elapsed=time.perf_counter() - start
        )


def peak_kb(pid: int | None) -> int:
    """Peak resident memory of `pid` in KiB (VmHWM), 0 if unknown."""
    if pid is None:
        return 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _die_with_parent(parent: int) -> None:
    from ..sandbox.isolation import die_with_parent

    try:
        die_with_parent(signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before the prctl took effect
        os._exit(143)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m graders.harness.batch.dispatcher --job",
        description="One batch grading job.",
        parents=[lang_option(required=True), exercise_option()],
    )
    p.add_argument("--job", action="store_true", required=True)
    p.add_argument("--project", type=Path, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--no-hidden", action="store_true")
    p.add_argument("--call-seconds", type=float, default=None)
    p.add_argument("--parent", type=int, required=True)
    p.add_argument("--work", type=Path, default=None, help="temporary folder of this job (removed on exit)")
    p.add_argument("--uid-block", type=int, default=None, help="the sandbox uid block this job may use")
    p.add_argument("--submission-seconds", type=float, default=None, help="time budget of one submission")
    p.add_argument("--exercise-seconds", type=float, default=None, help="time budget of one exercise")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the batch decides when jobs stop
    _die_with_parent(args.parent)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        tempfile.tempdir = str(args.work)
    budgets = {"submission_seconds": args.submission_seconds, "exercise_seconds": args.exercise_seconds}
    limits = Limits(**{k: v for k, v in budgets.items() if v is not None})
    pool = BatchPool(limits, uid_block=args.uid_block)
    warm = threading.Thread(target=pool.warm, daemon=True)
    warm.start()  # the zygote imports torch while this process does the same
    import torch

    from ..core import runner  # noqa: F401  (pytest, the plugin, torch: import once, before the first request)

    torch.set_num_threads(1)
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to the job's log, never into the protocol
    project = CachedProject(args.project.resolve())
    settings = Settings(
        seed=args.seed,
        lang=args.lang,
        exercises=args.exercise,
        call_seconds=args.call_seconds,
        run_hidden=not args.no_hidden,
    )

    def stop(signum, frame) -> None:  # the main thread may hold a lock of the pool: take none here
        pool.kill_all()
        if args.work is not None:
            shutil.rmtree(args.work, ignore_errors=True)
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    warm.join()
    protocol.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    # pytest's fd capture points fd 0 at /dev/null while it runs, and this loop runs inside pytest:
    # read the requests from a descriptor of our own, as the replies go out on one (`protocol`).
    requests = Requests(os.fdopen(os.dup(sys.stdin.fileno()), "r", encoding="utf-8"))
    while not requests.done:  # one pytest session for the whole job, unless it has to be renewed
        grader = runner.SessionGrader(project, pool=pool, settings=settings)
        grader.run(lambda _grade, grader=grader: serve(requests, grader, project, settings, pool, protocol))
    pool.shutdown()
    return 0


class Requests:
    """The job's requests, one JSON line each, with one line of push-back for a renewed session."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.held: str | None = None
        self.done = False

    def next(self) -> str | None:
        line, self.held = self.held, None
        if line is None:
            line = self.stream.readline()
        if not line:
            self.done = True
            return None
        return line


def serve(
    requests: Requests,
    grader: SessionGrader,
    project: Project,
    settings: Settings,
    pool: SandboxPool,
    protocol,
) -> None:
    """Answer requests in `grader`'s session until stdin ends, or until the session must be renewed
    (manifests edited during the batch, or pytest failed mid-run): then the request waits for the next."""
    while (line := requests.next()) is not None:
        if grader.stale():
            requests.held = line
            return
        request = json.loads(line)
        entry = Entry(request["student"], Path(request["path"]), request["kind"])
        result = grade_entry(entry, request.get("fingerprint", ""), project, settings, pool, grader)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        figures = {"rss_kb": rss, "zygote_kb": peak_kb(pool.zygote_pid)}
        # the result's own JSON: its non-finite numbers are encoded as the model says, and it reloads
        protocol.write(f'{{"result": {result.model_dump_json()}, {json.dumps(figures)[1:]}\n')
