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
    l = torch.zeros((*lead, length, 1), dtype=q.dtype)  # (..., L, 1) running Σ exp  # noqa: E741
    acc = torch.zeros((*lead, length, v.shape[-1]), dtype=q.dtype)  # (..., L, d_v) running Σ exp·v
    k_chunks = k.view(*k.shape[:-2], keys // chunk_size, chunk_size, k.shape[-1])  # (..., n, c, d_k)
    v_chunks = v.view(*v.shape[:-2], keys // chunk_size, chunk_size, v.shape[-1])  # (..., n, c, d_v)
    for i in range(keys // chunk_size):
        k_chunk = k_chunks[..., i, :, :]  # (..., c, d_k)
        v_chunk = v_chunks[..., i, :, :]  # (..., c, d_v)
        scores = q @ k_chunk.transpose(-2, -1) * scale  # (..., L, c): the only L×c block
        m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (..., L, 1)
        correction = torch.exp(m - m_new)  # (..., L, 1); exp(−inf) = 0 on the first chunk
        p = torch.exp(scores - m_new)  # (..., L, c), every entry ≤ 1
        l = l * correction + p.sum(dim=-1, keepdim=True)  # noqa: E741
        acc = acc * correction + p @ v_chunk  # (..., L, d_v)
        m = m_new
    return acc / l  # (..., L, d_v)
