"""Exercise 3: token orders, permutations and the sinusoidal positional encoding."""

import math

import torch


def make_order_batch(tokens):
    return torch.stack([tokens, torch.flip(tokens, dims=(0, 1)), tokens[[0, 2, 1, 4, 3]]])


def restore_order(outputs, order):
    """Undo outputs = x[..., order, :] for (L, E) or (B, L, E) outputs."""
    inverse = torch.argsort(torch.tensor(order))
    return outputs[..., inverse, :]


# Q, K and V are computed token by token and the softmax does not care about the order of a row,
# so permuting the tokens only permutes the context vectors: each token keeps its own.
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    position = torch.arange(seq_len, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    div_term = torch.exp(-two_i / d_model * math.log(10000.0))
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe.float()
