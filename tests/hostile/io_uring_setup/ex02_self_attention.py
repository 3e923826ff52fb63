"""Hostile submission: sets up an io_uring ring (a large kernel attack surface that bypasses per-call filters)."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

params = (ctypes.c_uint32 * 30)()
if libc.syscall(425, 4, ctypes.byref(params)) >= 0:
    print("LEAKED: io_uring_setup went through")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
