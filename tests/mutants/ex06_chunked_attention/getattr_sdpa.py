"""Mutant: F.scaled_dot_product_attention reached by a computed name"""

import torch.nn.functional as F


def chunked_attention(q, k, v, chunk_size):
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError("chunk_size must be a positive integer")
    attend = getattr(F, "scaled_dot_" + "product_attention")
    return attend(q, k, v)
