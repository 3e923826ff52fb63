"""Scale-out throughput: a local batch, two shards + merge, and a Dask LocalCluster, side by side.

    python benchmarks/scale_out.py [--n 120] [--workers 2] [--call-seconds 0.5] [--keep DIR]

Generates the mixed class of `benchmarks/batch.py` (correct, mutants, stubs, broken, endless loops,
zips) and grades it three ways on this machine, with the same seed and the same parallelism:

1. `grade.py batch --jobs W` (W job processes);
2. `grade.py batch --shard I/W --jobs 1` for each I at once (as W machines would), then `grade.py merge`;
3. `grade.py batch --scheduler local:W` (a Dask LocalCluster of W worker processes, one job each;
   the cluster is started and stopped by the command, and counted).

For each: wall seconds, submissions per second, and the steady rate (between the first and the
last result written, so without start-up). The Dask overhead per submission is the difference of
the steady seconds per submission between (3) and (1), times W (what one worker spends on a
submission beyond grading it: packing, scheduling, the round trip). The gradebooks are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from batch import SEED, generate  # noqa: E402  (benchmarks/batch.py)


def command(subs: Path, out: Path, call_seconds: float, *extra: str) -> list[str]:
    return [sys.executable, "grade.py", "batch", str(subs), "--out", str(out), "--seed", str(SEED),
            "--lang", "en", "--call-seconds", str(call_seconds), *extra]  # fmt: skip


def steady_rate(out: Path) -> float:
    """Results per second between the first and the last result file written."""
    stamps = sorted(p.stat().st_mtime for p in (out / "results").glob("*.json"))
    return (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else 0.0


def in_job(out: Path) -> float:
    """Mean seconds a job spent grading one submission (each result's `elapsed`)."""
    spent = [json.loads(p.read_text())["elapsed"] for p in (out / "results").glob("*.json")]
    return sum(spent) / len(spent)


def timed(cmds: list[list[str]]) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for c in cmds]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"failed: {' '.join(proc.args)}\n{err[-3000:]}")
    return time.perf_counter() - start


def echo(request: dict) -> int:
    return len(request["data"])


def round_trip(subs: Path, count: int = 200) -> float:
    """Mean milliseconds per task of `count` tasks, one at a time, each carrying a zipped submission."""
    from distributed import Client, LocalCluster

    sys.path.insert(0, str(ROOT))
    from graders.harness.batch.cluster import payload
    from graders.harness.core.intake import discover

    entry = next(e for e in discover(subs) if e.kind == "dir" and any(e.path.iterdir()))
    data, _, _ = payload(entry)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None, memory_limit=0) as cluster:
        with Client(cluster) as client:
            client.submit(echo, {"data": data}, pure=False).result()  # warm
            start = time.perf_counter()
            for _ in range(count):
                client.submit(echo, {"name": b"x", "data": data}, pure=False).result()
            return 1000 * (time.perf_counter() - start) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--call-seconds", type=float, default=0.5)
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated files and results here")
    args = parser.parse_args()
    try:
        import distributed  # noqa: F401
    except ImportError:
        sys.exit('needs Dask: pip install ".[dask]"')
    work = Path(tempfile.mkdtemp(prefix="scale-bench-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    subs = work / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    subs.mkdir()
    made = generate(subs, args.n, random.Random(SEED))
    n, w = len(made), args.workers
    print(f"{n} mixed submissions, {w} workers each way, {os.cpu_count()} cores on this machine")
    for name in ("local", "merged", "dask", *(f"shard{i}" for i in range(w))):
        shutil.rmtree(work / name, ignore_errors=True)

    local = timed([command(subs, work / "local", args.call_seconds, "--jobs", str(w))])
    shards = [command(subs, work / f"shard{i}", args.call_seconds, "--jobs", "1", "--shard", f"{i}/{w}")
              for i in range(w)]  # fmt: skip
    sharded = timed(shards)
    merge = timed([[sys.executable, "grade.py", "merge", *(str(work / f"shard{i}") for i in range(w)),
                    "--out", str(work / "merged")]])  # fmt: skip
    dask = timed([command(subs, work / "dask", args.call_seconds, "--scheduler", f"local:{w}")])

    rows = [
        ("local batch --jobs", local, steady_rate(work / "local")),
        (
            f"{w} shards --jobs 1 + merge",
            sharded + merge,
            min(steady_rate(work / f"shard{i}") for i in range(w)) * w,
        ),
        ("Dask --scheduler local:", dask, steady_rate(work / "dask")),
    ]
    print(f"{'way':<28} {'seconds':>8} {'per s':>7} {'steady per s':>13}")
    for label, seconds, steady in rows:
        label = f"{label}{w}" if label.endswith((":", "--jobs")) else label
        print(f"{label:<28} {seconds:8.1f} {n / seconds:7.2f} {steady:13.2f}")
    print(f"merge alone: {merge:.2f} s for {n} submissions")
    print(
        f"mean seconds a job spent on a submission: local {in_job(work / 'local'):.3f}, "
        f"Dask {in_job(work / 'dask'):.3f} (the same job code: a difference is CPU taken by Dask's processes)"
    )
    local_each, dask_each = 1 / rows[0][2], 1 / rows[2][2]
    overhead = 1000 * w * (dask_each - local_each)
    print(f"Dask overhead per submission (steady, per worker): {overhead:+.0f} ms "
          f"({1000 * w * local_each:.0f} ms locally, {1000 * w * dask_each:.0f} ms via Dask)")  # fmt: skip
    print(
        f"Dask round trip of one task carrying a submission's bytes (no grading): {round_trip(subs):.1f} ms"
    )
    gradebooks = {name: (work / name / "gradebook.csv").read_bytes() for name in ("local", "merged", "dask")}
    same = gradebooks["local"] == gradebooks["merged"] == gradebooks["dask"]
    print(f"the three gradebooks are identical: {'yes' if same else 'NO'}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
