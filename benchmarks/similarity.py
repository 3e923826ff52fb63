"""Similarity report cost: `batch.similarity.run` over generated classes of growing size.

    python benchmarks/similarity.py [--sizes 50 200 800]

Each class holds, for every exercise, submissions drawn from the reference, its known mutants
(tests/mutants/: near copies of the reference), the stub, and the correct solutions written
differently from tests/test_alternatives_*; a class of N has N submissions per exercise, so up to
N(N-1)/2 pairs per exercise. Prints, side by side: the pairs compared in full (out of all pairs:
those sharing no fingerprint, or too few to reach the threshold, are skipped), the seconds in all
(wall clock, and this process's CPU: the machine may be shared) and the pairs listed (at most 200
per exercise). The mutants are near copies of the reference, so most pairs here really are
similar: a worst case for the skipping. Nothing is graded: this is the cost `--similarity` adds
to a batch.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from graders.harness.batch import similarity as S  # noqa: E402
from graders.harness.core.intake import discover  # noqa: E402
from graders.harness.core.project import default_project  # noqa: E402


def variants(project, exercise: str) -> list[str]:
    import test_alternatives_ex01_ex03 as a13
    import test_alternatives_ex02_ex04 as a24

    out = [project.reference_path(exercise).read_text(), project.template_path(exercise).read_text()]
    out += [p.read_text() for p in sorted((ROOT / "tests" / "mutants" / exercise).glob("*.py"))]
    prefix = "EX" + exercise[2:4] + "_"
    out += [c for m in (a13, a24) for n, c in vars(m).items() if n.startswith(prefix) and "\n" in str(c)]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 800])
    args = parser.parse_args()
    project = default_project()
    ids = project.exercise_ids()
    pool = {e: variants(project, e) for e in ids}
    rng = random.Random(0)
    header = ("submissions", "exercises", "pairs (all)", "compared", "seconds", "CPU seconds", "listed")
    print(" ".join(f"{h:>12}" for h in header))
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            subs = Path(tmp) / "subs"
            for i in range(n):
                folder = subs / f"s{i:04d}"
                folder.mkdir(parents=True)
                for e in ids:
                    (folder / f"{e}.py").write_text(rng.choice(pool[e]))
            import copydetect

            compared = [0]
            real = copydetect.compare_files

            def counting(a, b, real=real, compared=compared):
                compared[0] += 1
                return real(a, b)

            copydetect.compare_files = counting
            try:
                start, cpu = time.perf_counter(), time.process_time()
                result = S.run(discover(subs), project, ids, Path(tmp) / "out", "en")
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            finally:
                copydetect.compare_files = real
            every = len(ids) * n * (n - 1) // 2
            row = (n, len(ids), every, compared[0], f"{seconds:.2f}", f"{cpu:.2f}", len(result.pairs))
            print(" ".join(f"{v:>12}" for v in row))


if __name__ == "__main__":
    main()
