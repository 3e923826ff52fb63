"""The static half of the built-by-hand rule against hostile11's routes (issue 9).

Each route let a call below the tripwire's dispatcher keys through because the static half was
evaded first: a module that rebinds `__name__` runs its `if __name__ == "__main__":` block on import
(s2, s5, s6); a method called through its class with torch as its first argument reads torch's
attributes as `self.…` (s1, s4); `self` rebound by an import alias or a match capture (s3). Each
source below is cut down from the attack and was passed without a finding before the fix. The
correct solutions' idioms (a demo block, a method named like a banned function) stay allowed.
"""

from __future__ import annotations

import pytest

from graders.harness.core.banned import static_findings
from graders.harness.core.project import default_project

PROJECT = default_project()
EX4 = PROJECT.load_manifest("ex04_multi_head_attention").banned
EX7 = PROJECT.load_manifest("ex07_transformer_encoder_layer").banned
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def found(source: str, banned=EX4) -> list[tuple[str, str]]:
    return [(f.kind, f.what) for f in static_findings(source.encode(), banned)]


DEMO = 'if __name__ == "__main__":\n    print(F.scaled_dot_product_attention(q, k, v))\n'


def test_a_demo_block_stays_allowed():
    assert found(HEAD + DEMO) == []


@pytest.mark.parametrize(
    "rebind",
    [
        '__name__ = "__main__"',  # s2
        '__name__ += ""',
        '__name__: str = "__main__"',
        'for __name__ in ("__main__",):\n    pass',  # s5
        '(__name__ := "__main__")',  # s6 (a notebook cell)
        "with open('x') as __name__:\n    pass",
        "try:\n    pass\nexcept Exception as __name__:\n    pass",
        "import os as __name__",
        "from os import sep as __name__",
        "def f(__name__):\n    pass",
        "def f():\n    global __name__\n    __name__ = 1",
        "match 1:\n    case __name__:\n        pass",
        "match [1]:\n    case [*__name__]:\n        pass",
        "match {}:\n    case {**__name__}:\n        pass",
        "del __name__",
        "x = [0 for __name__ in ()]",
    ],
)
def test_a_module_that_binds_name_has_no_demo_block(rebind):
    assert ("banned", "F.scaled_dot_product_attention") in found(HEAD + rebind + "\n" + DEMO)


def test_s2_rebound_name_then_decompose():
    source = HEAD + (
        "_real = __name__\n"
        '__name__ = "__main__"\n'
        'if __name__ == "__main__":\n'
        "    _kernel = torch.ops.aten._scaled_dot_product_attention_math.default.decompose\n"
        "    __name__ = _real\n"
    )
    assert ("banned", "torch.ops.aten._scaled_dot_product_attention_math") in found(source)


def test_s5_for_loop_name_then_guard_below_autograd():
    source = HEAD + (
        'for __name__ in ("__main__",):\n    pass\n'
        'if __name__ == "__main__":\n'
        "    _guard = torch._C._AutoDispatchBelowADInplaceOrView\n"
        "    _fused = torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu\n"
    )
    kinds = found(source)
    assert ("indirect", "torch._C._AutoDispatchBelowADInplaceOrView") in kinds
    assert ("banned", "torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu") in kinds


def test_s6_walrus_in_one_cell_then_op_dk_in_the_next():
    source = HEAD + (
        '(__name__ := "__main__")\n'
        'if __name__ == "__main__":\n'
        "    _math = torch.ops.aten._scaled_dot_product_attention_math.default\n"
        "    _op, _key = _math._op_dk, torch._C.DispatchKey.CompositeImplicitAutograd\n"
    )
    kinds = found(source)
    assert ("banned", "torch.ops.aten._scaled_dot_product_attention_math") in kinds
    assert ("indirect", "_math._op_dk") in kinds


S1 = HEAD + (
    "class _Hop:\n"
    "    def ops(self):\n        return self.ops\n"
    "    def aten(self):\n        return self.aten\n"
    "    def kernel(self):\n        return self._scaled_dot_product_attention_math\n"
    "    def default(self):\n        return self.default\n"
    "def _attention(q, k, v):\n"
    "    packet = _Hop.kernel(_Hop.aten(_Hop.ops(torch)))\n"
    "    return _Hop.default(packet).decompose(q, k, v)\n"
)


def test_s1_torch_passed_as_self():
    kinds = found(S1)
    assert ("banned", "self._scaled_dot_product_attention_math") in kinds
    assert ("indirect", "_Hop.default(packet).decompose") in kinds


@pytest.mark.parametrize(
    "call",
    [
        "_Hop.kernel(torch.ops.aten)",
        "_Hop.kernel(self=torch.ops.aten)",
        "H = _Hop\nH.kernel(torch.ops.aten)",
        "f = _Hop.kernel\nf(torch.ops.aten)",
        "type(_Hop()).kernel(torch.ops.aten)",
        "_Hop().__class__.kernel(torch.ops.aten)",
    ],
)
def test_a_method_called_through_its_class_is_not_own(call):
    """`self.sys` is the student's own attribute in a method (never flagged there), but a detour
    (`warnings.sys`) once the caller picks `self`."""
    method = "class _Hop:\n    def kernel(self):\n        return self.sys\n"
    assert ("indirect", "self.sys") in found(HEAD + method + call + "\n")
    assert found(HEAD + method + "_Hop().kernel()\nclass B(_Hop):\n    pass\n") == []


def test_s3_self_rebound_by_import_alias_and_match_capture():
    source = HEAD + (
        "class _K:\n"
        "    def keys(self):\n"
        "        import torch as self\n"
        "        return self._C.DispatchKeySet(self._C.DispatchKey.CPU)\n"
        "    def fused(self, aten):\n"
        "        match aten:\n"
        "            case self:\n"
        "                return self.flash_for_cpu.default\n"
        "kernel = _K().fused(torch.ops.aten)\n"
        "out = kernel.redispatch(_K().keys(), q, k, v)\n"
    )
    kinds = found(source, [*EX4, "torch.ops.aten.flash_for_cpu"])
    assert ("indirect", "self._C") in kinds
    assert ("banned", "self.flash_for_cpu") in kinds
    assert ("indirect", "kernel.redispatch") in kinds


@pytest.mark.parametrize(
    "rebind",
    [
        "import torch as self",
        "from torch import ops as self",
        "self = torch",
        "for self in (torch,):\n            pass",
        "with torch.no_grad() as self:\n            pass",
        "try:\n            pass\n        except Exception as self:\n            pass",
        "(self := torch)",
        "[0 for self in (torch,)]",
        "f = lambda self=torch: self",
        "def inner(self=torch):\n            pass",
        "match torch:\n            case self:\n                pass",
        "match [torch]:\n            case [*self]:\n                pass",
        "match {}:\n            case {**self}:\n                pass",
        "del self",
    ],
)
def test_every_binding_form_of_self_ends_the_exemption(rebind):
    source = (
        HEAD
        + "class M(nn.Module):\n    def forward(self, x):\n"
        + f"        {rebind}\n        return self.aliased(x)\n"
    )
    banned = [*EX4, "torch.aliased"]
    assert ("banned", "self.aliased") in found(source, banned)
    plain = HEAD + "class M(nn.Module):\n    def forward(self, x):\n        return self.aliased(x)\n"
    assert ("banned", "self.aliased") in found(plain, banned)  # not defined by the module: it counts
    own = plain + "    def aliased(self, x):\n        return x\n"
    assert found(own, banned) == []  # the student's own method of that name


@pytest.mark.parametrize(
    "what",
    [
        "x.decompose",
        "x.redispatch",
        "x._op_dk",
        "x._AutoDispatchBelowADInplaceOrView",
        "x._VariableFunctions",
        "x._C",
    ],
)
def test_kernel_doors_count_whatever_the_base(what):
    source = (
        HEAD
        + "class M(nn.Module):\n    def forward(self, x):\n"
        + f"        return {what}, self.{what[2:]}\n"
    )
    kinds = found(source)
    assert ("indirect", what) in kinds and ("indirect", f"self.{what[2:]}") in kinds
    own = source + f"    def {what[2:]}(self):\n        return 1\n"  # the student's own method of that name
    assert found(own) == []


def test_ops_aten_chain_whatever_the_base():
    assert ("indirect", "t.ops.aten") in found(HEAD + "t = make()\nx = t.ops.aten\n")
    assert found(HEAD + "t = make()\nx = t.ops\n") == []


def test_s4_a_banned_class_borrowed_through_a_method_called_with_nn():
    source = HEAD + (
        "class _Hop:\n"
        "    def layer_class(self):\n        return self.TransformerEncoderLayer\n"
        "_torch_layer = _Hop.layer_class(nn)\n"
        "class TransformerEncoderLayer(nn.Module):\n"
        "    _ff_block = _torch_layer._ff_block\n"
        "    def forward(self, x):\n        return _torch_layer.forward(self, x)\n"
    )
    assert ("banned", "self.TransformerEncoderLayer") in found(source, EX7)


@pytest.mark.parametrize(
    "method, use",
    [
        ("    @staticmethod\n    def kernel(self):\n        return self.sys\n", "_Hop().kernel(warnings)"),
        (
            "    @swap\n    def kernel(self):\n        return self.sys\n",
            "def swap(f):\n    return lambda *a: f(warnings)\n",
        ),
        ("    def kernel(self):\n        return self.sys\n    k = functools.partial(kernel, warnings)\n", ""),
    ],
)
def test_a_method_whose_first_argument_someone_else_picks_is_not_own(method, use):
    source = HEAD + "import functools, warnings\nclass _Hop:\n" + method + use + "\n"
    assert ("indirect", "self.sys") in found(source)


@pytest.mark.parametrize(
    "use",
    [
        "[_Hop][0].kernel(warnings)",
        "getattr(_Hop, 'kernel')(warnings)",
        "(lambda: _Hop)().kernel(warnings)",
        "def relay(self):\n    return self.kernel(warnings)\nrelay(_Hop)",
    ],
)
def test_a_method_read_off_anything_but_its_own_self_is_not_own(use):
    source = (
        HEAD + "import warnings\nclass _Hop:\n    def kernel(self):\n        return self.sys\n" + use + "\n"
    )
    assert ("indirect", "self.sys") in found(source)


def test_a_method_that_is_not_own_passes_its_self_on():
    source = HEAD + (
        "import warnings\nclass _Hop:\n"
        "    def relay(self):\n        return self.kernel(warnings)\n"
        "    def kernel(self):\n        return self.sys\n"
        "_Hop.relay(_Hop)\n"
    )
    assert ("indirect", "self.sys") in found(source)
    assert (
        found(source.replace("_Hop.relay(_Hop)", "_Hop().relay()").replace("self.kernel(warnings)", "1"))
        == []
    )
