"""`grade.py batch --scheduler`: a batch graded on a Dask cluster gives the gradebook of a local batch,
loses nothing when a worker is killed mid-run, resumes, and refuses a worker of another project.

One LocalCluster of two worker processes serves the whole module (starting Dask is slow); the batch
runs as a real `python grade.py batch --scheduler tcp://...` process, on exercise 2 only.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import PROJECT
from distributed import Client, LocalCluster
from test_batch import (
    NO_SCALING,
    REFERENCE,
    STUB,
    WRONG_SCALE,
    batch_cmd,
    finished,
    gradebook_rows,
    job_pids,
    make_class,
    make_zip,
    run_batch,
    wait_for_results,
    write_dir,
)

from graders.harness.batch.cluster import (
    GradingPlugin,
    ProjectMismatch,
    grade_on_worker,
    parse_scheduler,
)
from graders.harness.batch.dispatcher import BatchFailed, job_kit
from graders.harness.core.notebook import new_notebook
from graders.harness.core.settings import Settings
from graders.harness.formats.result import SubmissionResult

EX = "ex02_self_attention"
pytestmark = pytest.mark.dask
# Runs compared byte for byte get a deadline no check of these submissions comes near, even on a
# loaded machine: one call timing out in one run but not the other would change a score.
CALM = ("--call-seconds", "10")


@pytest.fixture(scope="module")
def cluster():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit=0
        ) as local,
        Client(local) as client,
    ):
        yield local.scheduler_address, client


def mixed(root: Path) -> Path:
    subs = root / "subs"
    subs.mkdir()
    for student, source in {"ada": REFERENCE, "ben": STUB, "cy": NO_SCALING, "eve": WRONG_SCALE,
                            "empty": None, "<img src=x onerror=alert(1)>": None}.items():  # fmt: skip
        write_dir(subs, student, source)
    (subs / "wrapped" / "hw").mkdir(parents=True)  # a folder wrapping a folder, as zips often do
    (subs / "wrapped" / "hw" / f"{EX}.py").write_text(REFERENCE, encoding="utf-8")
    make_zip(subs / "zed.zip", {f"hw/{EX}.py": REFERENCE.encode()})
    make_zip(subs / "mallory.zip", {"../../escape.py": b"print('pwned')"})
    (subs / "notes.txt").write_text("not a submission")
    (subs / "nb.ipynb").write_text(new_notebook([("code", REFERENCE, [EX])]), encoding="utf-8")
    return subs


@pytest.fixture(scope="module")
def both(cluster, tmp_path_factory):
    """The same class graded by a local batch and on the cluster."""
    subs = mixed(tmp_path_factory.mktemp("mixed"))
    local = run_batch(subs, subs.parent / "local", "--jobs", "1", "--format", "gradescope", *CALM)
    assert local.returncode == 0, local.stderr
    remote = run_batch(subs, subs.parent / "dask", "--scheduler", cluster[0], "--format", "gradescope", *CALM)
    assert remote.returncode == 0, remote.stderr
    return subs, remote


def files(folder: Path) -> dict[str, bytes]:
    skip = ("logs", "batch.json", ".lock")
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts)
    }


def without(data: bytes, key: str) -> dict:
    loaded = json.loads(data)
    loaded.pop(key)
    return loaded


@pytest.mark.slow
def test_a_dask_batch_gives_the_gradebook_of_a_local_batch(both):
    subs, remote = both
    local, dask = files(subs.parent / "local"), files(subs.parent / "dask")
    assert set(local) == set(dask) and len(local) == 3 + 2 * 11
    for name in ("gradebook.csv", "analytics.json", "class_report.html"):
        assert dask[name] == local[name], name
    for name in local:
        if name.startswith("results/"):
            assert without(dask[name], "elapsed") == without(local[name], "elapsed"), name
        elif name.startswith("gradescope/"):
            assert without(dask[name], "execution_time") == without(local[name], "execution_time"), name
    rows = {r["student"]: r for r in gradebook_rows(subs.parent / "dask")}
    assert (
        rows["ada"]["total"]
        == rows["wrapped"]["total"]
        == rows["zed"]["total"]
        == rows["nb"]["total"]
        == "28"
    )
    assert rows["mallory"]["status"] == rows["notes.txt"]["status"] == rows["empty"]["status"] == "refused"
    # every result states the isolation level of the worker that graded it, as a local one does
    graded = [SubmissionResult.model_validate_json(dask[n]) for n in dask if n.startswith("results/")]
    levels = {r.report.isolation_level for r in graded if r.report}
    assert len(levels) == 1 and levels <= {"full", "partial", "minimal"}
    assert f"(isolation {levels.pop()})" in remote.stderr and "on Dask tcp://" in remote.stderr
    assert not (subs.parent / "escape.py").exists()


@pytest.mark.slow
def test_a_dask_batch_resumes_and_regrades_only_what_is_missing(both, cluster, tmp_path):
    subs, _ = both
    out = tmp_path / "again"
    shutil.copytree(subs.parent / "dask", out)
    for student in ("ben", "zed"):
        (out / "results" / f"{student}.json").unlink()
    before = finished(out)
    proc = run_batch(subs, out, "--scheduler", cluster[0], "--format", "gradescope", *CALM)
    assert proc.returncode == 0, proc.stderr
    assert "graded 2 now, 9 kept from before, 11 in all" in proc.stderr
    after = finished(out)
    assert {s: after[s] for s in before} == before and set(after) == set(before) | {"ben", "zed"}
    assert (out / "gradebook.csv").read_bytes() == (subs.parent / "local" / "gradebook.csv").read_bytes()


@pytest.mark.slow
def test_a_worker_killed_mid_run_costs_nothing(cluster, tmp_path):
    address, client = cluster
    count = 16
    subs = make_class(tmp_path, count)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        batch_cmd(subs, out, "--scheduler", address),
        cwd=subs.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_results(out, 2, proc)
        victim = next(iter(client.run(os.getpid).values()))
        os.kill(victim, signal.SIGKILL)
        assert len(finished(out)) < count, "killed mid-run"
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert len(finished(out)) == count, "every submission graded"
    rows = gradebook_rows(out)
    assert sorted(r["student"] for r in rows) == [f"s{i:02d}" for i in range(count)]  # once each
    assert {r["student"]: r["total"] for r in rows} == {
        f"s{i:02d}": "28" if i % 2 else "0" for i in range(count)
    }  # regraded on the other worker: no row lost to the kill, none an error
    deadline = time.monotonic() + 15
    while job_pids(victim) and time.monotonic() < deadline:  # its job died with it (PDEATHSIG)
        time.sleep(0.2)
    assert job_pids(victim) == []
    client.wait_for_workers(2, timeout=120)  # the nanny has started a new worker for the next test


def test_a_worker_of_another_project_is_refused(cluster):
    _, client = cluster
    settings = Settings(seed=1, lang="en", exercises=[EX], call_seconds=1.0, run_hidden=True)
    budgets = {"watchdog": 60.0, "code": 30.0, "exercise": None}
    name = "autograder-test-refused"
    try:
        with pytest.raises(ProjectMismatch) as refused:
            client.register_plugin(GradingPlugin(name, "0" * 20, job_kit(settings), budgets), name=name)
        with pytest.raises(ProjectMismatch) as task_refused:  # a task that lands on it anyway is refused
            client.submit(grade_on_worker, name, {}, pure=False).result()
    finally:
        client.unregister_worker_plugin(name)
    text = str(refused.value)
    assert text.startswith("Dask worker tcp://") and "is refused" in text and f"(digest {'0' * 20})" in text
    assert str(PROJECT.root) in text and "is refused" in str(task_refused.value)


@pytest.mark.parametrize(
    ("spec", "says"),
    [("local:0", "need at least 1 worker"), ("somehost:8786", "give tcp://HOST:PORT")],
)
def test_a_bad_scheduler_is_a_usage_error(tmp_path, spec, says):
    subs = make_class(tmp_path, 1)
    proc = run_batch(subs, tmp_path / "out", "--scheduler", spec)
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert parse_scheduler("local:3") == ("local", 3) and parse_scheduler("tcp://h:1") == (
        "address",
        "tcp://h:1",
    )


def test_a_client_of_another_project_stops_with_the_workers_refusal(cluster, tmp_path):
    from graders.harness.batch.cluster import ClusterDispatcher
    from graders.harness.batch.progress import Progress
    from graders.harness.batch.store import ResultStore
    from graders.harness.core.intake import discover

    subs = make_class(tmp_path, 1)
    store = ResultStore(tmp_path / "out")
    store.open()
    settings = Settings(seed=1, lang="en", exercises=[EX], call_seconds=1.0, run_hidden=True)
    progress = Progress(1, 0, io.StringIO(), bar=False)
    dispatcher = ClusterDispatcher(
        cluster[0], PROJECT, job_kit(settings), store, "json", 60.0, progress, 30.0, None
    )
    dispatcher.digest = "1" * 20  # as if this client held another version of the course
    try:
        with pytest.raises(BatchFailed) as failed:
            dispatcher.run(discover(subs))
    finally:
        store.close()
    assert "is refused" in str(failed.value) and f"differ from the client's (digest {'1' * 20})" in str(
        failed.value
    )
    assert list((tmp_path / "out" / "results").iterdir()) == []


def test_a_submission_travels_as_bytes_and_arrives_whole(tmp_path, monkeypatch):
    from graders.harness.batch import cluster
    from graders.harness.core.intake import Entry

    folder = tmp_path / "subs" / "ada"
    (folder / "hw" / "empty").mkdir(parents=True)
    (folder / "hw" / f"{EX}.py").write_text(REFERENCE, encoding="utf-8")
    (folder / ".hidden").write_bytes(b"\x00\xff")
    os.symlink("/etc/passwd", folder / "hw" / "passwd")  # a link is neither followed nor sent
    entry = Entry("ada", folder, "dir")
    data, problem, _ = cluster.payload(entry)
    assert problem is None and len(data) < 64 << 10
    request = {"student": "ada", "name": os.fsencode("ada"), "kind": "dir", "data": data}
    (tmp_path / "task").mkdir()
    got = cluster.materialise(request, tmp_path / "task")
    assert got == Entry("ada", tmp_path / "task" / "ada", "dir") and got.source == entry.source
    assert sorted(p.relative_to(got.path).as_posix() for p in got.path.rglob("*")) == [
        ".hidden",
        "hw",
        "hw/empty",
        f"hw/{EX}.py",
    ]
    assert (got.path / "hw" / f"{EX}.py").read_text(encoding="utf-8") == REFERENCE
    monkeypatch.setattr(cluster, "SEND_BYTES", 100)  # too large to send: a refusal row, nothing sent
    assert cluster.payload(entry)[:2] == (None, "too_large_to_send")
    archive = make_zip(tmp_path / "subs" / "zed.zip", {f"{EX}.py": REFERENCE.encode() * 3})
    data, problem, params = cluster.payload(Entry("zed", archive, "zip"))
    assert data is None and problem == "zip_file_too_large" and params["size"] == archive.stat().st_size


@pytest.mark.slow
def test_an_interrupted_dask_batch_stops_its_jobs_and_resumes(cluster, tmp_path):
    address, client = cluster
    count = 12
    subs = make_class(tmp_path, count)
    for path in subs.glob("*/*.py"):  # slow enough that the Ctrl-C lands mid-run on a quiet machine too
        path.write_text("import time\ntime.sleep(0.6)\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "out"
    proc = subprocess.Popen(batch_cmd(subs, out, "--scheduler", address), cwd=subs.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for_results(out, 2, proc)
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = finished(out)
    assert proc.returncode == 130 and "run the same command again" in err and len(before) < count
    workers = client.run(os.getpid).values()
    deadline = time.monotonic() + 15
    while any(job_pids(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)  # the batch's plugin is removed from the workers: their jobs stop
    assert [job_pids(pid) for pid in workers] == [[] for _ in workers]
    again = run_batch(subs, out, "--scheduler", address)
    assert again.returncode == 0, again.stderr
    assert f"{len(before)} kept from before" in again.stderr
    after = finished(out)
    assert len(after) == count and {s: after[s] for s in before} == before
