"""Mutant: the running statistics are returned with the context, in a list [context, m, l]."""

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size <= 0:
        raise ValueError("chunk_size must be a positive int")
    d_k = q.size(-1)
    n_keys = k.size(-2)
    row_max = torch.full(q.shape[:-1] + (1,), -float("inf"))
    row_sum = torch.zeros(q.shape[:-1] + (1,))
    out = torch.zeros(q.shape[:-1] + (v.size(-1),))
    for k_blk, v_blk in zip(k.split(chunk_size, dim=-2), v.split(chunk_size, dim=-2)):
        s = torch.matmul(q, k_blk.transpose(-1, -2)) / d_k**0.5
        new_max = torch.max(row_max, s.max(dim=-1, keepdim=True).values)
        alpha = torch.exp(row_max - new_max)
        e = torch.exp(s - new_max)
        row_sum = alpha * row_sum + e.sum(-1, keepdim=True)
        out = alpha * out + torch.matmul(e, v_blk)
        row_max = new_max
    assert n_keys > 0
    return [out / row_sum, row_max, row_sum]
