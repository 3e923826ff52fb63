"""Mutant: a while loop whose state starts as the first chunk, but whose index starts at 0."""

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    scale = q.shape[-1] ** -0.5
    n = k.shape[-2]

    def block(i):
        s = torch.matmul(q, k[..., i : i + chunk_size, :].transpose(-1, -2)) * scale
        return s, v[..., i : i + chunk_size, :]

    s, vb = block(0)
    run_max = s.max(dim=-1, keepdim=True).values
    e = (s - run_max).exp()
    denom = e.sum(dim=-1, keepdim=True)
    numer = e @ vb
    i = 0
    while i < n:
        s, vb = block(i)
        new_max = torch.maximum(run_max, s.max(dim=-1, keepdim=True).values)
        c = (run_max - new_max).exp()
        e = (s - new_max).exp()
        denom = denom * c + e.sum(dim=-1, keepdim=True)
        numer = numer * c + e @ vb
        run_max = new_max
        i += chunk_size
    return numer / denom
