"""Hostile submission: the submission file is a hard link to the hidden reference (same inode)."""

# placeholder: the suite replaces this file by a hard link to a copy of reference/ex02_self_attention.py
import torch


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
