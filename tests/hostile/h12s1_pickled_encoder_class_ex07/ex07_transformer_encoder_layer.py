"""h12s1 (scoring / built by hand, ex07): nn.TransformerEncoderLayer's own forward, with the class
fetched by a pickle held in a bytes literal.

What it tries: the static rule reads names, attributes and *str* constants; a bytes constant is
never read. `pickle.Unpickler` (held by torch as `torch.distributed.distributed_c10d._unpickler`, read through a
subscript so the rule sees no torch base) on a pickle that is
`GLOBAL torch.nn.modules.transformer TransformerEncoderLayer` hands back the class object with no
banned name in the source (`torch.serialization.io.BytesIO` is not flagged either). The
run-time tripwire wraps only the class's __init__; the layer never builds one: it calls the class's
`forward` and `_ff_block` with itself (hostile11 G, reached by a new static route). So the residual
wiring, post-norm order, feed-forward block and dropouts are torch's encoder-layer code.

Contained means: `enc_built_by_hand` ("Built by hand: no nn.TransformerEncoderLayer or
nn.MultiheadAttention") earns 0; other checks may pass (the computation is right). Nothing left
behind.
"""

import torch
import torch.nn as nn
from ex04_multi_head_attention import SimpleMultiHeadAttention

_Unpickler = [torch.distributed.distributed_c10d][0]._unpickler  # pickle.Unpickler, kept by torch
_FRAME = b'\x80\x02ctorch.nn.modules.transformer\nTransformerEncoderLayer\n.'


def _load():
    return _Unpickler(torch.serialization.io.BytesIO(_FRAME)).load()


_layer_cls = _load()


class TransformerEncoderLayer(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward, dropout=0.1):
        super().__init__()
        self.self_attn = SimpleMultiHeadAttention(d_model, nhead)
        self.self_attn.batch_first = False  # torch's forward then takes its Python path
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = False
        self.activation_relu_or_gelu = 1
        self.activation = torch.relu

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        return self.dropout1(self.self_attn(x)[0])

    _ff_block = _layer_cls._ff_block  # torch's feed-forward block

    def forward(self, x):
        return _layer_cls.forward(self, x)  # torch's encoder layer: residuals, norms, order
