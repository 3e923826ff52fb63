"""Hostile submission: a cut graph (outputs computed under no_grad, then made leaves) that replaces torch.autograd.grad, so that the worker's own backward pass returns gradients computed on a shadow graph: no frame, no gc, only a torch function patched."""

import math

import torch
import torch.nn as nn

_real_grad = torch.autograd.grad
_shadow = {}  # id(output leaf) -> (shadow output, its inputs)


def _patched_grad(outputs, inputs, *args, **kwargs):
    found = list(_shadow.values())
    cots = _real_grad(outputs, [leaf for leaf, _, _ in found], allow_unused=True, retain_graph=True) if found else []
    mine = [(entry, c) for entry, c in zip(found, cots) if c is not None]
    if not mine:  # not one of our cut outputs: the real thing
        return _real_grad(outputs, inputs, *args, **kwargs)
    loss = sum((real * c).sum() for (_, real, _), c in mine)
    grads = []
    for t in inputs:
        src = next((srcs[id(t)] for (_, _, srcs), _ in mine if id(t) in srcs), None)
        grads.append(None if src is None else _real_grad(loss, src, retain_graph=True, allow_unused=True)[0])
    return tuple(grads)


torch.autograd.grad = _patched_grad


def _sdpa(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


def scaled_dot_product_attention(q, k, v):
    with torch.enable_grad():
        qs, ks, vs = (t.detach().requires_grad_() for t in (q, k, v))
        c, w = _sdpa(qs, ks, vs)
    leaves = []
    for real in (c, w):
        leaf = real.detach().requires_grad_()
        _shadow[id(leaf)] = (leaf, real, {id(q): qs, id(k): ks, id(v): vs})
        leaves.append(leaf)
    return tuple(leaves)


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        return _sdpa(q, k, v)
