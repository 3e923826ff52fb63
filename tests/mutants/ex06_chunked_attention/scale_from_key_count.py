"""Mutant: the scores divided by the square root of the number of keys, read inside the loop."""

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("bad chunk_size")
    n_keys = k.shape[-2]
    m = torch.full(q.shape[:-1] + (1,), float("-inf"))
    l = torch.zeros(q.shape[:-1] + (1,))  # noqa: E741
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],))
    for i in range(0, n_keys, chunk_size):
        kc, vc = k[..., i : i + chunk_size, :], v[..., i : i + chunk_size, :]
        s = (q @ kc.mT) / n_keys**0.5
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        c = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = c * l + p.sum(-1, keepdim=True)  # noqa: E741
        acc = c * acc + p @ vc
        m = m_new
    return acc / l
