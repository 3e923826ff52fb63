"""`grade.py batch ... --scheduler tcp://HOST:PORT | local:N`: a batch graded on a Dask cluster.

Optional: `pip install ".[dask]"` (dask.distributed). The client (this process) keeps the batch:
it reads each submission, sends it to the cluster as bytes (a zip's or a notebook's own bytes, or a
folder zipped in memory, at most `SEND_BYTES`; links inside a folder are neither followed nor sent),
and writes every result that comes back with the same atomic, resumable `ResultStore` as a local
batch, so no file system is shared and a resume keeps whatever was finished, however the run ended.

Each Dask worker grades through a `GradingPlugin` (a `WorkerPlugin`, registered by the client for
this batch and removed at its end). Its `setup` compares the worker's project with the client's
(`shard.project_digest`: exercises, graders with the harness, reference) and refuses a worker that
differs, with a message naming it. It then starts the same job process as a local batch
(`python -m graders.harness.batch.dispatcher --job`: trusted pytest session, zygote, a sandboxed worker per
submission), spawned as a new program (`subprocess`), never forked from the Dask worker (whose
event-loop threads make a fork unsafe, and whose daemonic process may not have multiprocessing
children). Jobs are started from one launcher thread that lives as long as the worker, so that the
job's PR_SET_PDEATHSIG (tied to the thread that started it) fires only when the worker dies. A
task unpacks its submission in a temporary folder, hands it to an idle job, waits under the same
watchdog as a local batch (`job_timeout`, `job_died` rows), and returns the result as JSON. Every
graded result carries the `isolation_level` of the worker's sandbox, as local results do.

A task writes nothing but its temporary folder: it is idempotent. A worker lost mid-run (killed,
its machine gone) costs nothing: the scheduler gives its tasks to other workers, and its job dies
with it (PDEATHSIG), taking its zygote and sandboxed workers along.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import zipfile
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.intake import Entry, Refusal, ZipCaps, fingerprint, unpack_zip
from ..core.project import Project, default_project
from ..formats.result import SubmissionResult
from ..sandbox import isolation
from .shard import project_digest

try:
    from distributed import WorkerPlugin
except ImportError:  # the client says how to install it; a worker always has it
    WorkerPlugin = object

SEND_BYTES = ZipCaps().archive_bytes  # what one submission may weigh on the wire
SEND_FILES = 5000
TRANSPORT = ZipCaps(archive_bytes=SEND_BYTES, members=SEND_FILES + 1000, total_bytes=SEND_BYTES)
_LOCAL = re.compile(r"^local:(\d+)$")


class ProjectMismatch(RuntimeError):
    """A worker whose exercises, graders or reference differ from the client's."""


class JobCannotStart(RuntimeError):
    """The grading process on a worker did not start."""


def parse_scheduler(spec: str) -> tuple[str, str | int]:
    """('local', N) for `local:N`, ('address', spec) for `tcp://HOST:PORT` (or any Dask address)."""
    match = _LOCAL.match(spec)
    if match:
        if int(match.group(1)) < 1:
            raise ValueError(f"--scheduler {spec}: need at least 1 worker")
        return "local", int(match.group(1))
    if "://" in spec:
        return "address", spec
    raise ValueError(
        f"--scheduler {spec}: give tcp://HOST:PORT (a Dask scheduler) or local:N (N workers here)"
    )


def require_dask() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ValueError('--scheduler needs Dask: pip install ".[dask]"') from None


# ---------------------------------------------------------------- submissions as bytes


def payload(entry: Entry) -> tuple[bytes | None, str | None, dict]:
    """(bytes to send, or None; else the problem that makes the submission unsendable, and its params)."""
    if entry.kind not in ("dir", "zip", "notebook"):
        return None, None, {}
    if entry.kind in ("zip", "notebook"):  # sent as they are
        size = entry.path.stat().st_size
        if size > SEND_BYTES and entry.kind == "zip":  # the refusal `unpack_zip` would give, unsent
            return None, "zip_file_too_large", {"source": entry.source, "size": size, "cap": SEND_BYTES}
        if size > SEND_BYTES:
            return None, "too_large_to_send", {"source": entry.source, "cap": SEND_BYTES, "members": 1}
        return entry.path.read_bytes(), None, {}
    buffer, total, count = io.BytesIO(), 0, 0
    too_large = {"source": entry.source, "cap": SEND_BYTES, "members": SEND_FILES}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for folder, dirs, names in os.walk(entry.path):  # links to folders are not followed
            dirs.sort()
            here = Path(folder)
            rel = here.relative_to(entry.path)
            if rel.parts:  # empty folders too: `submission_root` looks at the folders a submission holds
                zf.writestr(_zip_info(rel.as_posix() + "/"), b"")
            for name in sorted(names):
                path = here / name
                if path.is_symlink() or not path.is_file():
                    continue
                total += path.stat().st_size
                count += 1
                if total > SEND_BYTES or count > SEND_FILES:
                    return None, "too_large_to_send", too_large
                arcname = (rel / name).as_posix()
                zf.writestr(_zip_info(arcname), path.read_bytes())
    return buffer.getvalue(), None, {}


def _zip_info(name: str) -> zipfile.ZipInfo:
    """An entry named by the file's bytes (a name that is not UTF-8 travels as surrogate escapes)."""
    info = zipfile.ZipInfo(name.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def materialise(request: dict, folder: Path) -> Entry:
    """The submission of `request` as an entry under `folder`, named as in the submissions folder."""
    path = folder / os.fsdecode(request["name"])
    data, kind = request.get("data"), request["kind"]
    if kind in ("zip", "notebook"):
        path.write_bytes(data)
    elif kind == "dir":
        transport = folder / ".transport.zip"  # a student's name never starts with '.' (see `discover`)
        transport.write_bytes(data)
        path.mkdir()
        unpack_zip(transport, path, TRANSPORT)
        transport.unlink()
    return Entry(request["student"], path, kind)


# ---------------------------------------------------------------- the worker side


@dataclass(frozen=True)
class JobKit:
    """What the batch command (`batch.job_kit`) lends this module, which imports nothing of it (the
    batch imports this one): the batch's settings, how to start and talk to a job process, the
    row of a submission without a report, and the batch's failure. Sent to the workers with the
    plugin (functions and classes travel by name: a worker imports them from its own copy)."""

    settings: Any  # settings.Settings
    command: Callable  # batch.job_command
    env: Callable  # batch.job_env
    job: type  # batch.Job
    code_root: Path
    start_seconds: float
    unscored: Callable  # batch.unscored
    failed: type  # batch.BatchFailed


class GradingPlugin(WorkerPlugin):
    """Grades a batch's submissions on one Dask worker (see the module's docstring)."""

    def __init__(self, name: str, digest: str, kit: JobKit, budgets: dict) -> None:
        self.name, self.digest, self.kit, self.budgets = name, digest, kit, budgets

    def setup(self, worker) -> None:
        self.address = worker.address
        self.project = default_project()
        here = project_digest(self.project)
        if here != self.digest:  # kept: a task that lands here anyway (a worker that joined later) says it
            self.refused = (
                f"Dask worker {worker.address} ({socket.gethostname()}) is refused: its exercises, graders "
                f"or reference (project {self.project.root}, digest {here}) differ from the client's "
                f"(digest {self.digest}); install the same version of the course on every worker"
            )
            raise ProjectMismatch(self.refused)
        self.work = Path(worker.local_directory) / f"{self.name}-{os.getpid()}"
        self.work.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.idle: list = []
        self.every: list = []
        self.holders: list[socket.socket] = []
        self.launcher = ThreadPoolExecutor(1, thread_name_prefix="autograder-launcher")
        self.idle.append(self.launcher.submit(self._start).result())  # starting up while tasks arrive

    def teardown(self, worker) -> None:
        for job in list(getattr(self, "every", [])):
            job.stop(grace=2.0)
        if hasattr(self, "launcher"):
            self.launcher.shutdown(wait=False)
            shutil.rmtree(self.work, ignore_errors=True)
            for holder in self.holders:
                holder.close()

    def _start(self):
        kit = self.kit
        index = len(self.every) + 1
        work = self.work / f"job-{index}"
        work.mkdir(parents=True, exist_ok=True)
        uid_block = None
        if os.geteuid() == 0:  # as in a local batch: a block of uids no other job gets
            uid_block, holder = isolation.reserve_uid_block(secrets.randbelow(isolation.UID_BLOCKS))
            self.holders.append(holder)
        b = self.budgets
        cmd = kit.command(self.project.root, kit.settings, work, b["code"], b["exercise"], uid_block)
        with open(self.work / f"job-{index}.log", "ab") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=kit.env(work),
                cwd=kit.code_root, start_new_session=True,
            )  # fmt: skip
        job = kit.job(index, proc, work=work)
        self.every.append(job)
        return job

    def _take(self):
        """An idle job (one that died while idle is stopped, not handed a submission), or a new one."""
        while True:
            with self.lock:
                job = self.idle.pop() if self.idle else None
            if job is None:
                return self.launcher.submit(self._start).result()
            if job.alive():
                return job
            self._give_back(job)

    def _give_back(self, job) -> None:
        if job.alive() and job.current is None:
            with self.lock:
                self.idle.append(job)
        else:
            job.stop(grace=1.0)
            shutil.rmtree(job.work, ignore_errors=True)

    def _next(self, job, deadline: float) -> dict | None:
        """The job's next message, or None if it ended or the deadline passed."""
        while not job.lines:
            left = deadline - time.monotonic()
            if left <= 0 or job.eof:
                return None
            readable, _, _ = select.select([job.proc.stdout], [], [], min(left, 1.0))
            if readable:
                job.pump()
        return json.loads(job.lines.popleft())

    def grade(self, request: dict) -> dict:
        job = self._take()
        try:
            if not job.ready:
                message = self._next(job, time.monotonic() + self.kit.start_seconds)
                if not message or not message.get("ready"):
                    log = (self.work / f"job-{job.index}.log").read_text(errors="replace").strip()
                    last = log.splitlines()[-1] if log else job.exit_detail()
                    raise JobCannotStart(
                        f"the grading process on Dask worker {self.address} did not start: {last}"
                    )
                job.ready = True
            with tempfile.TemporaryDirectory(dir=self.work, prefix="task-") as tmp:
                try:
                    entry = materialise(request, Path(tmp))
                except Refusal as refusal:  # the client built this zip: not the student's doing
                    return {"lost": "job_died", "params": {"detail": f"transport: {refusal}"}}
                line = {"student": entry.student, "path": str(entry.path), "kind": entry.kind,
                        "fingerprint": request["fingerprint"]}  # fmt: skip
                job.current, job.started_at = entry, time.monotonic()
                job.proc.stdin.write((json.dumps(line) + "\n").encode())
                job.proc.stdin.flush()
                message = self._next(job, job.started_at + self.budgets["watchdog"])
                if message is None:
                    lost = "job_died" if job.eof or job.proc.poll() is not None else "job_timeout"
                    params = {"detail": job.exit_detail()} if lost == "job_died" else {
                        "seconds": self.budgets["watchdog"]
                    }  # fmt: skip
                    job.stop(grace=1.0)
                    return {"lost": lost, "params": params, "elapsed": time.monotonic() - job.started_at}
                job.current = None
                job.graded += 1
                return {
                    "result": message["result"],  # as the job wrote it: the client validates it as locally
                    "job": f"{self.address} job {job.index}",
                    "rss_kb": message.get("rss_kb", 0),
                    "zygote_kb": message.get("zygote_kb", 0),
                }
        except (BrokenPipeError, OSError) as exc:
            job.stop(grace=1.0)
            return {"lost": "job_died", "params": {"detail": f"{type(exc).__name__}: {exc}"}}
        finally:
            self._give_back(job)


def grade_on_worker(plugin_name: str, request: dict) -> dict:
    """The task: grade one submission with this worker's plugin of the batch."""
    from distributed import get_worker

    worker = get_worker()
    plugin = worker.plugins.get(plugin_name)
    if getattr(plugin, "refused", None):
        raise ProjectMismatch(plugin.refused)
    if plugin is None or not hasattr(plugin, "idle"):
        raise JobCannotStart(f"Dask worker {worker.address} has no grading plugin {plugin_name} set up")
    return plugin.grade(request)


# ---------------------------------------------------------------- the client side


class ClusterDispatcher:
    """Grades `todo` on a Dask cluster; the same interface to `batch._run` as `batch.Dispatcher`."""

    def __init__(self, scheduler: str, project: Project, kit: JobKit, store, fmt: str, budget: float,
                 progress, code_budget: float, exercise_budget: float | None) -> None:  # fmt: skip
        self.kind, self.where = parse_scheduler(scheduler)
        self.project, self.kit, self.settings, self.store, self.fmt = project, kit, kit.settings, store, fmt
        self.progress = progress
        self.budgets = {"watchdog": budget, "code": code_budget, "exercise": exercise_budget}
        self.first_ready: float | None = None
        self.jobs: dict[str, dict] = {}
        self.digest = project_digest(project)

    def connect(self):
        from distributed import Client, LocalCluster

        if self.kind == "local":
            cluster = LocalCluster(
                n_workers=self.where,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                memory_limit=0,
                silence_logs=logging.ERROR,
            )
            return cluster, Client(cluster)
        return None, Client(self.where, timeout="60s")

    def run(self, todo: list[Entry]) -> None:
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        BatchFailed, unscored, START_SECONDS = self.kit.failed, self.kit.unscored, self.kit.start_seconds

        try:
            cluster, client = self.connect()
        except (OSError, TimeoutError) as exc:
            raise BatchFailed(f"cannot reach the Dask scheduler {self.where}: {exc}") from None
        name = f"autograder-{secrets.token_hex(4)}"
        futures: dict = {}
        try:
            try:
                client.wait_for_workers(1, timeout=START_SECONDS)
            except TimeoutError:
                raise BatchFailed(f"no Dask worker joined {self.where} within {START_SECONDS:g} s") from None
            plugin = GradingPlugin(name, self.digest, self.kit, self.budgets)
            try:
                client.register_plugin(plugin, name=name)
            except ProjectMismatch as exc:
                raise BatchFailed(str(exc)) from None
            self.first_ready = time.monotonic()
            window = max(4, 2 * sum(client.nthreads().values()))
            queue, done, numbers = deque(todo), as_completed(), itertools.count()

            def submit() -> None:
                entry = queue.popleft()
                start = time.monotonic()
                data, problem, params = payload(entry)
                if problem:
                    self.save(unscored(self.project, self.settings, entry, "refused", problem,
                                       time.monotonic() - start, **params))  # fmt: skip
                    return
                request = {"student": entry.student, "name": os.fsencode(entry.path.name), "kind": entry.kind,
                           "data": data, "fingerprint": fingerprint(entry)}  # fmt: skip
                future = client.submit(
                    grade_on_worker, name, request, pure=False, key=f"grade-{name}-{next(numbers)}"
                )
                futures[future] = (entry, start)
                done.add(future)

            while queue and len(futures) < window:
                submit()
            for future in done:
                entry, start = futures.pop(future)
                try:
                    outcome = future.result()
                except ProjectMismatch as exc:
                    raise BatchFailed(str(exc)) from None
                except JobCannotStart as exc:
                    raise BatchFailed(str(exc)) from None
                except FutureCancelledError:
                    raise BatchFailed("the Dask cluster cancelled the batch's tasks") from None
                except Exception as exc:  # KilledWorker: this submission brought down workers repeatedly
                    detail = f"{type(exc).__name__}: {exc}"[:300]
                    outcome = {"lost": "job_died", "params": {"detail": detail}}
                if "result" in outcome:
                    self.record(outcome)
                else:
                    elapsed = outcome.get("elapsed", time.monotonic() - start)
                    self.save(unscored(self.project, self.settings, entry, "error", outcome["lost"], elapsed,
                                       **outcome["params"]))  # fmt: skip
                while queue and len(futures) < window:
                    submit()
        finally:
            for future in futures:
                future.cancel()
            try:
                client.unregister_worker_plugin(name)
            except Exception:  # noqa: BLE001 - the plugin may never have been registered
                pass
            client.close()
            if cluster is not None:
                cluster.close()

    def record(self, outcome: dict) -> None:
        result = SubmissionResult.model_validate(outcome["result"])
        figures = self.jobs.setdefault(
            outcome["job"], {"graded": 0, "rss": 0, "zygote": 0, "isolation": set()}
        )
        figures["graded"] += 1
        figures["rss"] = max(figures["rss"], int(outcome.get("rss_kb", 0)))
        figures["zygote"] = max(figures["zygote"], int(outcome.get("zygote_kb", 0)))
        if result.report is not None:
            figures["isolation"].add(result.report.isolation_level)
        self.save(result)

    def save(self, result: SubmissionResult) -> None:
        self.store.save(result, self.fmt)
        self.progress.advance(result)

    def memory(self) -> list[dict]:
        return [
            {"job": f"{job} (isolation {', '.join(sorted(f['isolation'])) or '-'})", "graded": f["graded"],
             "peak_rss_mib": round(f["rss"] / 1024, 1), "zygote_peak_rss_mib": round(f["zygote"] / 1024, 1)}
            for job, f in sorted(self.jobs.items())
        ]  # fmt: skip
