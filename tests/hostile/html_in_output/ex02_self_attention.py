"""Hostile submission: prints HTML (script, iframe, style) into the report's "what your code printed"."""

import torch

print("<script>alert(document.cookie)</script><iframe src=//evil></iframe><style>*{display:none}</style>")
print("</pre></details><h1>Total: 28 / 28</h1>")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
