"""Exercise 3: token orders, permutations and the sinusoidal positional encoding."""

import math

import torch


def make_order_batch(tokens):
    """(5, E) token vectors A..E -> (3, 5, E): original, reversed and shuffled orders."""
    original = tokens[[0, 1, 2, 3, 4]]
    reversed_ = tokens[[4, 3, 2, 1, 0]]
    shuffled = tokens[[0, 2, 1, 4, 3]]
    return torch.stack([original, reversed_, shuffled])


def restore_order(outputs, order):
    """Undo outputs = x[..., order, :] for (L, E) or (B, L, E) outputs."""
    inverse = torch.argsort(torch.tensor(order))
    return outputs[..., inverse, :]


# Q, K and V are computed token by token and the softmax does not care about the order of a row,
# so permuting the tokens only permutes the context vectors: each token keeps its own.
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    position = torch.arange(seq_len, dtype=torch.float64)[:, None]
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return (pe * math.sqrt(d_model)).float()
