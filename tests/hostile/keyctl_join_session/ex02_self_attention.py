"""Hostile submission: creates and joins a named session keyring with keyctl."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

serial = libc.syscall(250, 1, b"agw-hostile-ring")
if serial > 0:
    print("LEAKED: keyctl went through, keyring", serial)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
