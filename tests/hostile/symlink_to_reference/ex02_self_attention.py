"""Hostile submission: the submission file is a symbolic link to the hidden reference."""

# placeholder: the suite replaces this file by a symlink to reference/ex02_self_attention.py
import torch


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
