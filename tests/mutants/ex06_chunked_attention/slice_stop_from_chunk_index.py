"""Mutant: chunks indexed by number, each sliced i * chunk_size : chunk_size (the end not moved on)."""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"bad chunk_size {chunk_size}")
    keys = k.shape[-2]
    scale = 1 / math.sqrt(q.shape[-1])
    m = torch.full(q.shape[:-1] + (1,), -math.inf)
    l = torch.zeros(q.shape[:-1] + (1,))  # noqa: E741
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],))
    for i in range(math.ceil(keys / chunk_size)):
        lo = i * chunk_size
        kc, vc = k[..., lo:chunk_size, :], v[..., lo:chunk_size, :]
        scores = q @ kc.transpose(-2, -1) * scale
        m_new = torch.maximum(m, torch.max(scores, dim=-1, keepdim=True).values)
        corr = torch.exp(m - m_new)
        p = torch.exp(scores - m_new)
        l = corr * l + p.sum(-1, keepdim=True)  # noqa: E741
        acc = corr * acc + p @ vc
        m = m_new
    return acc / l
