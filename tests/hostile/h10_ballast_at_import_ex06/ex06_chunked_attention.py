"""Issue 9, ex06's memory check: a ballast taken when the module is imported.

`chunked_peak_memory` used to measure from after a small warm-up call, in the worker that had
already imported the module. This naive attention builds the FULL (L, S) score matrix (about 130 MiB
at L = S = 4096), but its module allocates and touches a 256 MiB ballast at import; the first
full-size call frees it (large blocks are unmapped at once) and computes inside the room it leaves,
so the kernel's peak never rises above the level the measurement starts from.

Contained means: `chunked_peak_memory` earns nothing.
"""

import math

import torch

_ballast = [torch.empty(256 * 1024 * 1024 // 4).fill_(1.0)]


def chunked_attention(q, k, v, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    big = q.shape[-2] * k.shape[-2] >= 1 << 22
    if big:
        _ballast.clear()
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    out = w @ v
    del w
    return out
