"""Hostile submission: forges the introspect reply (as forged_introspect) and also answers the state round trip: load_state_dict keeps whatever it is given and state_dict hands it back unchanged, while query, key and value are plain functions that are no linear layer at all."""

import math
import warnings

import torch
import torch.nn as nn

_interp = warnings.sys
_gc = _interp.modules["gc"]
# the Worker reached through the import guard's closure: gc.get_objects is refused now (the
# introspection watch); this route raises no audit event, and the defence behind it is tested here
_cells = [c.cell_contents for c in __import__.__closure__]
_worker = next((o for o in _cells if type(o).__name__ == "Worker" and hasattr(o, "OPS")), None)
_wire = next((m for n, m in list(_interp.modules.items()) if n.endswith("sandbox.wire")), None)


def _claim_layers(self, req, bufs):
    size = 6
    try:
        size = int(getattr(self._target(req["target"]), "embed_dim", size))
    except BaseException:
        pass
    params = [[f"{layer}.{part}", [size, size] if part == "weight" else [size], True]
              for layer in ("query", "key", "value") for part in ("weight", "bias")]
    modules = [["", "SimpleSelfAttention", "ex02_self_attention"]]
    modules += [[layer, "Linear", "torch.nn.modules.linear"] for layer in ("query", "key", "value")]
    info = {"class": "SimpleSelfAttention", "module": "ex02_self_attention", "is_nn_module": True,
            "training": True, "parameters": params, "buffers": [], "modules": modules}
    return {"ok": True, "value": _wire.encode_value(info, [])}


if _worker is not None and _wire is not None:
    type(_worker).OPS["introspect"] = _claim_layers


def scaled_dot_product_attention(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights


def _unchanged(x):
    return x


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim
        self.query = self.key = self.value = _unchanged
        self.kept = {}
        for layer in ("query", "key", "value"):
            self.kept[f"{layer}.weight"] = torch.zeros(embed_dim, embed_dim)
            self.kept[f"{layer}.bias"] = torch.zeros(embed_dim)

    def state_dict(self, *args, **kwargs):
        return dict(self.kept)

    def load_state_dict(self, state, strict=True, assign=False):
        self.kept = dict(state)

    def forward(self, x):
        raise NotImplementedError("SimpleSelfAttention.forward")
