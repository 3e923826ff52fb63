"""Mutant: REVERSED = ORIGINAL sorted descending in place: ORIGINAL is reversed with it."""

import math

import torch

ORIGINAL = [0, 1, 2, 3, 4]  # A B C D E
REVERSED = ORIGINAL  # E D C B A
REVERSED.sort(reverse=True)
SHUFFLED = [0, 2, 1, 4, 3]  # A C B E D


def make_order_batch(tokens):
    """(5, E) token vectors A..E -> (3, 5, E): the original, reversed and shuffled orders."""
    samples = [tokens[order] for order in (ORIGINAL, REVERSED, SHUFFLED)]  # 3 × (5, E)
    return torch.stack(samples)  # (3, 5, E)


def restore_order(outputs, order):
    """Undo `x[..., order, :]` on outputs of shape (L, E) or (B, L, E); `order` is a list of ints."""
    inverse = torch.argsort(torch.as_tensor(order))  # (L,), inverse[order[k]] = k
    return outputs[..., inverse, :]  # (..., L, E)


# Without positions self-attention is permutation-equivariant: every token keeps its context
# vector, which only moves along with the token.
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d_model)), PE[pos, 2i+1] = cos(same); float32 (seq_len, d_model)."""
    position = torch.arange(seq_len, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angles = position * torch.exp(-two_i / d_model * math.log(10000.0))  # (L, ceil(d/2))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)  # (L, d)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # an odd d_model has one sine more than cosines
    return pe.float()  # (L, d)
