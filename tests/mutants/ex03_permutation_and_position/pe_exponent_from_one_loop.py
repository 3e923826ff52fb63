"""Mutant: a loop over the (sin, cos) pairs whose exponent is (2i + 1)/d_model for every pair."""

import math

import torch

ORIGINAL = [0, 1, 2, 3, 4]  # A B C D E
REVERSED = [4, 3, 2, 1, 0]  # E D C B A
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
    pe = torch.zeros(seq_len, d_model)
    for pos in range(seq_len):
        for i in range((d_model + 1) // 2):
            freq = 1 / 10000 ** ((2 * i + 1) / d_model)
            pe[pos, 2 * i] = math.sin(pos * freq)
            if 2 * i + 1 < d_model:
                pe[pos, 2 * i + 1] = math.cos(pos * freq)
    return pe
