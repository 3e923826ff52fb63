"""Hostile submission: looks for a key an earlier student left in the user keyring."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

serial = libc.syscall(249, b"user", b"agw-hostile-secret", None, ctypes.c_int(-4))
if serial > 0:
    print("LEAKED: request_key found key", serial)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
