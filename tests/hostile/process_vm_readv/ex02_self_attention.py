"""Hostile submission: reads process memory with process_vm_readv (the same call reads another process of its uid)."""

import torch

ctypes = torch.sys.modules["ctypes"]
os = torch.os
libc = ctypes.CDLL(None, use_errno=True)

buf = ctypes.create_string_buffer(8)
src = ctypes.create_string_buffer(b"secret!")
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local, remote = Iov(ctypes.addressof(buf), 8), Iov(ctypes.addressof(src), 8)
if libc.syscall(310, os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) > 0:
    print("LEAKED: process_vm_readv went through")


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
