"""Hostile submission: os._exit(0) inside every call."""

import torch


def scaled_dot_product_attention(q, k, v):
    torch.os._exit(0)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        torch.os._exit(0)
