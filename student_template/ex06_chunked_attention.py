"""Exercise 6: attention over key chunks (an online softmax).

Read exercises/ex06_chunked_attention/statement.en.md (or statement.zh.md) first.
Fill in the places marked TODO; keep the name and signature as they are. Do not build the whole
(L, S) score matrix, and do not call F.scaled_dot_product_attention or nn.MultiheadAttention.
"""

import math  # noqa: F401  (you will probably need it)

import torch  # noqa: F401


def chunked_attention(q, k, v, chunk_size):
    """q: (..., L, d_k), k: (..., S, d_k), v: (..., S, d_v) -> context (..., L, d_v).

    The same result as softmax(q @ kᵀ / √d_k) @ v, computed chunk_size keys at a time, keeping for
    every query a running maximum, a running sum of exponentials and a running weighted sum of v.
    """
    # TODO: raise ValueError unless chunk_size is a positive integer;
    #       loop over the keys in chunks of chunk_size (the last chunk may be shorter);
    #       update the running maximum, rescale what was summed so far, add this chunk's part;
    #       return the running weighted sum divided by the running sum.
    raise NotImplementedError("chunked_attention")
