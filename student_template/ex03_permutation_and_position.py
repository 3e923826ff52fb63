"""Exercise 3: word order, permutation equivariance and sinusoidal positional encoding.

Read exercises/ex03_permutation_and_position/statement.en.md (or statement.zh.md) first.
Fill in the places marked TODO; keep the names and signatures as they are.
"""

import math  # noqa: F401  (you will probably need it)

import torch


def make_order_batch(tokens):
    """Three orders of the same five tokens, as one batch.

    Args:
        tokens: (5, E), the vectors of tokens A, B, C, D, E (row 0 is A)
    Returns:
        (3, 5, E): sample 0 is A B C D E, sample 1 is E D C B A, sample 2 is A C B E D
    """
    # TODO
    raise NotImplementedError("make_order_batch")


def restore_order(outputs, order):
    """Put outputs computed on a permuted sequence back in the original token order.

    Args:
        outputs: (L, E) or (B, L, E), computed on the sequence x[..., order, :]
        order: a list of L ints; order[k] is the original index of the token now at position k
               (A C B E D is [0, 2, 1, 4, 3])
    Returns:
        the same shape as outputs, row j belonging to original token j
    """
    # TODO: works for any permutation, not only ones that are their own inverse.
    raise NotImplementedError("restore_order")


# TODO: without any positional information, does the order of the tokens change the context vector
# that each token gets from a self-attention layer? Answer True or False.
ORDER_CHANGES_CONTEXT = None


def sinusoidal_positional_encoding(seq_len, d_model):
    """The fixed sinusoidal table of the Transformer.

    PE[pos, 2i] = sin(pos / 10000^(2i / d_model)),  PE[pos, 2i+1] = cos(pos / 10000^(2i / d_model)),
    for pos = 0 .. seq_len-1. When d_model is odd, the last column is a sine.

    Returns:
        (seq_len, d_model) floating-point tensor that does not require a gradient
    """
    # TODO
    raise NotImplementedError("sinusoidal_positional_encoding")


if __name__ == "__main__":
    # See it for yourself with torch's own attention layer (no positional information in it).
    torch.manual_seed(0)
    tokens = torch.randn(5, 8)  # A..E
    batch = make_order_batch(tokens)  # (3, 5, 8)
    layer = torch.nn.MultiheadAttention(8, num_heads=1, batch_first=True)
    with torch.no_grad():
        context, _ = layer(batch, batch, batch)  # (3, 5, 8)
        for sample, order in enumerate([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 2, 1, 4, 3]]):
            same = torch.allclose(restore_order(context[sample], order), context[0], atol=1e-6)
            print(f"sample {sample}: restored context equals sample 0's: {same}")
        positioned = batch + sinusoidal_positional_encoding(5, 8)
        context, _ = layer(positioned, positioned, positioned)
        for sample, order in enumerate([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 2, 1, 4, 3]]):
            same = torch.allclose(restore_order(context[sample], order), context[0], atol=1e-6)
            print(f"with positions, sample {sample}: restored context equals sample 0's: {same}")
