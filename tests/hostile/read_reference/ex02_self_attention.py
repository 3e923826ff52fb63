"""Hostile submission: searches the file system for the hidden reference and runs it if found."""

import torch

os = torch.os
found = {}
GUESSES = [
    "/work/main/reference/ex02_self_attention.py",
    "../reference/ex02_self_attention.py",
    "../../reference/ex02_self_attention.py",
    "reference/ex02_self_attention.py",
    "/proc/self/cwd/../reference/ex02_self_attention.py",
    "/proc/1/cwd/reference/ex02_self_attention.py",
]
for path in GUESSES:
    try:
        with open(path) as fh:
            found[path] = fh.read()
    except OSError:
        pass
seen = 0
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr", "lib", "lib64", "var")]
    seen += 1
    if seen > 20000:
        break
    if "ex02_self_attention.py" in files and top.endswith("reference"):
        with open(os.path.join(top, "ex02_self_attention.py")) as fh:
            found[top] = fh.read()
for path, text in found.items():
    print("LEAKED", path, text[:300])
if found:
    namespace = {}
    exec(next(iter(found.values())), namespace)
    scaled_dot_product_attention = namespace["scaled_dot_product_attention"]
    SimpleSelfAttention = namespace["SimpleSelfAttention"]


if not found:

    def scaled_dot_product_attention(q, k, v):
        return torch.zeros(1), torch.zeros(1)

    class SimpleSelfAttention(torch.nn.Module):
        def __init__(self, embed_dim):
            super().__init__()

        def forward(self, x):
            return torch.zeros(1), torch.zeros(1)
