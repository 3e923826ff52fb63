"""The built-by-hand rule against detours (issue 9, found by an unseen attack set).

Statically: a module reached through another (`warnings.sys`, `X.modules[...]`), the interpreter's
object graph and frames, attributes named by a string (`operator.attrgetter`) and `getattr` passed
as a value are a violation of their own kind ("indirect", its own message), while a module's own
`modules()` and torch's `stack` stay allowed. At run time: a tripwire hit reaches the trusted side
the moment it happens, so a submission that erases the worker's record of it (through the Worker
object found with gc) is still caught.
"""

from __future__ import annotations

import threading

import pytest

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

_found = [o for o in warnings.sys.modules["gc"].get_objects() if type(o).__name__ == "Worker"]


def run(q):
    out = F.scaled_dot_product_attention(q, q, q)
    for worker in _found:  # erase what the worker recorded, and stop any later report of it
        worker.tripwire.hits.clear()
        worker.tripwire.sent.clear() if hasattr(worker.tripwire, "sent") else None
        type(worker).OPS["tripwire"] = lambda self, req, bufs: {"ok": True, "value": []}
    return out
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
    assert ("torch.nn.functional.scaled_dot_product_attention", 10) in hits


def test_a_forged_event_frame_is_a_protocol_error(pool, tmp_path):
    """An event frame the trusted side does not know ends the worker: it cannot smuggle replies."""
    source = """import warnings
_w = [o for o in warnings.sys.modules["gc"].get_objects() if type(o).__name__ == "Worker"]


def run():
    w = _w[0]
    w._sendall(w._pack({"event": "reply", "seq": 99}))
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
