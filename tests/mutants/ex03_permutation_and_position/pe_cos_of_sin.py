"""Mutant: the cosine taken of the column that already holds the sine."""

import math

import numpy as np
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
    pos = np.arange(seq_len)[:, np.newaxis]
    i = np.arange(d_model)[np.newaxis, :]
    angle_rads = pos / np.power(10000, (2 * (i // 2)) / np.float64(d_model))
    angle_rads[:, 0::2] = np.sin(angle_rads[:, 0::2])
    angle_rads[:, 1::2] = np.cos(angle_rads[:, 0::2][:, : d_model // 2])
    return torch.from_numpy(angle_rads).float()
