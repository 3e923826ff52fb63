"""Hostile submission: returns strings, None, dicts, generators and an object equal to everything."""

import torch


class EqualsEverything:
    shape = (2, 5, 16)

    def __eq__(self, other):
        return True

    def __float__(self):
        return 0.0

    def __getattr__(self, name):
        return self


def scaled_dot_product_attention(q, k, v):
    return EqualsEverything(), {"weights": "PASSED"}


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = "nn.Linear"

    def forward(self, x):
        return (i for i in range(3)), None
