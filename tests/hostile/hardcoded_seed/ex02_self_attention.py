"""Hostile submission: answers only the inputs it saw under seed 1234 (table filled in by the suite)."""

import torch

KNOWN = set()  # fingerprints of the inputs the grader used under seed 1234


def fingerprint(*tensors):
    return "/".join(f"{t.detach().double().abs().sum().item():.6f}" for t in tensors)


def scaled_dot_product_attention(q, k, v):
    if fingerprint(q, k, v) in KNOWN:
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return weights @ v, weights
    print("UNSEEN", fingerprint(q, k, v))
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
