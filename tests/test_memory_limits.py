"""Memory limits never cost a correct solution a point, whatever footprint the torch build has, and
running out of memory is charged to the student only when the sandbox really gave its budget.

CI has only the CPU wheel of torch (about 0.6 GiB of address space after `import torch`). The
CUDA wheel that a plain `pip install torch` gives on Linux maps over 3 GiB at import, GPU or not;
a fixed 3 GiB RLIMIT_AS once left it no room at all and cost correct solutions their points. The
pools here stand in for that build: their zygote reserves gigabytes of address space before it
forks, as that build does. `benchmarks/torch_builds.py` grades with a real CUDA build where one
is installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from conftest import PROJECT, reference_files

from graders.harness.core.runner import grade
from graders.harness.sandbox.client import BOOT, Limits, SandboxPool

RESERVED = 6 << 30
NOBODY = (65534, 65534)
BUDGET = 512 << 20

AS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to run a zygote as another user too)")


class LargeFootprintPool(SandboxPool):
    """A zygote that maps `RESERVED` bytes of address space it never touches before importing
    torch and forking, as the CUDA build of torch does; and, stricter than any build, that serves
    every allocation over 4 KiB from fresh address space (so a limit that leaves torch no room
    fails at once, even when the heap the zygote left behind could have served a small workload)."""

    def boot_source(self) -> str:
        reserve = (  # mmap(NULL, RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
            "import ctypes; _libc = ctypes.CDLL(None); _libc.mmap.restype = ctypes.c_void_p; "
            "_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, "
            "ctypes.c_int, ctypes.c_long]; "
            f"assert _libc.mmap(None, {RESERVED}, 0, 0x22 | 0x4000, -1, 0) not in (None, 2**64 - 1); "
            "_libc.mallopt(-3, 4096); "  # M_MMAP_THRESHOLD: every block over 4 KiB needs new address space
        )
        return reserve + BOOT


@dataclass(frozen=True)
class BrokenPromise(Limits):
    """A grader misconfigured to give workers less memory than it promises (`memory_bytes`)."""

    def for_worker(self) -> dict:
        return dict(super().for_worker(), memory_bytes=48 << 20)


def hog(megabytes: int) -> str:
    """An ex02 submission whose scaled_dot_product_attention touches `megabytes` MiB, layer correct."""
    return f"""
import torch


def scaled_dot_product_attention(q, k, v):
    block = torch.ones({megabytes} << 20, dtype=torch.uint8)
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return weights @ v + 0 * float(block[-1]), weights


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return weights @ v, weights
"""


def grade_source(pool, tmp_path, source: str):
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "ex02_self_attention.py").write_text(source, encoding="utf-8")
    (result,) = grade(PROJECT, folder, seed=3, exercises=["ex02_self_attention"], pool=pool).exercises
    return {c.id: c for c in result.checks}


@pytest.fixture(scope="module", params=["root", "ordinary user"])
def large_pool(request):
    if request.param == "ordinary user" and os.geteuid() != 0:
        pytest.skip("needs root to run the zygote as nobody")
    run_as = NOBODY if request.param == "ordinary user" else None
    with LargeFootprintPool(Limits(memory_bytes=BUDGET), run_as=run_as, userns=False) as pool:
        yield pool


def test_the_stand_in_zygote_really_maps_gigabytes(large_pool):
    large_pool.spawn().close()
    assert large_pool.footprint is not None and large_pool.footprint > RESERVED


def test_the_reference_scores_full_marks_under_a_large_footprint(large_pool, tmp_path):
    folder = tmp_path / "reference"
    folder.mkdir()
    for name, path in reference_files().items():
        (folder / name).write_bytes(path.read_bytes())
    report = grade(PROJECT, folder, seed=11, pool=large_pool)
    lost = [(e.id, c.id, c.message) for e in report.exercises for c in e.checks if c.status != "passed"]
    assert lost == []
    assert report.score == report.max_score > 0


def test_using_more_than_the_budget_is_the_students_fault(large_pool, tmp_path):
    checks = grade_source(large_pool, tmp_path, hog(megabytes=2 * (BUDGET >> 20)))
    failed = checks["sdpa_matches_oracle"]
    assert failed.status == "failed"
    assert "ran out of memory" in failed.message and str(BUDGET >> 20) in failed.message
    assert checks["layer_shapes"].status == "passed"  # the layer does not call the hog


def test_using_less_than_the_budget_costs_nothing(large_pool, tmp_path):
    checks = grade_source(large_pool, tmp_path, hog(megabytes=(BUDGET >> 20) // 2))
    assert {c.status for c in checks.values()} == {"passed"}


@AS_ROOT
@pytest.mark.parametrize("run_as", [None, NOBODY], ids=["root", "ordinary user"])
def test_a_sandbox_that_breaks_its_promise_is_the_graders_fault(tmp_path, run_as):
    with SandboxPool(BrokenPromise(memory_bytes=BUDGET), run_as=run_as, userns=False) as pool:
        checks = grade_source(pool, tmp_path, hog(megabytes=(BUDGET >> 20) // 2))
    failed = checks["sdpa_matches_oracle"]
    assert failed.status == "error"  # reported as the grader's problem, never as "your code raised"
    assert "not your fault" in failed.message and "Your code raised" not in failed.message
