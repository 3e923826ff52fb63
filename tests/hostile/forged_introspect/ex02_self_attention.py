"""Hostile submission: finds the worker's own Worker object (through the closure of the import guard) and swaps its introspect handler for one that describes query, key and value nn.Linear layers the class never builds."""

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


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.embed_dim = embed_dim  # no layer at all: only the forged description has them

    def forward(self, x):
        raise NotImplementedError("SimpleSelfAttention.forward")
