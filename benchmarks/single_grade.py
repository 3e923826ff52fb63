"""How long a student waits: one `python grade.py` against the floor of importing torch and pytest.

    python benchmarks/single_grade.py [--rounds 7]

In ONE run, interleaved round by round so that the machine's noise falls on every figure alike,
it times (wall clock, median over the rounds, and the process tree's CPU time):

1. the floor: `python -c "import torch, pytest"` (what any grader written in Python and pytest
   must pay before it grades anything), and beside it the same imports ended with `os._exit`:
   `grade.py` ends so once its reports are written (the exit handlers run, the interpreter's
   teardown of torch, ~0.4 s, is skipped), and the floor, as issue 12 defined it, includes it;
2. `python grade.py SUB --format json` on a correct submission of every exercise;
3. the same with `--exercise` on exercises 1-4 (a full submission when issue 12 set its target);
4. the same with `--exercise` on one exercise;
5. `python grade.py SUB --watch`: the seconds from saving one exercise file to the regraded report
   on stdout (the zygote and the pytest session stay warm between saves).

and prints each figure beside the floor with the ratio, and whether it meets its target: 1.4x the
floor for a grade (2-4; issue 12 set it on a full submission, which then had exercises 1-4), half a
second for (5).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.harness.core.project import default_project  # noqa: E402

ORIGINAL = ("ex01_attention_by_hand", "ex02_self_attention", "ex03_permutation_and_position",
            "ex04_multi_head_attention")  # fmt: skip
GRADE_TARGET, WATCH_TARGET = 1.4, 0.5  # x the floor; seconds


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and its waited-for children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace')[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def watch_latencies(submission: Path, exercise: str, saves: int) -> list[float]:
    """Start `grade.py --watch`, then save `exercise`'s file `saves` times and time each report."""
    proc = subprocess.Popen(
        [sys.executable, "grade.py", str(submission), "--watch", "--lang", "en", "--seed", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    marker = b"Watching"  # printed after every report, when the watcher waits for the next save
    latencies: list[float] = []
    try:
        line = b""
        while marker not in line:  # the first full grade
            line = proc.stdout.readline()
            if not line:
                sys.exit("grade.py --watch exited before its first report")
        path = submission / f"{exercise}.py"
        for i in range(saves):
            time.sleep(0.3)  # past the watcher's debounce, as a student's saves are
            source = path.read_text(encoding="utf-8")
            start = time.perf_counter()
            path.write_text(source + f"\n# save {i}\n", encoding="utf-8")
            line = b""
            while marker not in line:
                line = proc.stdout.readline()
                if not line:
                    sys.exit("grade.py --watch exited while regrading")
            latencies.append(time.perf_counter() - start)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return latencies


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    project = default_project()
    exercises = project.exercise_ids()
    one = "ex02_self_attention" if "ex02_self_attention" in exercises else exercises[0]
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="bench-single-") as tmp:
        sub = Path(tmp) / "sub"
        sub.mkdir()
        for e in exercises:
            shutil.copyfile(project.reference_path(e), sub / f"{e}.py")
        out = Path(tmp) / "report.json"
        original = [e for e in ORIGINAL if e in exercises]
        ways = {
            "floor: import torch, pytest": [py, "-c", "import torch, pytest"],
            # the same imports, then os._exit as grade.py ends: the interpreter's teardown of torch
            # (~0.4 s) is part of the floor above but not of a grade; shown so that the gain is seen
            "  the same, exit without teardown": [py, "-c", "import os, torch, pytest; os._exit(0)"],
            f"grade.py, all {len(exercises)} exercises": [
                py, "grade.py", str(sub), "--format", "json", "--seed", "1", "--out", str(out)
            ],
            f"grade.py, exercises 1-{len(original)} (issue's full)": [
                py, "grade.py", str(sub), "--format", "json", "--seed", "1", "--out", str(out),
                *(arg for e in original for arg in ("--exercise", e)),
            ],
            f"grade.py --exercise {one}": [
                py, "grade.py", str(sub), "--format", "json", "--seed", "1", "--out", str(out),
                "--exercise", one,
            ],
        }  # fmt: skip
        walls: dict[str, list[float]] = {name: [] for name in ways}
        cpus: dict[str, list[float]] = {name: [] for name in ways}
        for cmd in ways.values():  # warm the page cache once, untimed
            timed(cmd)
        for _ in range(args.rounds):
            for name, cmd in ways.items():
                wall, cpu = timed(cmd)
                walls[name].append(wall)
                cpus[name].append(cpu)
        latencies = watch_latencies(sub, one, saves=max(args.rounds, 5))

    floor = statistics.median(walls["floor: import torch, pytest"])
    print(f"{args.rounds} rounds, interleaved; median wall seconds (CPU seconds of the process tree)\n")
    print(f"{'':44} {'wall s':>8} {'CPU s':>8} {'x floor':>8}  target")
    for name in ways:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        ratios = [w / f for w, f in zip(walls[name], walls["floor: import torch, pytest"], strict=True)]
        ratio = statistics.median(ratios)  # of each round's ratio: the floor measured beside it
        verdict = "" if not name.startswith("grade.py") else ("met" if ratio <= GRADE_TARGET else "NOT met")
        print(f"{name:44} {wall:8.2f} {cpu:8.2f} {ratio:8.2f}  {verdict}")
    watch = statistics.median(latencies)
    verdict = "met" if watch <= WATCH_TARGET else "NOT met"
    label = "grade.py --watch, save -> report (" + one[:4] + ")"
    print(f"{label:44} {watch:8.2f} {'':>8} {watch / floor:8.2f}  {verdict}")
    print(f"\nwatch latencies: {', '.join(f'{x:.2f}' for x in latencies)}")
    print(f"targets: a grade <= {GRADE_TARGET:.2f}x the floor (median of each round's ratio); "
          f"--watch <= {WATCH_TARGET:.2f} s for one exercise")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
