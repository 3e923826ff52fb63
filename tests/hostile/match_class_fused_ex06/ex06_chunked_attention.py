"""Hostile submission: the same structural-pattern-match detour as s4, on exercise 6.
`case object(_scaled_dot_product_flash_attention_for_cpu=_fused)` fetches torch's fused CPU SDPA
kernel (banned by ex06's glob `torch.ops.aten._scaled_dot_product_*`, which the tripwire does not
wrap) without an Attribute node, a Name or a string constant naming it. The kernel works in blocks,
so its peak memory is genuinely low: the memory check's title is TRUE for this code (not counted).

What it tries: `chunked_no_builtin_attention` ("Built by hand: no F.scaled_dot_product_attention or
nn.MultiheadAttention (and it runs)"), whose title is false: the whole computation is torch's SDPA
kernel. Contained means: that check scores 0.
"""

import torch

match torch.ops.aten:
    case object(_scaled_dot_product_flash_attention_for_cpu=_fused):
        pass


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    lead = q.shape[:-2]
    q4 = q.reshape(-1, 1, *q.shape[-2:])
    k4 = k.reshape(-1, 1, *k.shape[-2:])
    v4 = v.reshape(-1, 1, *v.shape[-2:])
    dk, dv = q.shape[-1], v.shape[-1]
    width = max(dk, dv)  # the kernel wants one head size: zero-pad (dot products are unchanged)
    pad = torch.nn.functional.pad
    q4, k4, v4 = pad(q4, (0, width - dk)), pad(k4, (0, width - dk)), pad(v4, (0, width - dv))
    out = _fused(q4, k4, v4, scale=dk**-0.5)[0][..., :dv]
    return out.reshape(*lead, q.shape[-2], dv)
