"""The built-by-hand rule (graders/harness/core/banned.py): the source is read as Python reads it, dynamic
access to torch is its own violation, and a tripwire in the worker sees what actually ran.

The cases "that gave 18/18 while using torch's attention" are the ones listed in issue 9: a computed
getattr, eval, a UTF-8 BOM, a latin-1 coding cookie, `functional_call` on a Transformer layer.
"""

from __future__ import annotations

import codecs

import pytest

from graders.harness.core.banned import read_source, static_findings
from graders.harness.core.project import default_project
from graders.harness.core.student import StudentSession

PROJECT = default_project()
EX4 = "ex04_multi_head_attention"
BANNED = PROJECT.load_manifest(EX4).banned
HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def kinds(source: str | bytes) -> list[tuple[str, str]]:
    data = source if isinstance(source, bytes) else source.encode()
    return [(f.kind, f.what) for f in static_findings(data, BANNED)]


@pytest.mark.parametrize(
    "source, flagged",
    [
        (HEAD + "y = F.scaled_dot_product_attention(q, k, v)", "F.scaled_dot_product_attention"),
        (HEAD + "m = nn.MultiheadAttention(8, 2)", "nn.MultiheadAttention"),
        ("from torch.nn.functional import scaled_dot_product_attention as sdpa", "import scaled_dot_product"),
        (HEAD + "f = getattr(torch.nn.functional, 'multi_head_attention_forward')", "'multi_head_attention"),
        (HEAD + "torch.ops.aten._scaled_dot_product_flash_attention(q, k, v)", "_scaled_dot_product_flash"),
        (HEAD + "layer = nn.TransformerEncoderLayer(8, 2)", "nn.TransformerEncoderLayer"),
        (HEAD + "f = torch._C._nn.scaled_dot_product_attention", "torch._C._nn.scaled_dot_product_attention"),
        (HEAD + "name = 'torch.nn.functional.multi_head_attention_forward'", "multi_head_attention_forward"),
    ],
)
def test_banned_names_are_found(source, flagged):
    found = kinds(source)
    assert found and found[0][0] == "banned" and flagged in found[0][1], found


@pytest.mark.parametrize(
    "source, flagged",
    [
        (HEAD + 'f = getattr(F, "multi_head_" + "attention_forward")', "getattr(F, 'multi_head_' +"),
        (HEAD + 'f = eval("F.multi_head_attention" + "_forward")', "eval"),
        (HEAD + 'exec(compile("import torch", "x", "exec"))', "exec"),
        (HEAD + "f = F.__dict__['multi_head_' + 'attention_forward']", "F.__dict__"),
        (HEAD + "f = vars(F)['multi_head_' + 'attention_forward']", "vars"),
        (HEAD + "m = torch.sys.modules['importlib'].import_module('torch.nn')", "torch.sys.modules"),
        (HEAD + "from torch.func import functional_call", "functional_call"),
        (HEAD + "out = torch.func.functional_call(layer, params, (x,))", "functional_call"),
        (HEAD + "F.softmax = lambda t, dim: t", "F.softmax = …"),
        (HEAD + "raw = F.softmax.__wrapped__", "F.softmax.__wrapped__"),
        (HEAD + "cell = F.softmax.__closure__[0]", "__closure__"),
        (HEAD + "g = globals()['__builtins__']", "__builtins__"),
        (HEAD + "import builtins", "builtins"),
        (HEAD + "f = getattr(globals()['F'], name)", "getattr(globals()['F'], name)"),
        (HEAD + "setattr(F, 'softmax', None)", "setattr(F, 'softmax', None)"),
    ],
)
def test_dynamic_access_is_its_own_violation(source, flagged):
    found = kinds(source)
    assert ("dynamic", flagged) in found or any(k == "dynamic" and flagged in w for k, w in found), found


@pytest.mark.parametrize(
    "source",
    [
        "def scaled_dot_product_attention(q, k, v):\n    return q\n\nc = scaled_dot_product_attention(1, 2)",
        "class A:\n    def scaled_dot_product_attention(self, x):\n        return x\n\n"
        "    def f(self):\n        return self.scaled_dot_product_attention(1)",  # a method of its own
        '"""Unlike nn.MultiheadAttention, it keeps every head."""\nclass SimpleMultiHeadAttention:\n    pass',
        'if __name__ == "__main__":\n    import torch.nn as nn\n    nn.MultiheadAttention(8, 2)',
        "print('scaled_dot_product_attention is not used here')",
        "def broken(:",
        HEAD + "dk = getattr(self, 'head_dim', 4)\nt = getattr(torch, 'float32')",
        HEAD + "class M(nn.Module):\n    def f(self, name):\n        return getattr(self, name)",
    ],
)
def test_own_code_is_allowed(source):
    assert kinds(source) == []


# ---------------------------------------------------------------- the source as Python reads it


def test_a_utf8_bom_no_longer_hides_the_file():
    data = codecs.BOM_UTF8 + (HEAD + "y = F.scaled_dot_product_attention(q, k, v)\n").encode()
    assert read_source(data).startswith("import torch")
    assert kinds(data)[0] == ("banned", "F.scaled_dot_product_attention")


def test_a_latin1_coding_cookie_is_read_as_latin1():
    source = "# -*- coding: latin-1 -*-\n" + HEAD + "# café\ny = F.scaled_dot_product_attention(q, k, v)\n"
    data = source.encode("latin-1")  # not valid UTF-8: decoding it so (with replacement) hid everything
    assert "café" in read_source(data)
    assert ("banned", "F.scaled_dot_product_attention") in kinds(data)


def test_a_file_python_cannot_decode_gives_no_finding():
    assert kinds(b"# coding: no-such-codec\nimport torch\n") == []


# ---------------------------------------------------------------- the tripwire, in a real worker

USES_MHA = (
    HEAD
    + """

class SimpleMultiHeadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        return self.inner(x, x, x, average_attn_weights=False)


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v)
"""
)

UNDOES = (
    HEAD
    + """
original = F.scaled_dot_product_attention.__closure__[1].cell_contents
F.scaled_dot_product_attention = original


def run(q):
    return F.scaled_dot_product_attention(q, q, q)
"""
)


def load(pool, tmp_path, source: str):
    path = tmp_path / f"{EX4}.py"
    path.write_text(source, encoding="utf-8")
    session = StudentSession(pool)
    session.add(EX4, path, seed=1, call_seconds=10, banned=BANNED)
    return session, session.module(EX4)


def test_the_tripwire_records_each_banned_call_with_its_line(pool, tmp_path):
    import torch

    session, student = load(pool, tmp_path, USES_MHA)
    try:
        assert student._tripwire() == []  # nothing ran yet
        layer = student.SimpleMultiHeadAttention(8, 2)
        layer(torch.randn(1, 3, 8))
        student.sdpa(torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4))
        hits = {tuple(h) for h in student._tripwire()}
    finally:
        session.close()
    assert ("torch.nn.MultiheadAttention", 9) in hits  # built in __init__, line 9 of the file
    assert ("torch.nn.functional.multi_head_attention_forward", 12) in hits  # called through its forward
    assert ("torch.nn.functional.scaled_dot_product_attention", 16) in hits


def test_a_tripwire_undone_says_so(pool, tmp_path):
    import torch

    session, student = load(pool, tmp_path, UNDOES)
    try:
        student.run(torch.randn(1, 2, 4))
        hits = [h[0] for h in student._tripwire()]
    finally:
        session.close()
    assert "torch.nn.functional.scaled_dot_product_attention (tripwire undone)" in hits
    assert ("dynamic", "F.scaled_dot_product_attention.__closure__") in kinds(UNDOES)


def test_the_exercise_of_another_module_is_not_charged(pool, tmp_path):
    """ex02 may call F.scaled_dot_product_attention: the wrappers stay, but its calls are ex02's."""
    import torch

    path = tmp_path / "ex02_self_attention.py"
    path.write_text(HEAD + "def f(q):\n    return F.scaled_dot_product_attention(q, q, q)\n")
    session, student = load(pool, tmp_path, USES_MHA)
    try:
        student._tripwire()  # ex04 loaded first: the tripwire is armed
        session.add("ex02_self_attention", path, seed=1, call_seconds=10)
        other = session.module("ex02_self_attention")
        other.f(torch.randn(1, 2, 4))
        assert student._tripwire() == []
    finally:
        session.close()


SDPA_CALL = "    y = F.scaled_dot_product_attention(q, k, v)\n"


@pytest.mark.parametrize(
    "source",
    [
        HEAD + 'if __name__ == "__main__":\n    pass\nelse:\n' + SDPA_CALL,
        HEAD + 'if __name__ == "__main__":\n    pass\nelif True:\n' + SDPA_CALL,
        HEAD + 'if __name__ != "__main__":\n' + SDPA_CALL,
        HEAD + 'if __name__ == "__main__" or True:\n' + SDPA_CALL,
        HEAD + 'if "__main__" in __name__ + "__main__":\n' + SDPA_CALL,
        HEAD + "def f(q, cls=torch):\n    return cls._C._nn.scaled_dot_product_attention(q, q, q)\n",
        HEAD + "def f(self, q):\n    return self.scaled_dot_product_attention(q, q, q)\nf(F, 1)\n",
        HEAD
        + "class A:\n    def f(self, q):\n        self = F\n        return self."
        + SDPA_CALL.split("F.")[1],
        HEAD + "class A:\n    def f(self=F, q=1):\n        return self." + SDPA_CALL.split("F.")[1],
    ],
    ids=[
        "else",
        "elif",
        "not-equal",
        "or",
        "in",
        "cls-default",
        "self-not-a-method",
        "self-rebound",
        "self-default",
    ],
)
def test_the_main_block_and_self_are_judged_only_where_they_are_what_they_seem(source):
    """Only the body of `if __name__ == "__main__":` is skipped (not its `else` or `elif`, which run on
    import, nor a test that merely names both); `self.x` is the student's own object only inside a
    class's method whose first parameter it is (an unseen attack bound `cls` to torch by default)."""
    assert kinds(source)


def test_a_student_s_own_method_and_main_block_stay_allowed():
    source = HEAD + (
        "class A(nn.Module):\n    def scaled_dot_product_attention(self, q):\n        return q\n\n"
        "    def forward(self, q):\n        return self.scaled_dot_product_attention(q)\n\n\n"
        'if __name__ == "__main__":\n' + SDPA_CALL
    )
    assert kinds(source) == []
