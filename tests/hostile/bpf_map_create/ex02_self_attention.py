"""Hostile submission: creates a BPF map (the kernel's eBPF attack surface)."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

attr = (ctypes.c_uint32 * 32)(1, 4, 4, 1)  # BPF_MAP_TYPE_HASH, key 4, value 4, 1 entry
if libc.syscall(321, 0, ctypes.byref(attr), 128) >= 0:
    print("LEAKED: bpf(BPF_MAP_CREATE) went through")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
