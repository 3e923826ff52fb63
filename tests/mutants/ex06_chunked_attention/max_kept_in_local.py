"""Mutant: the new maximum is kept in a name the next chunk never reads, so m stays -inf."""

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("chunk_size must be a positive int")
    d_k = q.size(-1)
    n_keys = k.size(-2)
    row_max = torch.full(q.shape[:-1] + (1,), -torch.inf)
    denom = torch.zeros(q.shape[:-1] + (1,))
    out = torch.zeros(q.shape[:-1] + (v.size(-1),))
    start = 0
    while start < n_keys:
        kb = k.narrow(-2, start, min(chunk_size, n_keys - start))
        vb = v.narrow(-2, start, min(chunk_size, n_keys - start))
        s = torch.matmul(q, kb.transpose(-1, -2)) / d_k**0.5
        best = torch.max(row_max, s.max(dim=-1, keepdim=True).values)
        shrink = torch.exp(row_max - best)
        w = torch.exp(s - best)
        denom = shrink * denom + w.sum(-1, keepdim=True)
        out = shrink * out + torch.matmul(w, vb)
        prev_max = best  # meant to be row_max = best
        start += chunk_size
    return out / denom
