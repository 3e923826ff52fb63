"""Mutant: a while loop whose start is advanced before the first chunk is read."""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    root = math.sqrt(q.shape[-1])
    m = torch.full((*q.shape[:-1], 1), -float("inf"))
    l = torch.zeros((*q.shape[:-1], 1))  # noqa: E741
    acc = torch.zeros((*q.shape[:-1], v.shape[-1]))
    start = 0
    while start + chunk_size < k.shape[-2]:
        start += chunk_size
        dots = torch.einsum("...ld,...cd->...lc", q, k[..., start : start + chunk_size, :]) / root
        m_new = torch.maximum(m, dots.max(dim=-1, keepdim=True).values)
        p = torch.exp(dots - m_new)
        alpha = torch.exp(m - m_new)
        l = alpha * l + p.sum(dim=-1, keepdim=True)  # noqa: E741
        acc = alpha * acc + torch.einsum("...lc,...cd->...ld", p, v[..., start : start + chunk_size, :])
        m = m_new
    return acc / l
