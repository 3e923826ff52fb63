"""Hostile submission: opens file descriptors until none are left (pipes, sockets, files)."""

import torch

os = torch.os
socket = torch.sys.modules["socket"]
held = []
for _ in range(100000):
    try:
        held.extend(os.pipe())
    except OSError:
        break
for _ in range(100000):
    try:
        held.append(socket.socketpair())
    except OSError:
        break
print("descriptors held", len(held))


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
