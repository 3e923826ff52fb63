"""Reference solution: attention over key chunks with an online softmax (never the L×S matrix)."""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    """softmax(q kᵀ/√d_k) v, computed chunk_size keys at a time.

    q: (..., L, d_k), k: (..., S, d_k), v: (..., S, d_v) -> context (..., L, d_v). Each query keeps a
    running maximum m, a running denominator l and a running numerator acc; a chunk whose scores
    raise the maximum rescales what was summed so far by exp(m_old − m_new).
    """
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    scale = math.sqrt(q.shape[-1]) ** -1  # 1/√d_k
    lead, length, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
    m = torch.full((*lead, length, 1), float("-inf"), dtype=q.dtype)  # (..., L, 1) running max
    l = torch.zeros((*lead, length, 1), dtype=q.dtype)  # (..., L, 1) Σ exp  # noqa: E741
    acc = torch.zeros((*lead, length, v.shape[-1]), dtype=q.dtype)  # (..., L, d_v) Σ exp·v
    blocks = []  # each chunk's scores, kept for the second pass
    for start in range(0, keys, chunk_size):
        k_chunk = k[..., start : start + chunk_size, :]  # (..., c, d_k)
        v_chunk = v[..., start : start + chunk_size, :]  # (..., c, d_v)
        scores = q @ k_chunk.transpose(-2, -1) * scale  # (..., L, c)
        m = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (..., L, 1)
        blocks.append((scores, v_chunk))
    for scores, v_chunk in blocks:  # every chunk shifted by the final maximum: no rescaling needed
        p = torch.exp(scores - m)  # (..., L, c)
        l = l + p.sum(dim=-1, keepdim=True)  # noqa: E741
        acc = acc + p @ v_chunk  # (..., L, d_v)
    return acc / l  # (..., L, d_v)
