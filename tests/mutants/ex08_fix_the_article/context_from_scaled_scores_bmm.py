"""Mutant (holdout9): context_from_scaled_scores_bmm."""

import math

import torch
import torch.nn.functional as F


class SelfAttention(torch.nn.Module):
    """Single-head self-attention that projects d_model features down to d_k."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.d_k = d_k  # the projected dimension: the scale uses it
        self.W_q = torch.nn.Linear(d_model, d_k)
        self.W_k = torch.nn.Linear(d_model, d_k)
        self.W_v = torch.nn.Linear(d_model, d_k)

    def forward(self, x):
        # x: (B, L, d_model)
        q = self.W_q(x)  # (B, L, d_k)
        k = self.W_k(x)  # (B, L, d_k)
        v = self.W_v(x)  # (B, L, d_k)
        s = q @ k.mT * self.d_k**-0.5
        attn_weights = s.softmax(-1)  # noqa: F841
        context = torch.bmm(s, v)
        return context
