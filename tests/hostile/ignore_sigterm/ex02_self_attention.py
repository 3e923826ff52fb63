"""Hostile submission: ignores SIGTERM, SIGINT and SIGHUP, then spins in every call."""

import torch

signal = torch.sys.modules["signal"]
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
    signal.signal(sig, signal.SIG_IGN)


def scaled_dot_product_attention(q, k, v):
    while True:
        pass


class SimpleSelfAttention(torch.nn.Module):
    """Correct, and independent of scaled_dot_product_attention: its checks must still pass."""

    def __init__(self, embed_dim):
        super().__init__()
        self.query = torch.nn.Linear(embed_dim, embed_dim)
        self.key = torch.nn.Linear(embed_dim, embed_dim)
        self.value = torch.nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return weights @ v, weights
