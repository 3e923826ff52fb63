"""The run-time half of issue 9's hostile10 round, in a real worker: the tripwire alone must see a
banned operator, whatever the static rule missed.

(C) s1, s2, s3: whose call it is used to be decided by the globals of the frames on the calling
thread's stack. A call from code exec'd into a fresh dict (s1), from a function rebuilt with a copy
of its module's globals (s2), or from a thread the submission started (s3) found no exercise frame
and was dropped. (D) s4, s5: an operator with no autograd formula of its own
(`_native_multi_head_attention`, `_transformer_encoder_layer_fwd`) never reached the watch at
ADInplaceOrView. The submissions here are spelled so that the run-time layer is the one under test
(the static rule is not run: the module is loaded straight into a worker).
"""

from __future__ import annotations

import pytest
import torch

from graders.harness.core import expect
from graders.harness.core.project import default_project
from graders.harness.core.student import StudentSession

PROJECT = default_project()
EX4, EX7 = "ex04_multi_head_attention", "ex07_transformer_encoder_layer"
BANNED4, BANNED7 = PROJECT.load_manifest(EX4).banned, PROJECT.load_manifest(EX7).banned


def session_with(tmp_path, pool, modules):
    """A session with each (exercise, source, banned) loaded; returns it and the modules."""
    session = StudentSession(pool)
    for exercise, source, banned in modules:
        path = tmp_path / f"{exercise}.py"
        path.write_text(source, encoding="utf-8")
        session.add(exercise, path, seed=1, call_seconds=20, banned=banned)
    return session, [session.module(exercise) for exercise, _, _ in modules]


def hits_of(tmp_path, pool, source, *args, exercise=EX4, banned=BANNED4):
    session, (student,) = session_with(tmp_path, pool, [(exercise, source, banned)])
    try:
        student.run(*args)
        return student._tripwire()
    finally:
        session.close()


FLASH = "torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu"

S1_EXEC_FRESH_DICT = f"""import torch

SRC = '''
def inner(q):
    return {FLASH}(q, q, q)[0]
'''
SPACE = {{"torch": torch}}
exec(SRC, SPACE)
run = SPACE["inner"]
"""

S2_COPIED_GLOBALS = f"""import types
import torch


def run(q):
    return {FLASH}(q, q, q)[0]


run = types.FunctionType(run.__code__, dict(globals()), "run")
"""

S3_THREAD = """import torch


def run(q):
    box = []
    math = torch._C._VariableFunctions._scaled_dot_product_attention_math
    worker = torch.threading.Thread(target=box.extend, args=(map(math, [q], [q], [q]),))
    worker.start()
    worker.join()
    return box[0][0]
"""

S3_THREAD_TOOK_IT_TO_THE_GRADER = """import torch

run = torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu
"""


@pytest.mark.parametrize(
    "source",
    [S1_EXEC_FRESH_DICT, S2_COPIED_GLOBALS, S3_THREAD, S3_THREAD_TOOK_IT_TO_THE_GRADER],
    ids=["s1_exec_fresh_dict", "s2_copied_globals", "s3_thread", "torch_function_as_its_own"],
)
def test_a_banned_call_from_code_with_no_exercise_globals_is_a_hit(pool, tmp_path, source):
    """Every call made while the submission's code runs is the exercise's, whichever globals, thread
    or function it comes from."""
    q = torch.randn(1, 2, 4, 8)
    args = (q, q, q) if source is S3_THREAD_TOOK_IT_TO_THE_GRADER else (q,)
    hits = hits_of(tmp_path, pool, source, *args)
    assert hits, "the banned call was not recorded"


def test_a_rebuilt_function_still_names_the_students_line(pool, tmp_path):
    """s2: the hit names the line of the student's file the call is on."""
    line = S2_COPIED_GLOBALS.splitlines().index("def run(q):") + 2
    hits = hits_of(tmp_path, pool, S2_COPIED_GLOBALS, torch.randn(1, 2, 4, 8))
    assert hits and all(h[1] == line for h in hits), hits


E, H = 12, 3
NATIVE_MHA = """import torch

E, H = 12, 3


def run(x, w, b, pw, pb):
    return torch._C._VariableFunctions._native_multi_head_attention(
        x, x, x, E, H, w, b, pw, pb, None, True, False
    )[0]
"""

ENCODER_LAYER_FWD = """import torch

E, H = 12, 3


def run(x, w, b, pw, pb, w1, b1, w2, b2, g, beta):
    return torch._C._VariableFunctions._transformer_encoder_layer_fwd(
        x, E, H, w, b, pw, pb, True, False, 1e-5, g, beta, g, beta, w1, b1, w2, b2
    )
"""


def mha_args(grad: bool):
    x = torch.randn(2, 5, E, requires_grad=grad)
    return [x, torch.randn(3 * E, E), torch.randn(3 * E), torch.randn(E, E), torch.randn(E)]


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "plain"])
@pytest.mark.parametrize("exercise,banned", [(EX4, BANNED4), (EX7, BANNED7)], ids=["ex04", "ex07"])
def test_native_multi_head_attention_is_a_hit(pool, tmp_path, exercise, banned, grad):
    """s4, s5: an operator with no autograd formula skips the key the tripwire watched at."""
    hits = hits_of(tmp_path, pool, NATIVE_MHA, *mha_args(grad), exercise=exercise, banned=banned)
    assert any("_native_multi_head_attention" in h[0] for h in hits), hits


def test_transformer_encoder_layer_fwd_is_a_hit(pool, tmp_path):
    args = mha_args(False) + [torch.randn(16, E), torch.randn(16), torch.randn(E, 16), torch.randn(E)]
    args += [torch.ones(E), torch.zeros(E)]
    hits = hits_of(tmp_path, pool, ENCODER_LAYER_FWD, *args, exercise=EX7, banned=BANNED7)
    assert any("_transformer_encoder_layer_fwd" in h[0] for h in hits), hits


WATCHED = """import json, sys
import torch
from graders.harness.core.project import default_project
from graders.harness.sandbox.worker import Tripwire

torch.set_num_threads(1)
project = default_project()
tripwire = Tripwire(lambda dotted, owned_only=False: None)
names = set()
for exercise in project.exercise_ids():
    banned = project.load_manifest(exercise).banned
    tripwire.arm(exercise, banned)
    for entry in banned:
        names |= set(Tripwire._expand(entry)) if "*" in entry else {entry}
out = []
for dotted in sorted(names):
    name = dotted.rsplit(".", 1)[-1]
    packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
    if isinstance(packet, torch._ops.OpOverloadPacket):
        out += [getattr(packet, o).name() for o in packet.overloads()]
json.dump({"ops": sorted(set(out)), "watched": sorted(tripwire.dispatched)}, sys.stdout)
"""


def test_every_banned_aten_operator_is_watched_in_front_of_autograd():
    """Every overload of every banned aten operator of every exercise is watched at AutogradCPU (the
    key every call on an ordinary CPU tensor passes, whatever autograd kernel the operator has),
    `.out` overloads included (they have a kernel at ADInplaceOrView and were not watched at all).
    In a process of its own: arming replaces torch's functions."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", WATCHED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert "aten::_native_multi_head_attention" in found["ops"]
    assert "aten::_transformer_encoder_layer_fwd.out" in found["ops"]
    assert set(found["ops"]) <= set(found["watched"]), set(found["ops"]) - set(found["watched"])


EX7_USES_SDPA = """import torch.nn.functional as F


def run(q):
    return F.scaled_dot_product_attention(q, q, q)
"""


def test_gradients_still_flow_through_a_watched_operator(pool, tmp_path):
    """The watch at AutogradCPU runs torch's own autograd kernel: ex07 may call
    `F.scaled_dot_product_attention` (its kernel is banned in ex04, armed in the same worker), and the
    gradient is torch's; torch's backward pass of the request is no hit of either exercise."""
    session, (ex04, ex07) = session_with(
        tmp_path, pool, [(EX4, "def run(q):\n    return q * 2\n", BANNED4), (EX7, EX7_USES_SDPA, BANNED7)]
    )
    try:
        q = torch.randn(1, 2, 4, 8)
        grads = expect.vjp(ex07.run, [q], [0], [torch.ones(1, 2, 4, 8)])["input_grads"]
        assert ex04._tripwire() == []
        assert ex07._tripwire() == []
    finally:
        session.close()
    q64 = q.double().requires_grad_()
    torch.nn.functional.scaled_dot_product_attention(q64, q64, q64).sum().backward()
    assert torch.allclose(grads[0].double(), q64.grad, atol=1e-4)


OLD_TORCH = """import sys, threading
import torch

torch.set_num_threads(1)
del torch._C._dispatch_get_computed_kernel_for_dispatch_key  # as on a torch before 2.9
from graders.harness.sandbox import worker as W

hits = []
record = W.make_recorder({}, set(), {}, ["ex"], hits.append, threading.Lock())
tripwire = W.Tripwire(record)  # kept: its torch.library registrations go with it
tripwire.arm("ex", ["torch._native_multi_head_attention", "torch.ops.aten._scaled_dot_product_*"])
E, H = 12, 3
x = torch.randn(2, 5, E, requires_grad=True)
w, b, pw, pb = torch.randn(3 * E, E), torch.randn(3 * E), torch.randn(E, E), torch.randn(E)
torch._C._VariableFunctions._native_multi_head_attention(x, x, x, E, H, w, b, pw, pb, None, True, False)
seen = len(hits)
q = torch.randn(1, 2, 4, 8, requires_grad=True)
torch._C._VariableFunctions._scaled_dot_product_flash_attention_for_cpu(q, q, q)[0].sum().backward()
print(seen, len(hits) > seen, bool(q.grad.abs().sum() > 0))
"""


def test_an_operator_without_autograd_formula_is_a_hit_on_an_older_torch():
    """A torch that cannot hand its autograd kernel over (before 2.9): the operators torch gives no
    autograd formula (`worker.NO_AUTOGRAD_FORMULA`) are still watched at AutogradCPU, and a watched
    operator with a formula keeps its gradient. In a process of its own: arming replaces torch's
    functions."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", OLD_TORCH], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    seen, flash_seen, grad = done.stdout.split()
    assert int(seen) >= 1 and flash_seen == "True" and grad == "True", done.stdout


EX2 = "ex02_self_attention"
EX2_HELPER = """import torch.nn.functional as F


def helper(q):
    return F.scaled_dot_product_attention(q, q, q)
"""
EX4_BORROWS = """import typing


def run(q):  # the static rule flags `typing.sys`: only the run-time half is under test here
    return typing.sys.modules["ex02_self_attention"].helper(q)
"""


def test_a_banned_call_made_for_a_request_counts_for_the_exercise_that_asked(pool, tmp_path):
    """Exercise 2 may use torch's attention; exercise 4 may not. Exercise 4's code that calls into
    exercise 2's module (the one loaded in the same worker, not a copy of its own) makes the call
    from exercise 2's frames, and the worker names exercise 2: the trusted side also counts it for
    the exercise whose request was running, which nothing in the worker can change."""
    session, (helper, borrower) = session_with(
        tmp_path, pool, [(EX2, EX2_HELPER, PROJECT.load_manifest(EX2).banned), (EX4, EX4_BORROWS, BANNED4)]
    )
    try:
        q = torch.randn(1, 2, 4, 8)
        assert not helper._tripwire() and not borrower._tripwire()
        expect.close(borrower.run(q), torch.nn.functional.scaled_dot_product_attention(q, q, q), "out")
        assert any("scaled_dot_product" in what for what, _ in borrower._tripwire())
        assert not helper._tripwire()  # exercise 2 bans nothing: its own record stays empty
    finally:
        session.close()


FLASH_OP = "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default"
BELOW_THE_WATCHED_KEYS = {  # hostile11 s3, s5: calls that start below AutogradCPU and ADInplaceOrView
    "redispatch_to_cpu": f"""import torch


def run(q):
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
    return {FLASH_OP}.redispatch(keys, q, q, q)[0]
""",
    "below_ad_inplace_or_view": f"""import torch


def run(q):
    with torch._C._AutoDispatchBelowADInplaceOrView():
        return {FLASH_OP}(q, q, q)[0]
""",
}


@pytest.mark.parametrize("route", BELOW_THE_WATCHED_KEYS)
def test_a_call_that_starts_below_autograd_is_a_hit(pool, tmp_path, route):
    hits = hits_of(tmp_path, pool, BELOW_THE_WATCHED_KEYS[route], torch.randn(1, 2, 4, 8))
    assert any("_scaled_dot_product_flash_attention_for_cpu" in what for what, _ in hits), hits


def test_the_watches_print_nothing_into_the_students_output(pool, tmp_path):
    """Overriding torch's own kernels makes torch warn once; that is the grader's doing, not output
    of the student's to show in a report."""
    session, (student,) = session_with(tmp_path, pool, [(EX4, "def run(q):\n    return q * 2\n", BANNED4)])
    try:
        student.run(torch.randn(2, 3))
        assert student._tripwire() == []
        assert session.printed(EX4) == ("", 0)
    finally:
        session.close()
