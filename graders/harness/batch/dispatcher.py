"""`grade.py batch`: grade a whole class unattended, resumably, into the formats LMSs read.

    python grade.py batch SUBMISSIONS_DIR --out RESULTS_DIR [--jobs N]
                    [--format json|gradescope|prairielearn|junit] [--seed N] [--lang zh|en]
                    [--exercise ID ...] [--call-seconds S] [--submission-timeout S]
                    [--exercise-budget S] [--submission-budget S] [--retry-errors]

SUBMISSIONS_DIR holds one folder or one `.zip` per student. The batch starts N job processes
(`python -m graders.harness.batch.dispatcher --job ...`, see `batch/job.py`), each with its own zygote, and
feeds them submission names over a pipe as they become free; each submission still gets fresh
workers. A result is written the moment it arrives (see `batch/store.py` for the layout and why a
kill at any instant loses nothing); run the same command again and finished submissions are kept.
A job that dies, or exceeds the per-submission time limit, costs that one submission a row with
the reason, and a fresh job takes its place. At the end: `gradebook.csv`, `analytics.json` and
`class_report.html`, built from every finished result.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ..core.budget import EXERCISE_FACTOR
from ..core.i18n import say
from ..core.intake import Entry, discover, fingerprint, problem_text
from ..core.models import ExerciseManifest
from ..core.options import exercise_option, lang_option
from ..core.project import Project, UsageError
from ..core.settings import Settings
from ..formats import gradebook
from ..formats.result import SubmissionResult, possible_score
from ..sandbox import isolation
from ..sandbox.client import Limits
from . import analytics, shard
from . import similarity as similar
from .progress import Progress
from .store import WORK_DIR, ResultStore, StoreBusy, write_atomic

CODE_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds the `graders` package
EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
FORMATS = ("json", "gradescope", "prairielearn", "junit")
START_SECONDS = 180.0


class BatchFailed(Exception):
    """The batch cannot go on (jobs cannot start): one line, exit status 1."""


class Interrupted(Exception):
    """SIGINT or SIGTERM: stop the jobs, keep what is finished."""


def batch_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="grade.py batch",
        description="Grade every submission in a folder (one sub-folder or .zip per student); resumable.",
        parents=[
            lang_option("language of feedback (default: from the locale)"),
            exercise_option("grade only this exercise (repeatable)"),
        ],
    )
    p.add_argument("submissions", type=Path, help="folder with one sub-folder or .zip per student")
    p.add_argument("--out", type=Path, required=True, help="results folder (created; reused to resume)")
    p.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="grading processes (default: CPU count)"
    )
    p.add_argument(
        "--format", choices=FORMATS, default="json", help="also write each result in this LMS format"
    )
    p.add_argument(
        "--seed", type=int, default=None, help="batch seed (default: random, recorded; reused on resume)"
    )
    p.add_argument(
        "--call-seconds",
        type=float,
        default=None,
        metavar="S",
        help="cap the deadline of each call into student code",
    )
    p.add_argument(
        "--submission-timeout",
        type=float,
        default=None,
        metavar="S",
        help="stop grading one submission after S seconds",
    )
    p.add_argument(
        "--exercise-budget",
        type=float,
        default=None,
        metavar="S",
        help="time one exercise's code may take in all (default: twice its call deadline)",
    )
    p.add_argument(
        "--submission-budget",
        type=float,
        default=None,
        metavar="S",
        help="time one submission's code may take in all, its checks then fail as timed out "
        "(default: 120, or less to fit --submission-timeout)",
    )
    p.add_argument(
        "--similarity",
        action="store_true",
        help="also compare every pair of submissions per exercise (copydetect; the class report lists them)",
    )
    p.add_argument("--similarity-threshold", type=float, default=None, metavar="F", help="default 0.5")
    p.add_argument(
        "--retry-errors",
        action="store_true",
        help="grade again the submissions whose grading failed (status error)",
    )
    p.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="grade only shard I of N (0 <= I < N; by a hash of the student's name), or auto[/N] from "
        "JOB_COMPLETION_INDEX or SLURM_ARRAY_TASK_ID; then `grade.py merge` the N results folders",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="grade on a Dask cluster: tcp://HOST:PORT, or local:N for N local workers "
        '(pip install ".[dask]")',
    )
    return p


# ---------------------------------------------------------------- settings


def settle(args: argparse.Namespace, stored: dict | None, project: Project) -> Settings:
    """This run's settings: those of the batch being resumed, which flags may not contradict."""
    wanted = {
        "seed": args.seed,
        "lang": args.lang,
        "exercises": args.exercise,
        "call_seconds": args.call_seconds,
    }
    flags = {"seed": "--seed", "lang": "--lang", "exercises": "--exercise", "call_seconds": "--call-seconds"}
    previous = (stored or {}).get("settings")
    if previous:
        for key, value in wanted.items():
            if value is not None and value != previous.get(key):
                raise UsageError(
                    f"{args.out}: this batch was started with {flags[key]} {previous.get(key)}; "
                    f"resume it with the same value, or choose another --out"
                )
        return Settings.from_dict({**{k: previous.get(k) for k in wanted}, "run_hidden": project.runs_hidden})
    return Settings.from_args(args, project)


def submission_budget(manifests: list[ExerciseManifest], call_cap: float | None) -> float:
    """Default per-submission limit of the watchdog that replaces a job: well above the time budget
    the job itself grades each submission under (see `budget`), which normally ends it first."""
    budgets = sum(EXERCISE_FACTOR * min(m.call_seconds, call_cap or m.call_seconds) for m in manifests)
    return 60.0 + 2.0 * budgets


def job_budget(watchdog: float) -> float:
    """The time budget a job grades a submission under (the sandbox's default, 120 s, or less): early
    enough before the watchdog's limit that the submission gets a report saying which checks ran
    out of time rather than a row saying it was stopped."""
    return max(1.0, min(Limits().submission_seconds or 120.0, watchdog - 5.0, 0.8 * watchdog))


# ---------------------------------------------------------------- jobs


@dataclass
class Job:
    """One grading process and what it is doing."""

    index: int
    proc: subprocess.Popen
    ready: bool = False
    current: Entry | None = None
    started_at: float = 0.0
    buffer: bytes = b""
    eof: bool = False
    peak_rss_kb: int = 0
    peak_zygote_kb: int = 0
    graded: int = 0
    lines: deque = field(default_factory=deque)
    work: Path = Path()  # the job's temporary folder (its TMPDIR)

    def send(self, entry: Entry) -> None:
        request = {
            "student": entry.student,
            "path": str(entry.path),
            "kind": entry.kind,
            "fingerprint": fingerprint(entry),
        }
        self.current, self.started_at = entry, time.monotonic()
        try:
            # ASCII JSON: a path that is not UTF-8 travels as surrogate escapes and comes back whole
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:  # the job died: the dispatcher sees it and gives this submission its row
            self.eof = True

    def pump(self) -> None:
        """Read what the job wrote; complete lines go to `lines`."""
        try:
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.eof = True
            return
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        self.lines.extend(complete)

    def alive(self) -> bool:
        return not self.eof and self.proc.poll() is None

    def finish(self) -> None:
        """No more work for an idle job: closing its requests lets it end its own way, which gives its
        zygote time to tidy up (SIGTERM kills the zygote, and the workers' cgroups stay behind)."""
        if self.current is None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def stop(self, grace: float = 3.0, tidy: float = 3.0) -> None:
        """Wait up to `tidy` s for a job told to `finish`; then SIGTERM (the job kills its workers
        and zygote), then SIGKILL if it lingers."""
        if self.proc.poll() is None and self.proc.stdin.closed:
            try:
                self.proc.wait(tidy)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass

    def exit_detail(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "no answer"
        return f"signal {-code}" if code < 0 else f"exit status {code}"


def job_command(
    project_root: Path, s: Settings, work: Path, code_budget: float, exercise_budget: float | None,
    uid_block: int | None,
) -> list[str]:  # fmt: skip
    """The command of a job process (`batch/job.py`) grading for this process, which it dies with."""
    cmd = [sys.executable, "-m", "graders.harness.batch.dispatcher", "--job", "--project", str(project_root),
           "--seed", str(s.seed), "--lang", s.lang, "--parent", str(os.getpid()),
           "--work", str(work), "--submission-seconds", str(code_budget)]  # fmt: skip
    if uid_block is not None:
        cmd += ["--uid-block", str(uid_block)]
    if exercise_budget is not None:
        cmd += ["--exercise-seconds", str(exercise_budget)]
    for exercise in s.exercises or []:
        cmd += ["--exercise", exercise]
    if s.call_seconds is not None:
        cmd += ["--call-seconds", str(s.call_seconds)]
    if not s.run_hidden:
        cmd.append("--no-hidden")
    return cmd


def job_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(CODE_ROOT), env.get("PYTHONPATH", "")) if p)
    # Per-run pytest costs a job does not need: entry-point plugins, fd capture around every test
    # phase (nothing of the student's is printed in this process; its stdout is the job log), and
    # the logging plugin's handlers around every phase (~2% of a job's CPU; no check logs).
    env.update(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1", PYTEST_ADDOPTS="--capture=no -p no:logging")
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["TMPDIR"] = str(work)  # unpacked zips and the zygote's folder: never in the system's /tmp
    return env


def unscored(
    project: Project, s: Settings, entry: Entry, status: str, problem: str, elapsed: float, **params
) -> SubmissionResult:
    """The row of a submission that has no report: `problem`'s sentence says why."""
    manifests = project.load_manifests(s.exercises)
    return SubmissionResult.unscored(
        status, problem, problem_text(problem, **params), student=entry.student, source=entry.source,
        seed=s.seed, lang=s.lang, max_score=possible_score(manifests, s.run_hidden), elapsed=elapsed,
        fingerprint=fingerprint(entry),
    )  # fmt: skip


def job_kit(settings: Settings):
    """What a Dask batch's workers need of this module (`batch.cluster` imports nothing of it)."""
    from .cluster import JobKit

    return JobKit(settings, job_command, job_env, Job, CODE_ROOT, START_SECONDS, unscored, BatchFailed)


class Dispatcher:
    """Feeds submissions to N jobs, writes results as they come, replaces jobs that fail."""

    def __init__(self, project: Project, settings: Settings, store: ResultStore, fmt: str, jobs: int,
                 budget: float, progress: Progress, code_budget: float | None = None,
                 exercise_budget: float | None = None) -> None:  # fmt: skip
        self.project, self.settings, self.store, self.fmt = project, settings, store, fmt
        self.n_jobs, self.budget, self.progress = jobs, budget, progress
        self.code_budget = code_budget or job_budget(budget)  # what a job grades a submission under
        self.exercise_budget = exercise_budget
        self.selector = selectors.DefaultSelector()
        self.jobs: list[Job] = []
        self.retired: list[Job] = []
        self.failed_starts = 0
        self.first_ready: float | None = None  # when grading could begin (monotonic clock)
        self.started = 0
        self.work = store.root / WORK_DIR  # every job's temporary files: removed with the jobs
        self.uid_holders: list[socket.socket] = []  # uid blocks of this run, held until it ends

    def command(self, work: Path, uid_block: int | None) -> list[str]:
        return job_command(self.project.root, self.settings, work, self.code_budget, self.exercise_budget,
                           uid_block)  # fmt: skip

    def start_job(self, index: int) -> Job:
        self.started += 1
        work = self.work / f"job-{self.started}"
        work.mkdir(parents=True, exist_ok=True)
        env = job_env(work)
        uid_block = None
        if os.geteuid() == 0:  # a block of uids no other job of this run, nor any other grader, gets
            uid_block, holder = isolation.reserve_uid_block(secrets.randbelow(isolation.UID_BLOCKS))
            self.uid_holders.append(holder)
        with open(self.store.root / "logs" / f"job-{index}.log", "ab") as log:
            proc = subprocess.Popen(
                self.command(work, uid_block), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                env=env, cwd=CODE_ROOT, start_new_session=True,
            )  # fmt: skip
        os.set_blocking(proc.stdout.fileno(), False)
        job = Job(index, proc, work=work)
        self.selector.register(proc.stdout, selectors.EVENT_READ, job)
        return job

    def retire(self, job: Job) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
            self.selector.unregister(job.proc.stdout)
            job.finish()
            job.stop(grace=1.0)
            shutil.rmtree(job.work, ignore_errors=True)  # what a job killed mid-way left behind
            self.retired.append(job)

    def replace(self, job: Job) -> None:
        self.retire(job)
        if not job.ready:
            self.failed_starts += 1
            if self.failed_starts >= 2 * self.n_jobs:
                log = (self.store.root / "logs" / f"job-{job.index}.log").read_text(errors="replace").strip()
                last = log.splitlines()[-1] if log else job.exit_detail()
                raise BatchFailed(f"grading processes cannot start ({job.exit_detail()}): {last}")
        self.jobs.append(self.start_job(job.index))

    def record(self, job: Job, result: SubmissionResult) -> None:
        self.store.save(result, self.fmt)
        job.current = None
        job.graded += 1
        self.progress.advance(result)

    def lost(self, job: Job, problem: str, **params) -> None:
        """The job failed on its current submission: that submission gets an `error` row."""
        elapsed = time.monotonic() - job.started_at
        self.record(
            job, unscored(self.project, self.settings, job.current, "error", problem, elapsed, **params)
        )

    def handle(self, job: Job, line: bytes) -> None:
        message = json.loads(line)
        if message.get("ready"):
            job.ready = True
            self.failed_starts = 0
            self.first_ready = self.first_ready or time.monotonic()
            return
        result = SubmissionResult.model_validate(message["result"])
        job.peak_rss_kb = max(job.peak_rss_kb, int(message.get("rss_kb", 0)))
        job.peak_zygote_kb = max(job.peak_zygote_kb, int(message.get("zygote_kb", 0)))
        self.record(job, result)

    def run(self, todo: list[Entry]) -> None:
        queue = deque(todo)
        self.jobs = [self.start_job(i + 1) for i in range(min(self.n_jobs, len(queue)))]
        launched = time.monotonic()
        try:
            while queue or any(j.current for j in self.jobs):
                for key, _ in self.selector.select(timeout=0.2):
                    key.data.pump()
                now = time.monotonic()
                for job in list(self.jobs):
                    while job.lines:
                        self.handle(job, job.lines.popleft())
                    if job.current is not None and now - job.started_at > self.budget:
                        self.lost(job, "job_timeout", seconds=self.budget)
                        self.replace(job)
                    elif not job.alive():
                        if job.current is not None:
                            self.lost(job, "job_died", detail=job.exit_detail())
                        self.replace(job) if queue else self.retire(job)
                    elif not job.ready and now - launched > START_SECONDS:
                        raise BatchFailed(
                            f"grading process {job.index} did not start within {START_SECONDS:g} s"
                        )
                    elif job.ready and job.current is None and queue:
                        job.send(queue.popleft())
        finally:
            for job in self.jobs:
                job.finish()  # all at once: they end side by side
            for job in list(self.jobs):
                self.retire(job)
            self.selector.close()
            shutil.rmtree(self.work, ignore_errors=True)
            for holder in self.uid_holders:
                holder.close()

    def memory(self) -> list[dict]:
        return [
            {"job": j.index, "graded": j.graded, "peak_rss_mib": round(j.peak_rss_kb / 1024, 1),
             "zygote_peak_rss_mib": round(j.peak_zygote_kb / 1024, 1)}
            for j in sorted(self.retired + self.jobs, key=lambda j: j.index) if j.graded
        ]  # fmt: skip


# ---------------------------------------------------------------- the command


def plan(
    entries: list[Entry], store: ResultStore, settings: Settings, fmt: str, retry_errors: bool
) -> list[Entry]:
    """The submissions still to grade; finished ones get their per-format file if it is missing."""
    todo = []
    for entry in entries:
        result = store.load(entry.student)
        fresh = (
            result is not None and result.seed == settings.seed and result.fingerprint == fingerprint(entry)
        )
        if not fresh or (retry_errors and result.status == "error"):
            todo.append(entry)
        else:
            store.ensure_format(result, fmt)
    return todo


def write_summaries(
    entries: list[Entry], store: ResultStore, settings: Settings, project: Project
) -> tuple[Path, Path]:
    results = [r for e in entries if (r := store.load(e.student)) is not None]
    return write_class_files(results, store.root, settings, project)


def write_class_files(
    results: list[SubmissionResult], root: Path, settings: Settings, project: Project
) -> tuple[Path, Path]:
    """The gradebook, analytics and class report of `results` (in the submissions folder's order),
    with the similarity report if `root` holds one."""
    manifests = project.load_manifests(settings.exercises)
    write_atomic(root / "gradebook.csv", gradebook.render(results, manifests))
    figures = analytics.analyse(
        results, manifests, settings.seed, settings.lang, similarity=similar.load(root)
    )
    write_atomic(root / "analytics.json", figures.model_dump_json(indent=2) + "\n")
    write_atomic(root / "class_report.html", analytics.render_html(figures))
    return root / "gradebook.csv", root / "class_report.html"


def cmd_merge(argv: list[str], project: Project) -> int:
    """`merge OUT_0 ... --out OUT`: the shards of one batch (`--shard I/N`) as one batch (batch/shard.py)."""
    args = shard.merge_parser().parse_args(argv)
    try:
        folders, results, formats = shard.prepare_merge(args, project)
    except shard.ShardError as exc:
        raise UsageError(str(exc)) from None
    store = ResultStore(args.out)
    try:
        store.open()
    except StoreBusy as exc:
        raise UsageError(str(exc)) from None
    try:
        shard.write_merged(store, folders, results, formats)
        settings = Settings.from_dict(folders[0].settings)
        paths = write_class_files([r for _, r, _, _ in results], args.out, settings, project)
    finally:
        store.close()
    print(f"merge: {len(folders)} shards, {len(results)} submissions; gradebook {paths[0]}; "
          f"class report {paths[1]}", file=sys.stderr)  # fmt: skip
    return EXIT_OK


def check_folders(args: argparse.Namespace) -> None:
    if not args.submissions.is_dir():
        raise UsageError(
            f"{args.submissions}: not a folder (give the folder with one sub-folder or .zip per student)"
        )
    out, subs = args.out.resolve(), args.submissions.resolve()
    if out == subs or out.is_relative_to(subs):
        raise UsageError(f"{args.out}: the results folder must not be inside the submissions folder")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"{args.out}: exists and is not a folder")
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: need at least 1")


def _raise_interrupted(signum, frame) -> None:
    """First SIGINT/SIGTERM: unwind to save what is finished; further ones are ignored meanwhile."""
    for other in (signal.SIGINT, signal.SIGTERM):
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def cmd_batch(argv: list[str], project: Project) -> int:
    args = batch_parser().parse_args(argv)
    check_folders(args)
    try:
        args.shard = shard.parse_shard(args.shard, os.environ) if args.shard else None
    except shard.ShardError as exc:
        raise UsageError(str(exc)) from None
    if args.scheduler:
        from . import cluster

        try:
            cluster.parse_scheduler(args.scheduler)
            cluster.require_dask()
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.similarity:  # fail now, not after grading the class
        try:
            similar._copydetect()
        except similar.SimilarityUnavailable as exc:
            raise UsageError(str(exc)) from None
    manifests = project.load_manifests(args.exercise)  # a bad manifest stops here, before any job starts
    store = ResultStore(args.out)
    try:
        store.open()
    except StoreBusy as exc:
        raise UsageError(str(exc)) from None
    previous = {
        signum: signal.signal(signum, _raise_interrupted) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        return _run(args, project, manifests, store)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        store.close()


def _run(
    args: argparse.Namespace, project: Project, manifests: list[ExerciseManifest], store: ResultStore
) -> int:
    stored = store.read_settings()
    settings = settle(args, stored, project)
    previous_shard = (stored or {}).get("scope", {}).get("shard")
    if stored and "scope" in stored and previous_shard != (str(args.shard) if args.shard else None):
        started = f"--shard {previous_shard}" if previous_shard else "no --shard"
        raise UsageError(f"{args.out}: this batch was started with {started}; resume it the same way")
    entries = discover(args.submissions.resolve())  # jobs run elsewhere: they get absolute paths
    scope = shard.scope(entries, args.shard, project)
    entries = [e for e in entries if args.shard is None or args.shard.holds(e.student)]
    store.write_settings({**(stored or {}), "settings": settings.as_dict(), "scope": scope})
    todo = plan(entries, store, settings, args.format, args.retry_errors)
    budget = args.submission_timeout or submission_budget(manifests, settings.call_seconds)
    progress = Progress(len(entries), len(entries) - len(todo), sys.stderr, bar=sys.stderr.isatty())
    print(
        f"batch: {len(entries)} submissions{f' (shard {args.shard})' if args.shard else ''}, "
        f"{len(todo)} to grade, "
        f"{f'on Dask {args.scheduler}' if args.scheduler else f'{min(args.jobs, max(len(todo), 1))} jobs'}, "
        f"seed {settings.seed}, results in {args.out}",
        file=sys.stderr,
    )
    if args.scheduler:
        from .cluster import ClusterDispatcher

        dispatcher = ClusterDispatcher(
            args.scheduler, project, job_kit(settings), store, args.format, budget, progress,
            args.submission_budget or job_budget(budget), args.exercise_budget,
        )  # fmt: skip
    else:
        dispatcher = Dispatcher(
            project, settings, store, args.format, args.jobs, budget, progress, args.submission_budget,
            args.exercise_budget,
        )  # fmt: skip
    started = time.monotonic()
    status = EXIT_OK
    try:
        progress.started()
        if todo:
            dispatcher.run(todo)
    except Interrupted:
        status = EXIT_INTERRUPTED
    except BatchFailed as exc:
        progress.close()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    progress.close()
    seconds = time.monotonic() - started
    done = sum(1 for e in entries if store.result_path(e.student).exists())
    if args.similarity and status == EXIT_OK:
        ids = [m.id for m in manifests]
        threshold = similar.THRESHOLD if args.similarity_threshold is None else args.similarity_threshold
        similar.run(entries, project, ids, store.root, settings.lang, threshold)
    gradebook_path, report_path = write_summaries(entries, store, settings, project)
    startup = dispatcher.first_ready - started if dispatcher.first_ready else 0.0
    run = {"graded": progress.graded_now, "seconds": round(seconds, 3), "jobs": dispatcher.memory(),
           "rate": round(progress.graded_now / seconds, 3) if seconds > 0 else 0.0,
           "startup_seconds": round(startup, 3)}  # fmt: skip
    store.write_settings({"settings": settings.as_dict(), "scope": scope, "last_run": run})
    lang = settings.lang
    if status == EXIT_INTERRUPTED:
        print(say("batch.interrupted", done=done, total=len(entries))(lang), file=sys.stderr)
        return status
    summary = say("batch.done", graded=progress.graded_now, kept=progress.kept, total=len(entries),
                  seconds=seconds, rate=run["rate"])  # fmt: skip
    print(summary(lang), file=sys.stderr)
    print(say("batch.outputs", gradebook=gradebook_path, report=report_path)(lang), file=sys.stderr)
    for job in run["jobs"]:
        print(f"  job {job['job']}: {job['graded']} graded, peak RSS {job['peak_rss_mib']} MiB "
              f"(+ zygote {job['zygote_peak_rss_mib']} MiB)", file=sys.stderr)  # fmt: skip
    return status


if __name__ == "__main__":
    from ..sandbox.launch import exit_now
    from .job import main

    exit_now(main())  # the batch waits for its jobs to end: not for torch's teardown as well


def cmd_similarity(argv: list[str], project: Project) -> int:
    """`similarity SUBMISSIONS --out OUT`: the report for a graded batch; rewrites its class report."""
    parser = argparse.ArgumentParser(
        prog="grade.py similarity",
        description="Compare every pair of submissions of a graded batch, per exercise (copydetect), and "
        "add the pairs that share code to its class report and analytics.json.",
    )
    parser.add_argument("submissions", type=Path, help="the folder the batch graded")
    parser.add_argument("--out", type=Path, required=True, help="the batch's results folder")
    parser.add_argument(
        "--threshold", type=float, default=similar.THRESHOLD, help=f"default {similar.THRESHOLD}"
    )
    args = parser.parse_args(argv)
    if not args.submissions.is_dir():
        raise UsageError(f"{args.submissions}: not a folder")
    if not 0 < args.threshold <= 1:
        raise UsageError(f"--threshold {args.threshold}: give a share between 0 and 1")
    store = ResultStore(args.out)
    stored = store.read_settings()
    if not stored or "settings" not in stored:
        raise UsageError(f"{args.out}: not the results folder of a batch (run grade.py batch first)")
    settings = Settings.from_dict(stored["settings"])
    try:
        similar._copydetect()
        store.open()
    except similar.SimilarityUnavailable as exc:
        raise UsageError(str(exc)) from None
    except StoreBusy as exc:
        raise UsageError(str(exc)) from None
    try:
        entries = discover(args.submissions.resolve())
        ids = [m.id for m in project.load_manifests(settings.exercises)]
        found = similar.run(entries, project, ids, store.root, settings.lang, args.threshold)
        _, report = write_summaries(entries, store, settings, project)
    finally:
        store.close()
    print(f"similarity: {len(found.pairs)} pairs at or above {args.threshold:g}; {report}")
    return 0
