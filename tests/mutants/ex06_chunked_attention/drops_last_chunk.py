"""Mutant: only the S // chunk_size full chunks are visited"""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    scale = 1 / math.sqrt(q.shape[-1])
    lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
    m = torch.full((*lead, length, 1), float("-inf"), dtype=q.dtype)
    l = torch.zeros((*lead, length, 1), dtype=q.dtype)  # noqa: E741
    acc = torch.zeros((*lead, length, v.shape[-1]), dtype=q.dtype)
    for start in (i * chunk_size for i in range(keys // chunk_size)):
        k_chunk = k[..., start : start + chunk_size, :]
        v_chunk = v[..., start : start + chunk_size, :]
        scores = q @ k_chunk.transpose(-2, -1) * scale
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
        correction = torch.exp(m - m_new)
        p = torch.exp(scores - m_new)
        l = l * correction + p.sum(dim=-1, keepdim=True)  # noqa: E741
        acc = acc * correction + p @ v_chunk
        m = m_new
    return acc / l
