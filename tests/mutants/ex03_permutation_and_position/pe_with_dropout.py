"""Exercise 3: word order, permutation equivariance and sinusoidal positional encoding."""

import math

import torch
import torch.nn.functional as F


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


def sinusoidal_positional_encoding(seq_len, d_model, dropout=0.1):
    pe = torch.zeros(seq_len, d_model)
    position = torch.arange(0, seq_len, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return F.dropout(pe, p=dropout)
