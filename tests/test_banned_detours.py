"""The built-by-hand rule against detours (issue 9, found by an unseen attack set).

Statically: a module reached through another (`warnings.sys`, `X.modules[...]`), the interpreter's
object graph and frames, attributes named by a string (`operator.attrgetter`) and `getattr` passed
as a value are a violation of their own kind ("indirect", its own message), while a module's own
`modules()` and torch's `stack` stay allowed. At run time: a tripwire hit reaches the trusted side
the moment it happens, so a submission that erases the worker's record of it (through the Worker
object found through the import guard's closure, a route the introspection watch does not see) is
still caught.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.harness.core import expect
from graders.harness.core.banned import static_findings
from graders.harness.core.errors import CheckFailed
from graders.harness.core.project import default_project
from graders.harness.core.student import StudentSession

PROJECT = default_project()
EX4 = "ex04_multi_head_attention"
BANNED = PROJECT.load_manifest(EX4).banned
HEAD = (
    "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
    "import operator, warnings, functools\n"
)


def kinds(source: str) -> list[tuple[str, str]]:
    return [(f.kind, f.what) for f in static_findings(source.encode(), BANNED)]


@pytest.mark.parametrize(
    "source, flagged",
    [
        (HEAD + 'f = operator.attrgetter("scaled_dot_" + "product_attention")(F)', "operator.attrgetter"),
        (HEAD + "from operator import attrgetter\n", "attrgetter"),
        (HEAD + 'f = operator.methodcaller("forward", x)', "operator.methodcaller"),
        (HEAD + "_s = warnings.sys\n", "warnings.sys"),
        (HEAD + "_s = functools.sys\n", "functools.sys"),
        (HEAD + "m = thing.modules['gc']\n", "thing.modules"),
        (HEAD + "m = thing.modules.get('gc')\n", "thing.modules"),
        (HEAD + "objs = collector.get_objects()\n", "collector.get_objects"),
        (HEAD + "g = frame.f_back.f_globals\n", "f_globals"),
        (HEAD + "g = tb.tb_frame\n", "tb.tb_frame"),
        (HEAD + 'f = functools.reduce(getattr, ["nn", "functional"], torch)', "getattr"),
        (HEAD + 's = getattr(warnings, "sys")\n', "'sys'"),
        (HEAD + 'g = getattr(thing, "modules")\n', "'modules'"),
    ],
)
def test_detours_are_their_own_violation(source, flagged):
    found = [what for kind, what in kinds(source) if kind == "indirect"]
    assert any(flagged in what for what in found), kinds(source)


@pytest.mark.parametrize(
    "source",
    [
        HEAD + "n = sum(1 for _ in self.modules())\n",
        HEAD + "n = len(list(model.modules()))\n",
        HEAD + "y = torch.stack([a, b])\n",
        HEAD + "w = getattr(self, 'weight')\n",
        HEAD + "size = getattr(config, 'size', 4)\n",
    ],
)
def test_ordinary_code_is_no_detour(source):
    assert [k for k in kinds(source) if k[0] == "indirect"] == []


def test_a_detour_has_its_own_message():
    rule = expect.by_hand_rule(expect.Text(zh="自己实现", en="build it yourself"))
    finding = static_findings((HEAD + "_s = warnings.sys\n").encode(), BANNED)[0]
    with pytest.raises(CheckFailed) as caught:
        expect.not_by_hand([finding], rule)
    text = caught.value.text.en
    assert "detour" in text and "warnings.sys" in text and text != expect.DYNAMIC_ACCESS.en
    assert caught.value.diagnosis == "dynamic_torch_access"


# ---------------------------------------------------------------- the tripwire's record, in a real worker

ERASES = """import math
import torch
import torch.nn.functional as F
import warnings

_cells = [c.cell_contents for c in __import__.__closure__]  # past the introspection watch
_found = [v for v in _cells if type(v).__name__ == "Worker"]


def run(q):
    out = F.scaled_dot_product_attention(q, q, q)
    for worker in _found:  # erase what the worker recorded, and stop any later report of it
        worker.tripwire.hits.clear()
        worker.tripwire.sent.clear() if hasattr(worker.tripwire, "sent") else None
        type(worker).OPS["tripwire"] = lambda self, req, bufs: {"ok": True, "value": []}
    return out
"""


# The worker's socket, reached through the tripwire wrapper's closure (the Worker object no longer is)
SOCKET_FROM_CLOSURES = """import torch.nn.functional as F
_cells = [c.cell_contents for c in F.scaled_dot_product_attention.__closure__]  # past the watch
_record = [v for v in _cells if getattr(v, "__name__", "") == "record"][0]
_inner = {getattr(c.cell_contents, "__name__", ""): c.cell_contents for c in _record.__closure__}
_sendall, _pack = _inner["sendall"], _inner["pack_frame"]
"""


def test_a_hit_erased_inside_the_worker_is_still_on_record(pool, tmp_path):
    import torch

    path = tmp_path / f"{EX4}.py"
    path.write_text(ERASES, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX4, path, seed=1, call_seconds=10, banned=BANNED)
    student = session.module(EX4)
    try:
        student.run(torch.randn(1, 3, 4))
        hits = {tuple(h) for h in student._tripwire()}
    finally:
        session.close()
    assert ("torch.nn.functional.scaled_dot_product_attention", 11) in hits


def test_a_forged_event_frame_is_a_protocol_error(pool, tmp_path):
    """An event frame the trusted side does not know ends the worker: it cannot smuggle replies."""
    source = SOCKET_FROM_CLOSURES + """

def run():
    _sendall(_pack({"event": "reply", "seq": 99}))
    return 1
"""
    from graders.harness.core.errors import StudentCrash

    path = tmp_path / f"{EX4}.py"
    path.write_text(source, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX4, path, seed=1, call_seconds=10, banned=BANNED)
    try:
        with pytest.raises(StudentCrash):
            session.module(EX4).run()
    finally:
        session.close()


def test_the_static_rule_reads_from_a_fresh_stack_what_the_worker_compiles():
    """A source nested near the parser's limit is read alike from deep in the trusted process (as
    pytest calls the rule) and from the shallow stack the worker compiles it on."""
    pad = "+".join(["1"] * 2900)
    source = f"import torch.nn.functional as F\n_PAD = {pad}\nout = F.scaled_dot_product_attention\n".encode()
    compiled = []
    worker = threading.Thread(target=lambda: compiled.append(compile(source, "s.py", "exec")))
    worker.start()
    worker.join()
    assert compiled  # the worker's view, from a shallow stack: it compiles

    banned = ["torch.nn.functional.scaled_dot_product_attention"]

    def deep(n: int):
        return deep(n - 1) if n else static_findings(source, banned)

    found = deep(400)
    assert [f.kind for f in found] == ["banned"], found


def test_a_source_no_parser_can_read_is_a_finding_of_its_own():
    source = ("x = " + "+".join(["1"] * 100_000) + "\n").encode()
    found = static_findings(source, ["torch.nn.functional.scaled_dot_product_attention"])
    assert [f.kind for f in found] == ["unreadable"], found


# ---------------------------------------------------------------- every syntax that names an attribute

BANNED_LAST = sorted({name.rsplit(".", 1)[-1].replace("*", "flash_attention_for_cpu") for name in BANNED})


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(BANNED_LAST),
    subject=st.sampled_from(["torch.ops.aten", "F", "torch.nn", "torch", "thing"]),
    cls=st.sampled_from(["object", "type", "Thing"]),
    capture=st.sampled_from(["op", "_f", "fused"]),
)
def test_a_class_pattern_names_its_attributes_as_an_attribute_access_would(name, subject, cls, capture):
    """`case C(name=x)` is `getattr(subject, "name")`: the rule reads the names of a class pattern
    (before: `MatchClass.kwd_attrs` were never read, and the fused SDPA kernel scored as by hand)."""
    source = HEAD + f"match {subject}:\n    case {cls}({name}={capture}):\n        pass\n"
    found = [(k, w) for k, w in kinds(source) if k == "banned"]
    assert found and name in found[0][1], kinds(source)


@pytest.mark.parametrize(
    "source, kind, flagged",
    [
        ("match torch:\n    case object(sys=s):\n        pass\n", "indirect", "sys="),
        ("match F:\n    case object(__dict__=d):\n        pass\n", "dynamic", "__dict__="),
        ("match w:\n    case object(modules=m):\n        pass\n", "indirect", "modules="),
        ("f(scaled_dot_product_attention=1)\n", "banned", "scaled_dot_product_attention="),
        ('match F:\n    case {"scaled_dot_product_attention": f}:\n        pass\n', "banned", "scaled_dot"),
    ],
)
def test_other_syntax_that_names_an_attribute_is_read(source, kind, flagged):
    assert any(k == kind and flagged in w for k, w in kinds(HEAD + source)), kinds(HEAD + source)


def test_ordinary_match_statements_and_keywords_are_no_finding():
    source = HEAD + (
        "match x:\n    case Point(x=0, y=y):\n        pass\n    case {'dim': d}:\n        pass\n"
        "y = torch.softmax(s, dim=-1)\n"
    )
    assert kinds(source) == []


FUSED_AT_RUN_TIME = """import torch

_ns = torch.ops.aten
_name = "".join(["_scaled_dot_product_", "flash_attention_for_cpu"])


def run(q):
    op = getattr(_ns, _name)
    return op(q, q, q)[0]
"""


def test_the_tripwire_covers_every_operator_a_glob_bans(pool, tmp_path):
    """A glob entry (`torch.ops.aten._scaled_dot_product_*`) is watched at run time too: every
    operator the dispatcher knows under that name is wrapped (before: globs were skipped)."""
    import torch

    path = tmp_path / f"{EX4}.py"
    path.write_text(FUSED_AT_RUN_TIME, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX4, path, seed=1, call_seconds=10, banned=BANNED)
    student = session.module(EX4)
    try:
        student.run(torch.randn(1, 2, 3, 4))
        hits = {tuple(h) for h in student._tripwire()}
    finally:
        session.close()
    assert ("torch.ops.aten._scaled_dot_product_flash_attention_for_cpu", 9) in hits, hits


def test_a_forged_reply_cannot_guess_the_number_of_the_request_it_answers(pool, tmp_path):
    """Student code that holds the Worker object writes a complete reply of its own for the call
    it is running. Requests used to be numbered in turn (hello 1, load 2, the read of `run` 3, its
    call 4), so the forgery could carry the right number; each request now carries a random one,
    and the forgery is refused as out of turn (the submission's fault), never taken as the answer."""
    source = SOCKET_FROM_CLOSURES + """

def run():
    _sendall(_pack({"ok": True, "value": 42, "seq": 4, "nonce": 4}))
    return 1
"""
    from graders.harness.core.errors import StudentCrash

    path = tmp_path / f"{EX4}.py"
    path.write_text(source, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX4, path, seed=1, call_seconds=10, banned=BANNED)
    try:
        with pytest.raises(StudentCrash, match="out of turn"):
            session.module(EX4).run()
    finally:
        session.close()
