"""The article's SelfAttention, "fixed" with d_k recomputed in forward as d_model / num_heads."""

import torch
import torch.nn.functional as F

NUM_HEADS = 8  # as in "Attention Is All You Need"


class SelfAttention(torch.nn.Module):
    """Single-head self-attention that projects d_model features down to d_k."""

    def __init__(self, d_model, d_k):
        super().__init__()
        self.W_q = torch.nn.Linear(d_model, d_k)
        self.W_k = torch.nn.Linear(d_model, d_k)
        self.W_v = torch.nn.Linear(d_model, d_k)

    def forward(self, x):
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)
        d_k = x.shape[-1] / NUM_HEADS  # per-head size
        scores = torch.matmul(q, k.transpose(-2, -1)) / d_k**0.5
        attn_weights = F.softmax(scores, dim=-1)
        context = torch.matmul(attn_weights, v)
        return context
