"""Batch grading throughput: `grade.py batch --jobs 2`, `--jobs 1`, and one process per submission.

    python benchmarks/batch.py [--n 120] [--subset 12] [--call-seconds 0.5] [--mix both|original|all]
                               [--quick] [--keep DIR]

Runs on two mixes in ONE run (`--mix both`, the default), each clearly labelled:

* the ORIGINAL MIX: exercises 1-4 only, the mix this benchmark had when issue 12 set its target
  (batch --jobs 2 >= 15 submissions/s on 2 cores); graded with `--exercise` for those four;
* ALL EXERCISES that exist now.

For each mix it generates N submissions: correct ones (the reference files), one known mistake each
(a mutant from tests/mutants/ in one exercise, reference elsewhere), stubs, and broken ones (syntax
error, endless loop at import or in a function, missing files, empty folder); about one in six is a
.zip. Then grades them three ways and prints submissions per second, the ratios and each job's
peak memory:

1. `python grade.py batch --jobs 2` (trusted job processes and their zygotes started once, reused);
2. `python grade.py batch --jobs 1` (skipped with --quick);
3. one fresh `python grade.py SUB --format json` process per submission, two at a time (how
   container-per-submission graders work), on `--subset` folder submissions taken evenly from the
   set, without the endless loops (that would only make this way look slower: the single-submission
   command has no --call-seconds); skipped with --quick.

The batch figures include everything (start-up, the endless loops, zips, the gradebook and class
report); the per-process figure is measured on the subset and stated as such. Scores of the subset
are compared between the ways (same seed, so they must agree). For each batch run it also prints
the machine's busy CPU time (all processes: a batch on 2 cores is CPU-bound, so this is what a
faster batch must save) and the mean seconds a job spent on a submission of each kind. The last
lines put each mix's --jobs 2 rate beside the target.
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
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graders.harness.core.project import default_project  # noqa: E402

SEED = 20261129
LOOP_AT_IMPORT = "while True:\n    pass\n"
SYNTAX_ERROR = "def broken(:\n    return\n"


def mutants(project) -> list[tuple[str, Path]]:
    out = []
    for exercise in project.exercise_ids():
        folder = project.root / "tests" / "mutants" / exercise
        if (folder / "mutants.toml").is_file():
            names = tomllib.loads((folder / "mutants.toml").read_text(encoding="utf-8"))
            out += [(exercise, folder / f"{name}.py") for name in names if (folder / f"{name}.py").is_file()]
    return out


def first_function(source: str) -> str | None:
    for line in source.splitlines():
        if line.startswith("def "):
            return line[4:].split("(")[0]
    return None


def generate(folder: Path, n: int, rng: random.Random, ids: list[str]) -> dict[str, str]:
    """N submissions of exercises `ids` in `folder`; returns {student: kind}."""
    project = default_project()
    reference = {e: project.reference_path(e).read_text(encoding="utf-8") for e in ids}
    stub = {e: project.template_path(e).read_text(encoding="utf-8") for e in ids}
    known = [(e, path) for e, path in mutants(project) if e in ids]
    looping = next((e for e in ids if first_function(reference[e])), ids[0])
    loop_in_function = (
        reference[looping]
        + f"\n\ndef {first_function(reference[looping])}(*args, **kwargs):\n    while True:\n        pass\n"
    )
    plan = (
        ["correct"] * 36 + ["mutant"] * 42 + ["stub"] * 12 + ["syntax"] * 8 + ["missing"] * 8
        + ["loop_import"] * 2 + ["loop_function"] * 1 + ["empty"] * 2
    )  # fmt: skip
    kinds = [plan[i % len(plan)] for i in range(n)]
    rng.shuffle(kinds)
    made = {}
    for i, kind in enumerate(kinds):
        files = dict(reference)
        if kind == "mutant" and known:
            exercise, path = known[i % len(known)]
            files[exercise] = path.read_text(encoding="utf-8")
        elif kind == "stub":
            files = dict(stub)
        elif kind == "syntax":
            files[rng.choice(ids)] = SYNTAX_ERROR
        elif kind == "missing":
            kept = rng.sample(ids, max(1, len(ids) // 2))
            files = {e: s for e, s in files.items() if e in kept}
        elif kind == "loop_import":
            files[rng.choice(ids)] = LOOP_AT_IMPORT
        elif kind == "loop_function":
            files[looping] = loop_in_function
        elif kind == "empty":
            files = {}
        student = f"student{i:04d}"
        as_zip = kind not in ("empty",) and i % 6 == 5
        if as_zip:
            with zipfile.ZipFile(folder / f"{student}.zip", "w", zipfile.ZIP_DEFLATED) as zf:
                for exercise, source in files.items():
                    zf.writestr(f"{student}/{exercise}.py", source)
        else:
            (folder / student).mkdir()
            for exercise, source in files.items():
                (folder / student / f"{exercise}.py").write_text(source, encoding="utf-8")
        made[student] = kind + (" (zip)" if as_zip else "")
    return made


def machine_busy_seconds() -> float | None:
    """CPU seconds all CPUs of this machine have spent busy since boot (/proc/stat), None elsewhere.
    Machine-wide, so it counts every process of a batch (jobs, zygotes, workers, the kernel's share);
    and whatever else runs meanwhile."""
    try:
        fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def exercise_args(ids: list[str]) -> list[str]:
    return [arg for e in ids for arg in ("--exercise", e)]


def run_batch(
    subs: Path, out: Path, jobs: int, call_seconds: float, ids: list[str]
) -> tuple[float, dict, float | None]:
    cmd = [sys.executable, "grade.py", "batch", str(subs), "--out", str(out), "--jobs", str(jobs),
           "--seed", str(SEED), "--lang", "en", "--call-seconds", str(call_seconds),
           *exercise_args(ids)]  # fmt: skip
    busy = machine_busy_seconds()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    cpu = None if busy is None else machine_busy_seconds() - busy
    if proc.returncode != 0:
        sys.exit(f"batch --jobs {jobs} failed:\n{proc.stderr[-3000:]}")
    return seconds, json.loads((out / "batch.json").read_text())["last_run"], cpu


def seconds_by_kind(results: Path, made: dict[str, str]) -> str:
    """Mean seconds a job spent on one submission of each kind (the `elapsed` of each result)."""
    spent: dict[str, list[float]] = {}
    for path in results.glob("*.json"):
        spent.setdefault(made[path.stem].split()[0], []).append(json.loads(path.read_text())["elapsed"])
    return ", ".join(f"{k} {sum(v) / len(v):.2f} s" for k, v in sorted(spent.items()))


def run_per_process(
    subs: Path, students: list[str], out: Path, ids: list[str]
) -> tuple[float, dict[str, float]]:
    out.mkdir()

    def one(student: str) -> float:
        target = out / f"{student}.json"
        cmd = [sys.executable, "grade.py", str(subs / student), "--format", "json", "--out", str(target),
               "--seed", str(SEED), "--lang", "en", *exercise_args(ids)]  # fmt: skip
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        return json.loads(target.read_text())["score"]

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as workers:
        scores = dict(zip(students, workers.map(one, students), strict=True))
    return time.perf_counter() - start, scores


ORIGINAL_MIX = ("ex01_attention_by_hand", "ex02_self_attention", "ex03_permutation_and_position",
                "ex04_multi_head_attention")  # fmt: skip
TARGET_RATE = 15.0  # issue 12: batch --jobs 2 on 2 cores, on the benchmark's mix as it was (exercises 1-4)


def bench_mix(label: str, ids: list[str], work: Path, args) -> dict:
    """Generate the mix of `ids`, grade it the ways asked, print the figures; return the rates."""
    subs = work / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    subs.mkdir(parents=True)
    made = generate(subs, args.n, random.Random(SEED), ids)
    mix: dict[str, int] = {}
    for kind in made.values():
        mix[kind.split()[0]] = mix.get(kind.split()[0], 0) + 1
    zips = sum(1 for k in made.values() if k.endswith("(zip)"))
    print(f"\n== {label}: {len(made)} submissions over {len(ids)} exercises: "
          f"{', '.join(f'{v} {k}' for k, v in sorted(mix.items()))}; {zips} as .zip")  # fmt: skip

    figures, rates = {}, {}
    for jobs in (2,) if args.quick else (2, 1):
        out = work / f"results-jobs{jobs}"
        shutil.rmtree(out, ignore_errors=True)
        seconds, last, cpu = run_batch(subs, out, jobs, args.call_seconds, ids)
        figures[jobs] = (seconds, last, out)
        rates[jobs] = len(made) / seconds
        steady = len(made) / max(seconds - last["startup_seconds"], 1e-9)
        print(f"batch --jobs {jobs}: {len(made)} in {seconds:.1f} s = {len(made) / seconds:.2f} per second "
              f"(start-up {last['startup_seconds']:.1f} s; after it {steady:.2f}/s)")  # fmt: skip
        if cpu is not None:
            cores = os.cpu_count() or 1
            share, each = 100 * cpu / (cores * seconds), 1000 * cpu / len(made)
            print(f"    machine CPU busy: {cpu:.1f} s of {cores * seconds:.1f} s on {cores} cores "
                  f"({share:.0f}%; {each:.0f} ms per submission, start-up and loops included)")  # fmt: skip
        print(f"    seconds per submission in a job, by kind: {seconds_by_kind(out / 'results', made)}")
        for job in last["jobs"]:
            print(f"    job {job['job']}: {job['graded']} graded, peak RSS {job['peak_rss_mib']} MiB "
                  f"(its zygote: {job['zygote_peak_rss_mib']} MiB)")  # fmt: skip
    if args.quick:
        return rates

    candidates = [s for s, k in made.items() if "loop" not in k and "zip" not in k]
    step = max(1, len(candidates) // args.subset)
    subset = candidates[::step][: args.subset]
    out = work / "results-per-process"
    shutil.rmtree(out, ignore_errors=True)
    seconds, scores = run_per_process(subs, subset, out, ids)
    per_process = len(subset) / seconds
    rates["per_process"] = per_process
    print(f"one grade.py process per submission (2 at a time, {len(subset)} without endless loops): "
          f"{seconds:.1f} s = {per_process:.2f} submissions/s")  # fmt: skip
    batch_scores = {
        s: json.loads((figures[2][2] / "results" / f"{s}.json").read_text())["score"] for s in subset
    }
    agree = all(batch_scores[s] == scores[s] for s in subset)
    print(f"scores of the subset agree between batch and per-process: {'yes' if agree else 'NO'}")
    print(f"batch --jobs 2 vs one process per submission: {rates[2] / per_process:.1f}x")
    print(f"batch --jobs 2 vs --jobs 1: {rates[2] / rates[1]:.2f}x")
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--subset", type=int, default=12)
    parser.add_argument("--call-seconds", type=float, default=0.5)
    parser.add_argument("--mix", choices=["both", "original", "all"], default="both",
                        help="exercises 1-4 (the issue's original mix), all, or both (default)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="batch --jobs 2 only")
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated files and results here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="batch-bench-")) if args.keep is None else args.keep
    work.mkdir(parents=True, exist_ok=True)
    every = default_project().exercise_ids()
    mixes = []
    if args.mix in ("both", "original"):
        original = [e for e in ORIGINAL_MIX if e in every]
        mixes.append(("ORIGINAL MIX, exercises 1-4 only (the mix issue 12's target was set on)", original))
    if args.mix in ("both", "all"):
        mixes.append((f"ALL {len(every)} EXERCISES", every))
    rates = {label: bench_mix(label, ids, work / f"mix{i}", args) for i, (label, ids) in enumerate(mixes)}
    print(f"\nbatch --jobs 2 on {os.cpu_count()} cores, submissions/s beside the target ({TARGET_RATE:g}/s):")
    for label, r in rates.items():
        verdict = "met" if r[2] >= TARGET_RATE else "NOT met"
        print(f"    {label.split(':')[0][:48]:48} {r[2]:6.2f}/s   target {TARGET_RATE:g}/s: {verdict}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
