"""Hostile submission: lifts the worker's own 2000-character error cap and raises 3-million-character errors."""

import torch

worker = torch.sys.modules.get("sandbox.worker")
if worker is not None:
    worker.MAX_MESSAGE_CHARS = 10**9


def scaled_dot_product_attention(q, k, v):
    raise ValueError("A" * 3_000_000)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise ValueError("B" * 3_000_000)
