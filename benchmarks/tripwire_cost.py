"""What the built-by-hand tripwire costs a worker: arming it for one exercise (Python wrappers alone,
and with the dispatcher's watch of the aten operators) and one call of a watched function, side by
side with an unwatched one. A submission that never calls a banned operator pays only the arming.

    python benchmarks/tripwire_cost.py [--exercise ex04_multi_head_attention] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import sys, threading, time, tomllib
import torch
torch.set_num_threads(1)
sys.path.insert(0, sys.argv[1])
from graders.harness.sandbox import worker as W
banned = tomllib.load(open(sys.argv[2], "rb"))["banned"]
trip = W.Tripwire(W.make_recorder({}, set(), {}, [None], lambda data: None, threading.Lock()))
if sys.argv[3] == "python":
    trip._watch_dispatcher = lambda reported: None
start = time.perf_counter()
trip.arm("x", banned)
print(time.perf_counter() - start, len(trip.installed), len(trip.dispatched))
"""


def arm(exercise: str, mode: str) -> tuple[float, int, int]:
    manifest = ROOT / "exercises" / exercise / "exercise.toml"
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(manifest), mode], capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1]), int(out[2])


def per_call(fn, *args, n: int = 2000) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--exercise", default="ex04_multi_head_attention")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for mode in ("python", "dispatcher"):
        runs = [arm(args.exercise, mode) for _ in range(args.rounds)]
        ms = statistics.median(r[0] for r in runs) * 1000
        print(f"arm {args.exercise} ({mode:10s}): {ms:6.1f} ms median of {args.rounds}, "
              f"{runs[0][1]} Python wrappers, {runs[0][2]} dispatcher kernels")  # fmt: skip

    import torch

    sys.path.insert(0, str(ROOT))
    from graders.harness.sandbox import worker as W

    torch.set_num_threads(1)
    q = torch.randn(1, 2, 16, 8)
    plain = per_call(torch.nn.functional.scaled_dot_product_attention, q, q, q)
    trip = W.Tripwire(W.make_recorder({}, set(), {}, [None], lambda data: None, threading.Lock()))
    trip.arm(
        "x", ["torch.nn.functional.scaled_dot_product_attention", "torch.ops.aten._scaled_dot_product_*"]
    )
    watched = per_call(torch.nn.functional.scaled_dot_product_attention, q, q, q)
    print(f"one sdpa call (1x2x16x8): unwatched {plain * 1e6:6.1f} us, watched {watched * 1e6:6.1f} us")


if __name__ == "__main__":
    main()
