"""Mutant (seen in a public tracker): `-log(10000) / d_model // 2` floors the rate exponent to -1 per step."""

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
    position = torch.arange(seq_len, dtype=torch.float32)[:, None]  # (L, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model // 2))
    pe = torch.zeros(seq_len, d_model)  # (L, d)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe
