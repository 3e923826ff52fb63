"""The static half of the built-by-hand rule against hostile12's routes (issue 9). (M) A pickle in a
bytes literal, unpickled by the unpickler torch keeps as a module attribute, fetches anything by
name. (N) A private name of torch's read off something that is not a name (`[module][0]._x`) had no
root to judge. Each source below is cut down from the attack and passed without a finding before
the fix; the correct solutions' own private attributes stay allowed. (The run-time half, which sees
these routes' calls whatever the static half misses, is tests/test_hostile12_runtime.py.)
"""

from __future__ import annotations

import pytest

from graders.harness.core.banned import static_findings
from graders.harness.core.project import default_project

PROJECT = default_project()
EX4 = PROJECT.load_manifest("ex04_multi_head_attention").banned
HEAD = "import torch\nimport torch.nn as nn\n"


def kinds(source: str) -> set[str]:
    return {f.kind for f in static_findings((HEAD + source).encode(), EX4)}


@pytest.mark.parametrize(
    "source",
    [
        "BLOB = b'\\x80\\x02ctorch.nn.modules.transformer\\nTransformerEncoderLayer\\n.'\n",  # protocol 2
        "BLOB = b'ctorch\\nops\\n.'\n",  # protocol 0: a GLOBAL opcode
        "load = [torch.distributed.distributed_c10d][0]._unpickler\n",
        "u = getattr(torch, 'serialization')\n",
        "u = getattr(torch, 'jit')\n",
        "x = torch.load\n",
        "x = torch.serialization.io\n",
        "p = mod.Unpickler\n",
        "f = obj.find_class\n",
    ],
    ids=["pickle_protocol_2", "pickle_global_opcode", "unpickler_attr", "serialization_string", "jit_string",
         "torch_load",
         "serialization_module", "Unpickler", "find_class"],
)  # fmt: skip
def test_a_pickle_or_an_unpickler_is_a_finding(source):
    assert kinds(source) & {"dynamic", "indirect"}, source


@pytest.mark.parametrize(
    "source",
    [
        "g = [torch.autograd.grad_mode][0]._enter_inference_mode(True)\n",
        "g = (torch._C,)[0]\n",
        "g = {1: torch.autograd}[1]._x\n",
        "g = (lambda: torch.autograd.grad_mode)()._enter_inference_mode\n",
        "g = next(iter([torch.backends.cuda]))._private\n",
        "g = getattr(torch, '_C')\n",  # the string forms: what `torch._C`, `x._priv` would be
        "g = getattr([torch.autograd][0], '_x')\n",
    ],
)
def test_a_private_name_read_off_anything_but_a_name_is_a_finding(source):
    assert "indirect" in kinds(source), source


def test_the_modules_own_private_attributes_stay_allowed():
    source = """
class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self._scale = d**-0.5
        self.register_buffer("_mask", torch.ones(3, 3))
        setattr(self, "_cache", None)

    def _split(self, x):
        return x

    def forward(self, x):
        return self._split(x) * self._scale + self._mask.sum()


def run(layer, x):
    layer._reset = None
    return layer._split(x), layer._scale, layer._mask, layer._cache, layer._reset
"""
    assert kinds(source) == set()


def test_bytes_that_are_not_a_pickle_stay_allowed():
    assert kinds("MAGIC = b'attention weights'\nRAW = bytes(4)\n") == set()
