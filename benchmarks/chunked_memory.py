"""Peak memory of one attention call at L = S = 4096, d = 64: exercise 6's chunked reference beside
the naive three lines, side by side, as the grader measures it.

    python benchmarks/chunked_memory.py              # 5 fresh workers per row
    python benchmarks/chunked_memory.py --repeat 10 --chunks 64,256,1024

Each row loads its implementation into a fresh sandbox worker, makes one full-size call (torch's
first use of its kernels, the allocator's first growth), then measures a second call: the trusted
side resets the kernel's high-water mark before the call and reads it after (`expect.peak_memory`:
the worker's cgroup as root, else its VmHWM). The figure is the rise above what the worker held
before the call, inputs and output in transit included; "process" rows force the VmHWM reading
where a cgroup exists (with the "warm" baseline alone). Baseline "warm": measured from after that
first call, in the worker that holds the module (a ballast the module holds then can be freed inside
the call: the "ballast" row); "fresh": as the check `chunked_peak_memory` measures, from a fresh
worker where only the check's trusted warm-up (`WARM_TORCH`) has run, the module's import and a
small call inside the span.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graders.harness.core import expect  # noqa: E402
from graders.harness.core.student import StudentSession  # noqa: E402
from graders.harness.sandbox.client import SandboxPool  # noqa: E402
from graders.test_ex06_chunked_attention import (  # noqa: E402  (the check's own sizes and bound)
    MATRIX_BYTES,
    MEMORY_BOUND,
    MEMORY_CHUNK,
    MEMORY_DIM,
    MEMORY_SIZE,
    WARM_TORCH,
)

EXERCISE = "ex06_chunked_attention"
NAIVE = """
import math

import torch


def chunked_attention(q, k, v, chunk_size):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (L, S): the whole matrix
    weights = torch.softmax(scores, dim=-1)  # (L, S) again
    return weights @ v
"""
BALLAST = """
import math

import torch

_ballast = [torch.empty(256 * 1024 * 1024 // 4).fill_(1.0)]  # 256 MiB, set aside at import
_calls = []


def chunked_attention(q, k, v, chunk_size):
    _calls.append(q.shape)
    if len(_calls) > 1:
        _ballast.clear()  # freed inside the measured call: room for the whole matrix
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v
"""
MIB = 1 << 20


def measure(
    pool: SandboxPool, path: Path, chunk: int, source: str, seed: int, baseline: str
) -> tuple[float, float]:
    """(MiB above the baseline, seconds) of one measured call in a fresh worker."""
    session = StudentSession(pool)
    try:
        session.add(EXERCISE, path, seed, 60)
        student = session.module(EXERCISE)
        rng = torch.Generator().manual_seed(seed)
        q, k, v, v_other = (torch.randn(MEMORY_SIZE, MEMORY_DIM, generator=rng) for _ in range(4))
        student.chunked_attention(q, k, v, chunk)
        warm = (WARM_TORCH, (MEMORY_SIZE, MEMORY_DIM, MEMORY_CHUNK)) if baseline == "fresh" else (None, ())
        if source == "process":
            session.worker.memory_files = {}
        with expect.peak_memory(student, *warm) as peak:
            if baseline == "fresh":
                student.chunked_attention(q[:128], k[:128], v[:128], chunk if chunk <= 128 else 128)
            start = time.perf_counter()
            student.chunked_attention(q, k, v_other, chunk)
            seconds = time.perf_counter() - start
        return peak.growth / MIB, seconds
    finally:
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--chunks", default=f"{MEMORY_CHUNK},256,1024")
    args = parser.parse_args()
    torch.set_num_threads(1)
    chunks = [int(c) for c in args.chunks.split(",")]
    with tempfile.TemporaryDirectory() as tmp, SandboxPool() as pool:
        naive = Path(tmp) / f"{EXERCISE}.py"
        naive.write_text(NAIVE, encoding="utf-8")
        ballast = Path(tmp) / "ballast" / f"{EXERCISE}.py"
        ballast.parent.mkdir()
        ballast.write_text(BALLAST, encoding="utf-8")
        reference = ROOT / "reference" / f"{EXERCISE}.py"
        rows = [(f"chunked, chunk {c}", reference, c) for c in chunks]
        rows.append(("naive (whole matrix)", naive, MEMORY_CHUNK))
        rows.append(("naive + import ballast", ballast, MEMORY_CHUNK))
        pool.spawn().close()  # start the zygote before timing anything
        print(
            f"L = S = {MEMORY_SIZE}, d = {MEMORY_DIM}; float32 score matrix alone: {MATRIX_BYTES / MIB:.0f}"
            f" MiB; the check's bound: {MEMORY_BOUND / MIB:.0f} MiB; {args.repeat} fresh workers per row"
        )
        head = f"{'implementation':<24} {'source':<8} {'baseline':<8} {'min MiB':>8} {'median':>8} {'max':>8}"
        print(f"{head} {'s/call':>7}")
        for label, path, chunk in rows:
            for source, baseline in (("default", "warm"), ("default", "fresh"), ("process", "warm")):
                got = [measure(pool, path, chunk, source, seed, baseline) for seed in range(args.repeat)]
                mib = [g[0] for g in got]
                name = "cgroup" if source == "default" and pool.mode == "root" else "process"
                spread = f"{min(mib):>8.1f} {statistics.median(mib):>8.1f} {max(mib):>8.1f}"
                seconds = statistics.median(g[1] for g in got)
                print(f"{label:<24} {name:<8} {baseline:<8} {spread} {seconds:>7.3f}")


if __name__ == "__main__":
    main()
