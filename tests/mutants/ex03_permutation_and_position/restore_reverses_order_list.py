"""Exercise 3: word order, permutation equivariance and sinusoidal positional encoding."""

import math

import torch


def make_order_batch(tokens):
    orders = [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 2, 1, 4, 3]]
    return torch.stack([tokens[o] for o in orders])


def restore_order(outputs, order):
    inverse = order[::-1]
    return outputs[..., inverse, :]


# Without positions each token gets the same context vector whatever the order (it only moves).
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / (10000 ** (i / d_model))
            pe[pos, i] = math.sin(angle)
            if i + 1 < d_model:
                pe[pos, i + 1] = math.cos(angle)
    return pe
