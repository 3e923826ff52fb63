"""The run-time half of issue 9's hostile12 round, in a real worker: the tripwire alone must see
torch's attention and encoder layer, whatever route the static rule missed.

(O) A composite operator (`scaled_dot_product_attention`, its math path) was watched at the
AutogradCPU key only: a call that starts below it (real inference mode, torch's below-autograd
guard, an operator handle's `redispatch_boxed` with any key set) ran its decomposition unwatched.
(P) The handle is reached through `OpOverload._handle`, which is not wrapped. (G) Only `__init__` of
a banned class was wrapped: its methods could be borrowed without an instance. (Q) A class whose
methods were all `functools.partialmethod` objects was named by the module it said it was from.
The submissions here are loaded straight into a worker (the static rule is not run), and fetch
torch's original kernel out of the Python wrapper's closure, as a pickle did in the round.
"""

from __future__ import annotations

import functools
import types

import pytest
import torch
from test_hostile10_runtime import BANNED4, BANNED7, EX4, EX7, hits_of

from graders.harness.core.project import default_project
from graders.harness.sandbox.worker import _defined_in

PROJECT = default_project()
EX5 = "ex05_masked_and_cross_attention"
BANNED5 = PROJECT.load_manifest(EX5).banned

ORIGINAL = """import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def original(wrapper):
    for cell in wrapper.__closure__ or ():
        if type(cell.cell_contents).__name__ == "builtin_function_or_method":
            return cell.cell_contents
    raise AssertionError("no original in the wrapper")


KERNEL = original(F.scaled_dot_product_attention)
"""

ROUTES = {
    "real_inference_mode": """
def run(q):
    with torch._C._InferenceMode(True), sdpa_kernel(SDPBackend.MATH):
        out = KERNEL(q, q, q)
    return out.clone()
""",
    "enter_inference_mode": """
def run(q):
    guard = torch.autograd.grad_mode._enter_inference_mode(True)
    try:
        return KERNEL(q, q, q).clone()
    finally:
        torch.autograd.grad_mode._exit_inference_mode(guard)
""",
    "below_autograd": """
def run(q):
    with torch._C._AutoDispatchBelowAutograd(), sdpa_kernel(SDPBackend.MATH):
        return KERNEL(q, q, q)
""",
    "handle_redispatch_cpu": """
def run(q):
    handle = torch.ops.aten._scaled_dot_product_attention_math.default._handle
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
    return handle.redispatch_boxed(keys, q, q, q)[0]
""",
    "handle_redispatch_other_key": """
def run(q):
    handle = torch.ops.aten._scaled_dot_product_attention_math.default._handle
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.Meta)
    return handle.redispatch_boxed(keys, q, q, q)[0]
""",
}


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("exercise,banned", [(EX4, BANNED4), (EX5, BANNED5)], ids=["ex04", "ex05"])
def test_a_composite_attention_called_below_autograd_is_a_hit(pool, tmp_path, route, exercise, banned):
    """s2-s5: every key the decomposition runs from is watched (it is, at CompositeImplicitAutograd)."""
    source = ORIGINAL + ROUTES[route]
    hits = hits_of(tmp_path, pool, source, torch.randn(2, 5, 8), exercise=exercise, banned=banned)
    assert any("scaled_dot_product_attention" in h[0] for h in hits), hits


def test_the_watch_keeps_torchs_own_result_and_gradient(pool, tmp_path):
    """Watched in front of its decomposition, the operator still computes what torch computes."""
    source = """import torch.nn.functional as F


def run(q):
    return F.scaled_dot_product_attention(q, q, q)
"""
    from test_hostile10_runtime import session_with

    session, (student,) = session_with(tmp_path, pool, [(EX4, source, BANNED4)])
    try:
        q = torch.randn(2, 5, 8, dtype=torch.float64)
        got = student.run(q)
        assert torch.allclose(got, torch.nn.functional.scaled_dot_product_attention(q, q, q))
        assert student._tripwire(), "the call was not recorded"
    finally:
        session.close()


BORROWED_METHODS = """import torch
from torch import nn

LAYER = nn.TransformerEncoderLayer  # the class only: never built here


class Own(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1, self.linear2 = nn.Linear(8, 16), nn.Linear(16, 8)
        self.dropout, self.dropout2 = nn.Dropout(0.0), nn.Dropout(0.0)
        self.activation = torch.relu


def run(x):
    return LAYER._ff_block(Own(), x)
"""


def test_a_method_of_a_banned_class_borrowed_without_an_instance_is_a_hit(pool, tmp_path):
    """s1 (G): the class's methods are watched, not only its `__init__`."""
    hits = hits_of(tmp_path, pool, BORROWED_METHODS, torch.randn(2, 5, 8), exercise=EX7, banned=BANNED7)
    assert any("TransformerEncoderLayer" in h[0] for h in hits), hits


# ---------------------------------------------------------------- (Q) which module a class is from


def module_space(name: str, source: str, spaces: dict[int, str], **names) -> dict:
    space = {"__name__": name, "functools": functools, "torch": torch, **names}
    exec(compile(source, f"{name}.py", "exec"), space)
    spaces[id(space)] = name
    return space


EX4_SOURCE = """class SimpleMultiHeadAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x
"""


def test_a_class_is_named_by_the_module_its_methods_run_in_whatever_wraps_them():
    """f1, f2: partialmethod, partial, staticmethod, classmethod and property are seen through; a
    class that claims a student module none of its code runs in is no one's; a subclass with a
    method of another module's is named by both."""
    spaces: dict[int, str] = {}
    ex4 = module_space(EX4, EX4_SOURCE, spaces)
    claimed = module_space(
        EX7,
        f"""
def _init(self):
    torch.nn.Module.__init__(self)


def _forward(self, x):
    return x


class Claimed(torch.nn.Module):
    __module__ = "{EX4}"
    __init__ = functools.partialmethod(_init)
    forward = functools.partialmethod(_forward)


class Sub(Base):
    forward = functools.partialmethod(_forward)


class Inherits(Base):
    pass


class Borrowed(torch.nn.Module):
    __module__ = "{EX4}"
    forward = torch.nn.Identity.forward


class BorrowedUnloaded(torch.nn.Module):
    __module__ = "ex04_never_imported"
    forward = torch.nn.Identity.forward
""",
        spaces,
        Base=ex4["SimpleMultiHeadAttention"],
    )
    assert _defined_in(ex4["SimpleMultiHeadAttention"], spaces) == EX4
    assert _defined_in(claimed["Claimed"], spaces) == EX7
    assert _defined_in(claimed["Sub"], spaces) == EX7
    assert _defined_in(claimed["Inherits"], spaces) == EX4  # no code of its own: the parent's
    assert _defined_in(claimed["Borrowed"], spaces) == "?"
    assert _defined_in(claimed["BorrowedUnloaded"], spaces) == "?"
    assert _defined_in(torch.nn.Linear, spaces) == "torch.nn.modules.linear"
    mixed = types.new_class("Mixed", (torch.nn.Module,))
    mixed.forward = ex4["SimpleMultiHeadAttention"].forward
    mixed.extra = claimed["_forward"]
    assert _defined_in(mixed, spaces) == f"{EX4} + {EX7}"
    # hostile13 f1: exercise 7's code given exercise 4's module dict as its globals
    files = {id(ex4): f"{EX4}.py", id(claimed): f"{EX7}.py"}
    forged = types.new_class("Forged", (torch.nn.Module,))
    forged.forward = types.FunctionType(claimed["_forward"].__code__, ex4)
    assert _defined_in(forged, spaces, files) == "?"
    assert _defined_in(ex4["SimpleMultiHeadAttention"], spaces, files) == EX4
