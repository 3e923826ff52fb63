"""Mutant: each chunk's part from F.scaled_dot_product_attention, merged on the fly by log-sum-exp"""

import math

import torch
import torch.nn.functional as F


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    scale = 1 / math.sqrt(q.shape[-1])
    acc, logsum = None, None
    for start in range(0, k.shape[-2], chunk_size):
        k_chunk, v_chunk = k[..., start : start + chunk_size, :], v[..., start : start + chunk_size, :]
        part = F.scaled_dot_product_attention(q, k_chunk, v_chunk)
        part_logsum = torch.logsumexp(q @ k_chunk.transpose(-2, -1) * scale, dim=-1, keepdim=True)
        if acc is None:
            acc, logsum = part, part_logsum
            continue
        merged = torch.logaddexp(logsum, part_logsum)
        acc = acc * torch.exp(logsum - merged) + part * torch.exp(part_logsum - merged)
        logsum = merged
    return acc
