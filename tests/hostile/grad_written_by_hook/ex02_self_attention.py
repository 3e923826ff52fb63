"""H7 f3 (forging: a cut graph with `.grad` written by hand). The graph is cut; the `.grad`s look right.

The layer's returned context is a LEAF tensor (`requires_grad_()` on a detached result): nothing
flows back to x or to any parameter through the graph. But a hook on that leaf computes, on a
private shadow graph, the correct gradients and ASSIGNS them to `x.grad` and to each parameter's
`.grad` (and sdpa does the same for q, k, v). A checker that runs `backward()` and reads `.grad`
would see plausible gradients although the forward pass's graph is cut (exactly the
`no_gradient` diagnosis: "the autograd graph is cut").
Contained means: `sdpa_gradients` and `layer_gradients` earn 0 (titles "the graph is intact" false);
value checks may pass (values are correct).
"""

import math

import torch
import torch.nn as nn


def _attn(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    return w @ v, w


def _forged(inputs, fn):
    shadow = [t.detach().clone().requires_grad_(True) for t in inputs]
    with torch.enable_grad():
        c, w = fn(*shadow)
    out_c = c.detach().requires_grad_(True)
    out_w = w.detach().requires_grad_(True)

    def hook(g, out=c):
        grads = torch.autograd.grad(out, shadow, g, retain_graph=True, allow_unused=True)
        for real, gr in zip(inputs, grads):
            if isinstance(real, torch.Tensor) and real.requires_grad and gr is not None:
                real.grad = gr if real.grad is None else real.grad + gr
        return g

    out_c.register_hook(hook)
    return out_c, out_w


def scaled_dot_product_attention(q, k, v):
    return _forged([q, k, v], _attn)


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        params = list(self.parameters())

        def fn(x, *ps):
            wq, bq, wk, bk, wv, bv = ps
            return _attn(x @ wq.T + bq, x @ wk.T + bk, x @ wv.T + bv)

        return _forged([x, *params], fn)
