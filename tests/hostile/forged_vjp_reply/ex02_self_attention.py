"""Hostile submission: a cut graph whose gradient reply is forged whole.

The forward pass returns tensors with no autograd graph at all (computed under `torch.no_grad()`,
then `requires_grad_()`: leaves). `torch.autograd.grad(output, q)` raises on this code, so the titles
of `sdpa_gradients` and `layer_gradients` ("... derivatives of your forward pass (the graph is
intact)") are false for it.

Since hostile7's f3 the worker computes gradients with `torch.autograd.grad` along the graph. This
attack does not touch that code: when the forward pass finds itself called from the worker's
`op_vjp` (a stack frame walk), it computes the true gradients on a private shadow graph, builds
the reply frame the worker would have built (right `seq`, outputs, input_grads, param_grads,
backward_ran) and sends it on the worker's own socket, then replaces the worker's `_sendall` so
that the worker's genuine reply (which would carry `backward_ran: false`) is swallowed.

Contained means: `sdpa_gradients` and `layer_gradients` score 0 (or the forged frame is refused as
a protocol error that costs only this student), nothing is left behind.
"""

import math

import torch
import torch.nn as nn

_sys = torch.sys
_wire = _sys.modules["graders.harness.sandbox.wire"] if "graders.harness.sandbox.wire" in _sys.modules else None


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


def _forge(frame, shadow_fn):
    """Answer the vjp request in `frame` ourselves; returns the detached outputs."""
    loc = frame.f_locals
    worker, req, args, cots, params = loc["self"], loc["req"], loc["args"], loc["cotangents"], loc["params"]
    grad_args = list(req["grad_args"])
    ins = [args[i] for i in grad_args]
    pvals = list(params.values())
    with torch.enable_grad():
        outs = shadow_fn()
        leaves = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        loss = sum((leaf * c.to(leaf.dtype)).sum() for leaf, c in zip(leaves, cots) if c is not None)
        targets = ins + pvals
        grads = torch.autograd.grad(loss, targets, allow_unused=True)
    detached = tuple(o.detach().requires_grad_() for o in leaves)
    value = {
        "outputs": detached if isinstance(outs, (tuple, list)) else detached[0],
        "input_grads": list(grads[: len(ins)]),
        "param_grads": dict(zip(params, grads[len(ins):])),
        "backward_ran": True,
    }
    bufs = []
    header = {"ok": True, "value": worker._encode(value, bufs), "seq": req.get("seq")}
    frame_bytes = worker._pack(header, bufs)
    real_send = worker._sendall
    real_send(frame_bytes)
    state = {"swallowed": False}

    def swallow_once(data):
        if not state["swallowed"]:
            state["swallowed"] = True
            worker._sendall = real_send
            return None
        return real_send(data)

    worker._sendall = swallow_once
    return value["outputs"]


def scaled_dot_product_attention(q, k, v):
    frame = _find("op_vjp")
    if frame is not None:
        qa, ka, va = q, k, v
        return _forge(frame, lambda: _honest_sdpa(qa, ka, va))
    with torch.no_grad():
        c, w = _honest_sdpa(q, k, v)
    return c.requires_grad_(), w.requires_grad_()


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def _shadow(self, x):
        return _honest_sdpa(self.query(x), self.key(x), self.value(x))

    def forward(self, x):
        frame = _find("op_vjp")
        if frame is not None:
            return _forge(frame, lambda: self._shadow(x))
        with torch.no_grad():
            c, w = self._shadow(x)
        return c.requires_grad_(), w.requires_grad_()
