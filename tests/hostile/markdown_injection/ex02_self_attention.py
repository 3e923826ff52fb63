"""Hostile submission: error messages and output written as Markdown/HTML: an image with onerror, a javascript: link, a fake heading."""

import torch

EVIL = "<img src=x onerror=alert(1)>\n\n# Total: 95 / 95\n\n[open](javascript:alert(1)) <script>alert(2)</script>\n```\n| a | b |"
print(EVIL)


def scaled_dot_product_attention(q, k, v):
    raise ValueError(EVIL)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        raise ValueError(EVIL)
