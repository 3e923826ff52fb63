"""Exercise 7: a Transformer encoder layer (post-norm), built around your exercise 4.

Read exercises/ex07_transformer_encoder_layer/statement.en.md (or statement.zh.md) first.
Fill in the places marked TODO; keep the names and signatures as they are. Do not use
nn.TransformerEncoderLayer or nn.MultiheadAttention: the point is to build it yourself.
"""

import torch  # noqa: F401
import torch.nn as nn
from ex04_multi_head_attention import SimpleMultiHeadAttention  # noqa: F401  (your exercise 4)


class TransformerEncoderLayer(nn.Module):
    """x -> norm1(x + attention(x)) -> norm2(h + feed_forward(h)), with dropout on each branch."""

    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        # TODO: self.self_attn (your SimpleMultiHeadAttention), self.linear1, self.linear2,
        #       self.norm1, self.norm2, and the dropouts self.dropout, self.dropout1, self.dropout2.
        raise NotImplementedError("TransformerEncoderLayer.__init__")

    def forward(self, x):
        """x: (B, L, E) -> (B, L, E)."""
        # TODO: the attention sub-layer, then the feed-forward sub-layer, each with its residual,
        #       dropout and LayerNorm, in the order of the paper (post-norm).
        raise NotImplementedError("TransformerEncoderLayer.forward")
