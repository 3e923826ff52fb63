"""The built-by-hand rule against eval gadgets and torch's back doors (issue 9, the hostile9 round).

Statically, every way of turning a string into code or into a name is a detour: string annotations
that `typing.get_type_hints` evaluates (and `__annotations__`, `ForwardRef`, `_eval_type`),
TorchScript compiled from a source string (`torch.jit`), kernels registered or looked up by name
(`torch.library`, `torch.ops`), torch's tables of its own operators (`torch._decomp`), and every
private attribute of a torch namespace. No correct solution uses any of them.
"""

from __future__ import annotations

import keyword

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.harness.core.banned import static_findings
from graders.harness.core.project import default_project

PROJECT = default_project()
BANNED = PROJECT.load_manifest("ex04_multi_head_attention").banned
HEAD = "import math, typing\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def found(source: str) -> list[tuple[str, str]]:
    return [(f.kind, f.what) for f in static_findings(source.encode(), BANNED)]


GADGETS = [
    # typing evaluates a string annotation (hostile9 s2, s3, s5, s6, e1)
    ("def _f(x): pass\n_f.__annotations__ = {'x': 'lambda: ' + e}\n", "__annotations__"),
    ("h = typing.get_type_hints(_f, globalns=dict(F=F))\n", "get_type_hints"),
    ("from typing import get_type_hints\n", "get_type_hints"),
    ("r = typing.ForwardRef(text)\n", "ForwardRef"),
    ("v = typing._eval_type(r, {}, {})\n", "_eval_type"),
    ("class A:\n    x: 'lambda: F.relu'\n", "string annotation"),
    ("def g(x: '[c for c in F.__dict__]'): pass\n", "string annotation"),
    ("def g(x) -> '(lambda: 1)()': pass\n", "string annotation"),
    # TorchScript from a string (s4), kernels by name, operator tables (s1), private namespaces
    ("cu = torch.jit.CompilationUnit(src)\n", "torch.jit"),
    ("from torch.jit import CompilationUnit\n", "CompilationUnit"),
    ("f = torch.jit.script(g)\n", "torch.jit"),
    ("import torch.jit\n", "import torch.jit"),
    ("import torch._decomp as t\n", "import torch._decomp"),
    ("from torch._decomp import decomposition_table\n", "decomposition_table"),
    ("from torch import _decomp\n", "_decomp"),
    ("lib = torch.library.Library('aten', 'IMPL')\n", "torch.library"),
    ("op = torch.ops.aten.mm\n", "torch.ops"),
    ("f = torch._C._VariableFunctions.mm\n", "torch._C"),
    ("f = torch._ops.ops\n", "torch._ops"),
    ("f = torch.nn.functional._in_projection_packed\n", "_in_projection_packed"),
    ("f = F._canonical_mask\n", "F._canonical_mask"),
    ("g = torch.fx.symbolic_trace(m)\n", "torch.fx"),
    ("g = torch.compile(m)\n", "torch.compile"),
    ("t = torch.overrides.get_overridable_functions()\n", "torch.overrides"),
    # a module off the import allow-list held by an allowed one (the e1 class: the allow-list)
    ("o = torch.os\n", "torch.os"),
    ("c = torch.ctypes.CDLL(None)\n", "torch.ctypes"),
    ("from torch import os\n", "os"),
    ("import dataclasses\ni = dataclasses.inspect\n", "dataclasses.inspect"),
    ("m = F.importlib.import_module('os')\n", "F.importlib"),
]


@pytest.mark.parametrize("line, flagged", GADGETS)
def test_every_eval_gadget_and_private_door_is_a_finding(line, flagged):
    hits = found(HEAD + line)
    assert any(kind in ("dynamic", "indirect", "banned") and flagged in what for kind, what in hits), hits


@settings(max_examples=80, deadline=None)
@given(
    name=st.from_regex(r"_[a-z][a-z0-9_]{0,20}", fullmatch=True),
    root=st.sampled_from(["torch", "torch.nn", "F", "nn", "torch.linalg", "torch.nn.init"]),
)
def test_any_private_attribute_of_torch_is_a_finding(name, root):
    """`torch._scaled_dot_product_flash_attention_for_cpu`, `torch._C`, `F._in_projection`... a private
    name of any torch namespace, whatever it is called (generated)."""
    if keyword.iskeyword(name):
        return
    hits = found(HEAD + f"f = {root}.{name}\n")
    assert hits and all(kind in ("indirect", "banned") for kind, _ in hits), hits


@pytest.mark.parametrize(
    "line",
    [
        "def f(x: 'torch.Tensor', mask: 'torch.Tensor | None' = None) -> 'tuple[int, int]': pass\n",
        "class A:\n    x: 'list[int]'\n    y: int = 3\n",
        "v = torch.__version__\n",
        "h = typing.Optional[torch.Tensor]\n",
        "p = re_compile = 1\n",
        "w = self_like = torch.nn.init.xavier_uniform_\n",
    ],
)
def test_ordinary_annotations_and_names_are_no_finding(line):
    assert found(HEAD + line) == []


def test_no_reference_solution_is_flagged():
    checked = 0
    for ex in PROJECT.exercise_ids():
        banned = PROJECT.load_manifest(ex).banned
        path = PROJECT.reference_path(ex)
        if banned and path.exists():
            assert static_findings(path.read_bytes(), banned) == [], ex
            checked += 1
    assert checked >= 4
