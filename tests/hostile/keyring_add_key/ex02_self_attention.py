"""Hostile submission: adds a key to the kernel user keyring (it outlived the worker: later students of the same uid read it)."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

serial = libc.syscall(248, b"user", b"agw-hostile-secret", b"answers", 7, ctypes.c_int(-4))
if serial > 0:
    print("LEAKED: add_key went through, key", serial)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
