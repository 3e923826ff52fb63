"""Mutant: the number of chunks is worked out from q's length (q.size(-2)) instead of k's."""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    d_k = q.size(-1)
    n_chunks = math.ceil(q.size(-2) / chunk_size)
    run_max = torch.full(q.shape[:-1] + (1,), -math.inf)
    denom = torch.zeros(q.shape[:-1] + (1,))
    numer = torch.zeros(q.shape[:-1] + (v.size(-1),))
    for c in range(n_chunks):
        keys = k[..., c * chunk_size : (c + 1) * chunk_size, :]
        vals = v[..., c * chunk_size : (c + 1) * chunk_size, :]
        s = torch.matmul(q, keys.transpose(-1, -2)) / math.sqrt(d_k)
        new_max = torch.max(run_max, s.max(dim=-1, keepdim=True).values)
        p = torch.exp(s - new_max)
        shrink = torch.exp(run_max - new_max)
        denom = denom * shrink + p.sum(-1, keepdim=True)
        numer = numer * shrink + torch.matmul(p, vals)
        run_max = new_max
    return numer / denom
