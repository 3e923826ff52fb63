"""Hostile submission: returns tensors far larger than any reply may be."""

import torch


def scaled_dot_product_attention(q, k, v):
    big = torch.zeros(20 << 20)  # 80 MiB of float32 per tensor, over the 64 MiB reply cap
    return big, big.clone()


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(70 << 20, dtype=torch.uint8), torch.zeros(1, dtype=torch.uint8)

    def state_dict(self, *args, **kwargs):
        return {"query.weight": torch.zeros(64 << 20)}
