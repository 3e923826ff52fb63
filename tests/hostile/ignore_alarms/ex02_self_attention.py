"""Hostile submission: handlers that swallow SIGALRM, SIGVTALRM, SIGPROF and SIGXCPU, re-armed timers,
then a busy loop.
"""

import torch

signal = torch.sys.modules["signal"]


def swallow(signum, frame):
    signal.setitimer(signal.ITIMER_REAL, 0.05)  # keep a timer running so an alarm-based grader never fires


for sig in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU, signal.SIGTERM):
    signal.signal(sig, swallow)
signal.setitimer(signal.ITIMER_REAL, 0.05)


def scaled_dot_product_attention(q, k, v):
    while True:
        signal.alarm(0)


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
