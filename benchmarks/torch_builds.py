"""Does the reference score full marks under every torch build installed here? Prints one row per build.

    python benchmarks/torch_builds.py                          # the torch of this interpreter
    python benchmarks/torch_builds.py --python /venv/bin/python  # and another build, side by side

Each interpreter grades the reference solutions of every exercise under several seeds, in its own
process, with its own torch. A row says which build it ran (version, CUDA or CPU wheel), the sandbox
zygote's address space after `import torch` (the footprint the worker's memory limit is derived
from), the lowest score over the seeds, and every check that lost a point. The CUDA wheel that a
plain `pip install torch` gives on Linux maps several GiB at import, GPU or not.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (1, 2, 20261129)

PROBE = r"""
import json, shutil, sys, tempfile, time
from pathlib import Path
import torch
from graders.harness.core.project import default_project
from graders.harness.core.runner import grade
from graders.harness.sandbox.client import SandboxPool

project = default_project()
seeds = json.loads(sys.argv[1])
rows, lost = [], []
with SandboxPool() as pool, tempfile.TemporaryDirectory() as tmp:
    folder = Path(tmp) / "reference"
    folder.mkdir()
    for eid in project.exercise_ids():
        shutil.copyfile(project.reference_path(eid), folder / f"{eid}.py")
    for seed in seeds:
        start = time.perf_counter()
        report = grade(project, folder, seed=seed, pool=pool)
        rows.append([seed, report.score, report.max_score, time.perf_counter() - start])
        lost += [f"seed {seed}: {e.id}/{c.id}: {c.message[:120]}"
                 for e in report.exercises for c in e.checks if c.status != "passed"]
    footprint = pool.footprint
print(json.dumps({"torch": torch.__version__, "cuda": torch.version.cuda, "footprint": footprint,
                  "rows": rows, "lost": lost, "isolation": report.isolation_level}))
"""


def measure(python: str) -> dict:
    done = subprocess.run(
        [python, "-c", PROBE, json.dumps(SEEDS)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"python": python, "error": done.stderr.strip().splitlines()[-1:] or ["?"]}
    return {"python": python, **json.loads(done.stdout.strip().splitlines()[-1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", default=[], help="another interpreter to grade with")
    args = parser.parse_args()
    results = [measure(p) for p in [sys.executable, *args.python]]
    header = ("torch", "build", "zygote footprint", "lowest score", "s/grade", "isolation")
    print("{:<16} {:<10} {:>16} {:>12} {:>8}  {}".format(*header))
    for r in results:
        if "error" in r:
            print(f"{r['python']}: could not grade: {r['error'][0]}")
            continue
        build = f"CUDA {r['cuda']}" if r["cuda"] else "CPU"
        footprint = f"{r['footprint'] / 2**30:.2f} GiB" if r["footprint"] else "?"
        lowest = min(row[1] for row in r["rows"])
        total = r["rows"][0][2]
        seconds = sum(row[3] for row in r["rows"]) / len(r["rows"])
        score = f"{lowest:g}/{total:g}"
        print(f"{r['torch']:<16} {build:<10} {footprint:>16} {score:>12} {seconds:>8.2f}  {r['isolation']}")
        for line in r["lost"]:
            print(f"    lost: {line}")
    full = all("error" not in r and not r["lost"] for r in results)
    print("\nthe reference scores full marks under every build" if full else "\nSOME BUILD LOSES POINTS")
    return 0 if full else 1


if __name__ == "__main__":
    sys.exit(main())
