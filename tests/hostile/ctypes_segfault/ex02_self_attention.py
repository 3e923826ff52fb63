"""Hostile submission: dereferences NULL through ctypes in every call: a segmentation fault."""

import torch

ctypes = torch.sys.modules["ctypes"]


def scaled_dot_product_attention(q, k, v):
    ctypes.string_at(0)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        ctypes.memset(16, 0, 1 << 20)
