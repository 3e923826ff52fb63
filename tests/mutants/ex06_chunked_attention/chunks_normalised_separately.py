"""Mutant: a softmax inside each chunk, and the chunks' contexts averaged"""

import math

import torch


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    scale = 1 / math.sqrt(q.shape[-1])
    total, count = 0, 0
    for start in range(0, k.shape[-2], chunk_size):
        scores = q @ k[..., start : start + chunk_size, :].transpose(-2, -1) * scale
        weights = torch.softmax(scores, dim=-1)
        total = total + weights @ v[..., start : start + chunk_size, :]
        count += 1
    return total / count
