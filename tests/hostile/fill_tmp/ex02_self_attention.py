"""Hostile submission: fills /tmp, /dev/shm and /var/tmp with 1 MiB files until something gives."""

import torch

os = torch.os
written = 0
for folder in ("/tmp", "/dev/shm", "/var/tmp", "."):
    for i in range(5000):
        try:
            with open(f"{folder}/fill-{i}.bin", "wb") as fh:
                fh.write(b"x" * ((1 << 20) - 4096))  # just under the file-size limit
            written += 1
        except OSError:
            break
print("files written", written)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
