"""Hostile submission: asks to be traced (ptrace), the first step to tracing other processes."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

if libc.syscall(101, 0, 0, 0, 0) == 0:
    print("LEAKED: ptrace(PTRACE_TRACEME) went through")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
