"""Exercise 3: word order, permutation equivariance and sinusoidal positional encoding."""

import math

import torch


def make_order_batch(tokens):
    original = tokens
    reversed_ = torch.flip(tokens, dims=[0])
    shuffled = tokens[[0, 2, 1, 4, 3]]
    return torch.stack([original, reversed_, shuffled], dim=0)


def restore_order(outputs, order):
    inverse = torch.argsort(torch.tensor(order))
    return outputs[..., inverse, :]


# Without positions each token gets the same context vector whatever the order (it only moves).
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    pe = torch.zeros(seq_len, d_model)
    for pos in range(seq_len):
        for i in range((d_model + 1) // 2):
            angle = i / (10000 ** (2 * pos / d_model))
            pe[pos, 2 * i] = math.sin(angle)
            if 2 * i + 1 < d_model:
                pe[pos, 2 * i + 1] = math.cos(angle)
    return pe
