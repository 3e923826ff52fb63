"""Run the whole hostile-submission suite and print what each attack achieved, plus worker start cost.

    python benchmarks/hostile_suite.py [--seed N] [--spawns 30] [case ...]

Per case: its exercise, seconds taken, points awarded on the attacked checks (of how many), the
total score, sandbox processes left, files changed, problems of the report in any output format
(not inert, not parsing, over its size bound), the case's budget, and whether everything held; then
a total line. Then the median cost of starting one sandboxed worker (fork from the warm zygote,
namespaces, empty root, uid switch, seccomp filter, hello frame) next to a fresh
`python -c "import torch"` measured in the same run.
Targets: 0 points, 0 processes, 0 files, 0 format problems on every case, each within budget,
worker start < 50 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "hostile"))

import suite  # noqa: E402

from graders.harness.core.project import default_project  # noqa: E402
from graders.harness.sandbox.client import SandboxPool  # noqa: E402


def spawn_cost(pool: SandboxPool, n: int) -> float:
    pool.spawn(0).close()  # the zygote's own start is not a worker's
    times = []
    for _ in range(n):
        start = time.perf_counter()
        worker = pool.spawn(0)
        times.append(time.perf_counter() - start)
        worker.close()
    return statistics.median(times) * 1000


def import_torch_cost(n: int = 3) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import torch"], check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="grading seed (default: random, never 1234)")
    parser.add_argument("--spawns", type=int, default=30)
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.choice([s for s in range(1, 10**6) if s != 1234])
    project = default_project()
    cases = [c for c in suite.load_cases(project) if not args.cases or c.name in args.cases]
    exercises = sorted({c.exercise for c in cases})
    print(f"hostile suite: {len(cases)} cases, exercises {', '.join(exercises)}, seed {seed}")
    print(f"limits {suite.LIMITS}")
    head = (
        f"{'case':28s} {'ex':>4s} {'seconds':>7s} {'points':>9s} {'score':>5s} {'procs':>5s} {'files':>5s}"
        f" {'fmt':>3s} {'budget':>6s}  result"
    )
    print(head)
    print("-" * len(head))
    totals = {"seconds": 0.0, "points": 0.0, "procs": 0, "files": 0, "fmt": 0, "failed": 0, "skipped": 0}
    with suite.make_pool() as pool:
        level = suite.pool_level(pool)
        for case in cases:
            with tempfile.TemporaryDirectory() as tmp:
                r = suite.run_case(case, project, pool, Path(tmp), seed=seed)
            if r.skipped:
                totals["skipped"] += 1
                print(
                    f"{case.name:28s} {case.exercise[:4]:>4s} {'-':>7s} {'-':>9s} {'-':>5s} {'-':>5s}"
                    f" {'-':>5s} {'-':>3s} {case.budget:6.0f}  skipped: {r.skipped}"
                )
                continue
            verdict = "ok" if r.ok else "FAILED: " + "; ".join(r.problems())
            if r.points_on_known_seed is not None:
                verdict += f" (earned {r.points_on_known_seed:g} under its studied seed {suite.RECORD_SEED})"
            points = f"{r.points_attacked:g}/{r.max_attacked:g}"
            print(
                f"{case.name:28s} {case.exercise[:4]:>4s} {r.seconds:7.2f} {points:>9s} {r.score:5g}"
                f" {len(r.processes_left):5d} {len(r.files_changed):5d} {len(r.format_problems):3d}"
                f" {case.budget:6.0f}  {verdict}"
            )
            totals["seconds"] += r.seconds
            totals["points"] += r.points_attacked
            totals["procs"] += len(r.processes_left)
            totals["files"] += len(r.files_changed)
            totals["fmt"] += len(r.format_problems)
            totals["failed"] += not r.ok
        print("-" * len(head))
        ran = len(cases) - totals["skipped"]
        print(
            f"{'TOTAL':28s} {'':>4s} {totals['seconds']:7.2f} {totals['points']:9g} {'':>5s}"
            f" {totals['procs']:5d} {totals['files']:5d} {totals['fmt']:3d}"
            f"         {ran - totals['failed']}/{ran} held, {totals['skipped']} skipped, isolation {level}"
        )
        full = spawn_cost(pool, args.spawns)
    print()
    print(f"worker start, median of {args.spawns} ({level}):   {full:8.1f} ms   (target < 50 ms)")
    if os.geteuid() == 0:
        with SandboxPool(suite.LIMITS, run_as=(65534, 65534)) as user_pool:
            partial = spawn_cost(user_pool, args.spawns)
        print(f"worker start, median of {args.spawns} (as nobody, partial): {partial:8.1f} ms")
    print(f"fresh `python -c 'import torch'`, median of 3:  {import_torch_cost():8.1f} ms")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
