"""Mutant: split chunks, each exponentiated against its own max; the sums are moved to the new max."""

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    scale = 1.0 / q.size(-1) ** 0.5
    m = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
    l = torch.zeros(q.shape[:-1] + (1,), dtype=q.dtype)  # noqa: E741
    o = torch.zeros(q.shape[:-1] + (v.size(-1),), dtype=q.dtype)
    for kc, vc in zip(torch.split(k, chunk_size, dim=-2), torch.split(v, chunk_size, dim=-2)):
        s = (q @ kc.mT) * scale
        local = s.amax(-1, keepdim=True)
        e = torch.exp(s - local)
        top = torch.maximum(m, local)
        alpha = torch.exp(m - top)
        l = alpha * l + e.sum(-1, keepdim=True)  # noqa: E741
        o = alpha * o + e @ vc
        m = top
    return o / l
