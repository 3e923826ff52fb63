"""Exercise 3: word order, permutation equivariance and sinusoidal positional encoding."""

import math

import torch


def make_order_batch(tokens):
    original = tokens
    reversed_ = torch.flip(tokens, dims=[0])
    shuffled = tokens[[0, 2, 1, 4, 3]]
    return torch.stack([original, reversed_, shuffled], dim=0)


def restore_order(outputs, order):
    # put the tokens back by flipping the sequence dimension
    return torch.flip(outputs, dims=[-2])


# Without positions each token gets the same context vector whatever the order (it only moves).
ORDER_CHANGES_CONTEXT = False


def sinusoidal_positional_encoding(seq_len, d_model):
    pe = torch.zeros(seq_len, d_model)
    position = torch.arange(0, seq_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe
