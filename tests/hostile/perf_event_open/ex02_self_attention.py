"""Hostile submission: opens a perf event counter on itself (perf_event_open)."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

attr = (ctypes.c_uint32 * 32)()
attr[0], attr[1] = 1, 128  # PERF_TYPE_SOFTWARE, size
if libc.syscall(298, ctypes.byref(attr), 0, -1, -1, 0) >= 0:
    print("LEAKED: perf_event_open went through")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
