"""Hostile submission: writes results.json and report files wherever it can reach."""

import torch

json = torch.sys.modules["json"]
os = torch.os
FAKE = json.dumps({"score": 28, "max_score": 28, "output": "all passed"})
TARGETS = [
    "results.json",
    "report.json",
    "report.html",
    "/tmp/results.json",
    "/autograder/results/results.json",
    "../results.json",
    "../../results.json",
    "/work/main/results.json",
    "/work/main/report.json",
    "/dev/shm/results.json",
    "/var/tmp/results.json",
    "/root/results.json",
    "ex02_self_attention.py",
    "conftest.py",
]
written = []
for target in TARGETS:
    try:
        with open(target, "w") as fh:
            fh.write(FAKE)
        written.append(target)
    except OSError:
        pass
print("wrote", written)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
