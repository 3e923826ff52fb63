"""The run-time half of issue 9's hostile9 round, in a real worker: what reaches the tripwire and the
gradient computation from inside the submission's process, and what the trusted side accepts.

s1/s4: a banned operator under another of torch's names, or as an OpOverload out of another table,
is still a hit. s3/s5: nothing the wrappers or the import guard close over leads to the Worker or to
state that turns the tripwire off. s6: a tripwire frame the submission wrote is its protocol error,
and no flood displaces a real hit. f1/f2: the gradient request is answered by code bound before the
submission ran, and a replaced piece of the worker's own code is named. f3: a tensor class of the
submission's own that overrides torch's functions is refused. e1: code compiled from a string (an
eval gadget with globals of its own) is held to the import allow-list.
"""

from __future__ import annotations

import pytest
import torch

from graders.harness.core import expect
from graders.harness.core.errors import StudentCodeError, StudentCrash
from graders.harness.core.project import default_project
from graders.harness.core.student import StudentSession

PROJECT = default_project()
EX2, EX4 = "ex02_self_attention", "ex04_multi_head_attention"
BANNED = PROJECT.load_manifest(EX4).banned

# the worker's socket, by whichever closure holds it (main: the Worker behind the import guard)
SOCKET = """import torch.nn.functional as F


def _socket():
    for fn in (__import__, F.scaled_dot_product_attention):
        for cell in fn.__closure__ or ():
            v = cell.cell_contents
            if type(v).__name__ == "Worker":
                return v._sendall, v._pack
            if getattr(v, "__name__", "") == "record":
                if getattr(v, "__self__", None) is not None:  # main: a bound method of the Tripwire
                    w = v.__self__.owner_of.__self__
                    return w._sendall, w._pack
                inner = {getattr(c.cell_contents, "__name__", ""): c.cell_contents for c in v.__closure__}
                return inner["sendall"], inner["pack_frame"]
    raise LookupError("no socket")
"""


def session_with(tmp_path, pool, exercise, source, banned):
    path = tmp_path / f"{exercise}.py"
    path.write_text(source, encoding="utf-8")
    session = StudentSession(pool)
    session.add(exercise, path, seed=1, call_seconds=20, banned=banned)
    return session, session.module(exercise)


@pytest.mark.parametrize(
    "call",
    [
        "torch._scaled_dot_product_flash_attention_for_cpu(q, q, q)[0]",
        "_OP(q, q, q)[0]",
        "torch.ops.aten.scaled_dot_product_attention.default(q, q, q)",
        "torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu(q, q, q)[0]",
        "_ORIGINAL(q, q, q)",
        "_ORIGINAL(q[0], q[0], q[0])",
        "_in_inference_mode(lambda: _ORIGINAL(q, q, q))",
    ],
)
def test_a_banned_operator_under_any_of_its_names_is_a_hit(pool, tmp_path, call):
    """s1, s2, s4: the kernel under its top-level alias and in the C++ function table (which no
    Python wrapper can replace), an OpOverload taken out of torch._decomp's table (built before the
    tripwire), the aten packet of a banned function, the original function read out of the
    wrapper's closure (also under inference mode): each reaches the dispatcher, where the tripwire
    watches the operator itself. (TorchScript compiled from a string cannot even compile here: the
    compiler meets the Python wrappers, and its own import of `inspect` is refused.)"""
    source = f"""import torch
import torch._decomp as tables
import torch.nn.functional as F

_OP = [k for k in tables.decomposition_table if "flash_attention_for_cpu" in str(k)][0]
_CELLS = [c.cell_contents for c in F.scaled_dot_product_attention.__closure__]
_ORIGINAL = [v for v in _CELLS if type(v).__name__ == "builtin_function_or_method"][0]


def _in_inference_mode(f):
    with torch.inference_mode():
        return f()


def run(q):
    return {call}
"""
    line = source.splitlines().index("def run(q):") + 2
    session, student = session_with(tmp_path, pool, EX4, source, BANNED)
    try:
        student.run(torch.randn(1, 2, 3, 4))
        hits = student._tripwire()
    finally:
        session.close()
    assert hits and all(h[1] == line for h in hits), hits


WALK = """import torch.nn as nn
import torch.nn.functional as F


def reachable():
    todo = [__import__, F.scaled_dot_product_attention, nn.MultiheadAttention.__init__]
    seen, found = set(), set()
    while todo:
        v = todo.pop()
        if id(v) in seen or len(seen) > 5000:
            continue
        seen.add(id(v))
        found.add(type(v).__name__)
        todo += [c.cell_contents for c in getattr(v, "__closure__", None) or ()]
        bound = type(v).__name__ in ("method", "builtin_function_or_method")
        if bound and getattr(v, "__self__", None) is not None:
            todo.append(v.__self__)
        if type(v).__name__ in ("Tripwire", "Worker"):
            todo += list(vars(v).values())
        if type(v).__name__ == "partial":
            todo += [v.func, *v.args]
    return sorted(found)
"""


def test_nothing_the_wrappers_or_the_import_guard_hold_leads_to_the_worker(pool, tmp_path):
    """s3, s5, f1, f2: the Worker (its `_grad`, its ops) and the Tripwire's state (`notify`, `sent`)
    were reached through the import guard's closure and the wrapper's `record.__self__`."""
    session, student = session_with(tmp_path, pool, EX4, WALK, BANNED)
    try:
        found = set(student.reachable())
    finally:
        session.close()
    assert not {"Worker", "Tripwire"} & found, found


def test_a_forged_tripwire_flood_is_the_submissions_protocol_error(pool, tmp_path):
    """s6: 100 junk tripwire frames used to fill the trusted side's record before the real hit."""
    source = (
        SOCKET
        + """
import torch


def run(q):
    send, pack = _socket()
    for i in range(100):
        send(pack({"event": "tripwire", "module": None, "what": f"junk_{i}", "line": 1}))
    return F.scaled_dot_product_attention(q, q, q)
"""
    )
    session, student = session_with(tmp_path, pool, EX4, source, BANNED)
    try:
        with pytest.raises(StudentCrash, match="does not watch"):
            student.run(torch.randn(1, 2, 3, 4))
    finally:
        session.close()


def test_repeated_banned_calls_keep_one_hit_each_and_a_later_one_is_not_lost(pool, tmp_path):
    """The worker sends every call; the trusted side keeps the first of each (module, entry)."""
    source = """import torch
import torch.nn.functional as F


def run(q):
    for _ in range(300):
        q = torch.softmax(q, -1)
        F.scaled_dot_product_attention(q, q, q)
    return torch.nn.functional.multi_head_attention_forward
"""
    session, student = session_with(tmp_path, pool, EX4, source, BANNED)
    try:
        student.run(torch.randn(1, 2, 3, 4))
        hits = student._tripwire()
    finally:
        session.close()
    assert [h[0] for h in hits].count("torch.nn.functional.scaled_dot_product_attention") == 1, hits


def test_code_compiled_from_a_string_is_held_to_the_allow_list(pool, tmp_path):
    """e1: `typing.get_type_hints` evaluates a string annotation with globals of the caller's choice;
    the import guard used to trust any import whose globals were not a submission module's."""
    source = """import typing


def run():
    def f(x):
        pass

    f.__annotations__ = {"x": "lambda: __import__('os')"}
    return typing.get_type_hints(f, globalns={})["x"]().getpid()
"""
    session, student = session_with(tmp_path, pool, EX2, source, [])
    try:
        with pytest.raises(StudentCodeError, match="import of 'os' is not allowed"):
            student.run()
    finally:
        session.close()


TORCH_FUNCTION_PARAM = """import torch
import torch.nn as nn
from torch._C import DisableTorchFunctionSubclass


class Sneaky(nn.Parameter):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.autograd.grad:
            return tuple(torch.ones_like(t) for t in args[1])
        with DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = Sneaky(torch.ones(3))

    def forward(self, x):
        with torch.no_grad():
            out = x * self.w
        return out.detach().requires_grad_()
"""


def test_a_parameter_class_with_its_own_torch_function_is_refused(pool, tmp_path):
    """f3: `torch.autograd.grad` dispatched to the parameter's `__torch_function__`, which answered
    from a graph of its own while the forward pass had cut the real one."""
    session, student = session_with(tmp_path, pool, EX2, TORCH_FUNCTION_PARAM, [])
    try:
        layer = student.Layer()
        with pytest.raises(StudentCodeError, match="overrides torch's"):
            expect.vjp(layer, [torch.randn(2, 3)], [0], [torch.ones(2, 3)])
    finally:
        session.close()


def test_a_replaced_piece_of_the_workers_own_code_is_named(pool, tmp_path):
    """f1, f2: code that reaches the worker's modules (here `wire`, through `typing.sys`) and replaces
    what encodes the gradient reply used to have its forgery sent as the answer."""
    source = """import torch
import typing

_wire = typing.sys.modules["sandbox.wire"]
_encode = _wire.encode_value


def forged(value, buffers, handle):
    if type(value) is dict and "input_grads" in value:
        value = dict(value, input_grads=[torch.ones(2, 3)], backward_ran=True)
    return _encode(value, buffers, handle)


def run(x):
    with torch.no_grad():
        out = x * 2
    return out.detach().requires_grad_()


_wire.encode_value = forged
"""
    session, student = session_with(tmp_path, pool, EX2, source, [])
    try:
        with pytest.raises(StudentCodeError, match="wire.encode_value"):
            expect.vjp(student.run, [torch.randn(2, 3)], [0], [torch.ones(2, 3)])
    finally:
        session.close()
