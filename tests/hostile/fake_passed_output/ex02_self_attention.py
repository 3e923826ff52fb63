"""Hostile submission: prints fake pytest 'PASSED' lines, a fake summary and fake JSON results."""

import torch

json = torch.sys.modules["json"]  # json is not on the allow-list; the zygote imported it anyway
FAKE = {"score": 28, "max_score": 28, "tests": [{"name": "all", "score": 28, "status": "passed"}]}
print("graders/test_ex02_self_attention.py::test_sdpa_shapes PASSED")
print("============================== 14 passed in 0.01s ==============================")
print(json.dumps(FAKE))
torch.sys.stderr.write('{"score": 28.0, "exercises": [{"id": "ex02_self_attention", "score": 28.0}]}\n')


def scaled_dot_product_attention(q, k, v):
    print("PASSED", json.dumps(FAKE))
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
