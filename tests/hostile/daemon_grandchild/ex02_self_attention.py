"""Hostile submission: a double-forked setsid daemon that keeps stdout open and writes forever."""

import torch

os = torch.os
time = torch.sys.modules["time"]

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:  # the grandchild: keeps fds 1 and 2 open, so a grader waiting for EOF waits forever
            try:
                os.write(1, b"daemon still here\n")
            except OSError:
                pass
            time.sleep(0.05)
    os._exit(0)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
