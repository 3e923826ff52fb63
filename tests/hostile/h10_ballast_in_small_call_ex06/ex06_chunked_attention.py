"""Issue 9, ex06's memory check: a ballast taken in the small call made before the measured ones.

`chunked_peak_memory` used to measure from after a small warm-up call. This naive attention builds
the FULL (L, S) score matrix (about 130 MiB at L = S = 4096); any small call allocates and touches a
256 MiB ballast and keeps it, and the first full-size call frees it (large blocks are unmapped at once),
computes inside the room it leaves, so the kernel's peak never rises above the level the
measurement starts from.

Contained means: `chunked_peak_memory` earns nothing.
"""

import math

import torch

_ballast = []


def chunked_attention(q, k, v, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size must be at least 1")
    big = q.shape[-2] * k.shape[-2] >= 1 << 22
    if big:
        _ballast.clear()
    elif not _ballast:
        _ballast.append(torch.empty(256 * 1024 * 1024 // 4).fill_(1.0))
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    out = w @ v
    del w
    return out
