"""Hostile submission: a background thread writes junk frames to the reply channel (fd 3)."""

import torch

os = torch.os
threading = torch.sys.modules["threading"]
time = torch.sys.modules["time"]
struct = torch.sys.modules["struct"]


def spam():
    junk = [
        b"\xff" * 64,
        struct.pack(">I", 0xFFFFFFF0),
        struct.pack(">I", 5) + b"{nope",
        b"\x00\x00\x00\x02[]",
    ]
    i = 0
    while True:
        try:
            os.write(3, junk[i % len(junk)])
        except OSError:
            pass
        i += 1
        time.sleep(0.001)


threading.Thread(target=spam, daemon=True).start()


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
