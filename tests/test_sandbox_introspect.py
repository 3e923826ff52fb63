"""Structure checks judge confirmed facts, not the worker's word (issue 9, unseen attack A04).

`expect.introspect` loads a random state of the grader's own into the parameters the worker claims
(strict `load_state_dict`), reads it back exactly, and calls each claimed 2-D `weight`'s submodule
on an input of its own: only then is a layer "linear". A correct layer whose forward is wrong or
unwritten keeps its layers; a class that only describes them, or echoes the state it is given, has
none. The module's own state is loaded back afterwards.
"""

from __future__ import annotations

import torch

from graders.harness.core import expect
from graders.harness.core.student import StudentSession

EX = "ex02_self_attention"

HONEST_NO_FORWARD = """import torch
import torch.nn as nn


class Layer(nn.Module):
    def __init__(self, embed, ff):
        super().__init__()
        self.query = nn.Linear(embed, embed)
        self.inner = nn.Sequential(nn.Linear(embed, ff), nn.ReLU(), nn.Linear(ff, embed, bias=False))
        self.norm = nn.LayerNorm(embed)
        self.register_buffer("mask", torch.ones(3, 3), persistent=False)

    def forward(self, x):
        raise NotImplementedError


def weights(layer):
    return layer.query.weight.detach().clone()
"""

ECHO = """import torch
import torch.nn as nn


def _same(x):
    return x


class Layer(nn.Module):
    def __init__(self, embed, ff):
        super().__init__()
        self.query = _same
        self.kept = {"query.weight": torch.zeros(embed, embed), "query.bias": torch.zeros(embed)}

    def state_dict(self, *args, **kwargs):
        return dict(self.kept)

    def load_state_dict(self, state, strict=True, assign=False):
        self.kept = dict(state)

    def forward(self, x):
        return x
"""

FORGED_CLAIM = """import warnings
import torch.nn as nn

_interp = warnings.sys
_wire = [m for n, m in list(_interp.modules.items()) if n.endswith("sandbox.wire")][0]
_encode = _wire.encode_value


def _claim(value, buffers, *rest):  # what the worker's introspection encodes, rewritten
    if type(value) is dict and "is_nn_module" in value:
        value = {"class": "Layer", "module": "x", "is_nn_module": True, "training": True,
                 "parameters": [["query.weight", [4, 4], True], ["query.bias", [4], True]], "buffers": [],
                 "modules": [["", "Layer", "x"], ["query", "Linear", "torch.nn.modules.linear"]]}
    return _encode(value, buffers, *rest)


_wire.encode_value = _claim


class Layer(nn.Module):
    def __init__(self, embed, ff):
        super().__init__()
"""


def introspect(pool, tmp_path, source: str):
    path = tmp_path / f"{EX}.py"
    path.write_text(source, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX, path, seed=1, call_seconds=10)
    try:
        student = session.module(EX)
        layer = student.Layer(4, 6)
        before = student.weights(layer) if source is HONEST_NO_FORWARD else None
        info = expect.introspect(layer)
        after = student.weights(layer) if source is HONEST_NO_FORWARD else None
    finally:
        session.close()
    return info, before, after


def test_real_layers_are_confirmed_even_when_forward_is_unwritten(pool, tmp_path):
    info, before, after = introspect(pool, tmp_path, HONEST_NO_FORWARD)
    assert info["linear"] == {"query": [4, 4, True], "inner.0": [6, 4, True], "inner.2": [4, 6, False]}
    params = {name: shape for name, shape, _ in info["parameters"]}
    assert params["norm.weight"] == [4] and params["norm.bias"] == [4] and params["query.weight"] == [4, 4]
    assert torch.equal(before, after), "the module's own state is loaded back"


def test_a_state_echo_with_no_layer_confirms_no_linear_layer(pool, tmp_path):
    info, _, _ = introspect(pool, tmp_path, ECHO)
    assert info["linear"] == {}


def test_a_forged_description_confirms_nothing(pool, tmp_path):
    info, _, _ = introspect(pool, tmp_path, FORGED_CLAIM)
    assert info["is_nn_module"] is True  # the claim is kept as a claim
    assert ["query", "Linear", "torch.nn.modules.linear"] in info["modules"]  # the forgery got through
    assert info["parameters"] == [] and info["linear"] == {}
