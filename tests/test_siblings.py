"""A submission is a folder of modules: an exercise file may import another file of the same folder.

The imported file ("sibling") is read as bytes by the trusted side and run inside the same worker
under the same rules: the import allow-list holds for its own imports, the built-by-hand rule sees
its code (statically and at run time), a missing file is named, and a name can never be a path.
Each case runs in single mode; one batch shows the rule holds there too.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import EXERCISES, PROJECT

from graders.harness.core.siblings import imported_names, sibling_sources

EX2 = "ex02_self_attention"
EX4 = "ex04_multi_head_attention"
EX2_REF = PROJECT.reference_path(EX2).read_text(encoding="utf-8")
EX4_REF = PROJECT.reference_path(EX4).read_text(encoding="utf-8")

# ex02's layer with its attention function moved to a helper module of the student's
EX2_WITH_HELPER = (
    "import torch\nimport torch.nn as nn\n\n"
    "from attention_utils import scaled_dot_product_attention\n\n"
    + EX2_REF[EX2_REF.index("class SimpleSelfAttention") :]
)


def by_id(report) -> dict:
    return {e.id: e for e in report.exercises}


def messages(exercise) -> str:
    return "\n".join(c.message for c in exercise.checks)


def test_a_helper_module_imported_by_ex02_is_graded_as_the_students_code(grade_files):
    assert "class SimpleSelfAttention" in EX2_REF and "def scaled_dot_product_attention" in EX2_REF
    report = grade_files({f"{EX2}.py": EX2_WITH_HELPER, "attention_utils.py": EX2_REF}, exercises=[EX2])
    ex2 = by_id(report)[EX2]
    assert ex2.score == ex2.max_score > 0, messages(ex2)


def test_ex04_imported_by_another_file_keeps_its_own_classes(grade_files):
    ex4 = "from ex04_multi_head_attention_impl import SimpleMultiHeadAttention\n"
    report = grade_files({f"{EX4}.py": ex4, "ex04_multi_head_attention_impl.py": EX4_REF}, exercises=[EX4])
    got = by_id(report)[EX4]
    assert got.score == got.max_score > 0, messages(got)


def test_a_sibling_may_hold_dataclasses_and_import_other_siblings(grade_files):
    helper = (
        "from __future__ import annotations\n\nimport dataclasses\n\nfrom constants import SCALE_POWER\n\n\n"
        "@dataclasses.dataclass\nclass Scale:\n    power: float = SCALE_POWER\n\n"
        "    def of(self, d: int) -> float:\n        return d**self.power\n"
    )
    ex2 = EX2_REF.replace("import math\n", "import math\n\nfrom scaling import Scale\n", 1).replace(
        "math.sqrt(d_k)", "Scale().of(d_k)"
    )
    assert "Scale().of(d_k)" in ex2
    files = {f"{EX2}.py": ex2, "scaling.py": helper, "constants.py": "SCALE_POWER = 0.5\n"}
    ex = by_id(grade_files(files, exercises=[EX2]))[EX2]
    assert ex.score == ex.max_score, messages(ex)


def test_a_missing_sibling_is_named(grade_files):
    report = grade_files({f"{EX2}.py": EX2_WITH_HELPER}, exercises=[EX2])
    ex2 = by_id(report)[EX2]
    assert ex2.score == 0
    assert all("attention_utils.py" in c.message for c in ex2.checks), messages(ex2)


def test_a_sibling_with_a_syntax_error_is_named(grade_files):
    report = grade_files({f"{EX2}.py": EX2_WITH_HELPER, "attention_utils.py": "def f(:\n"}, exercises=[EX2])
    ex2 = by_id(report)[EX2]
    assert ex2.score == 0
    assert all("attention_utils.py" in c.message and "syntax" in c.message for c in ex2.checks)


BULK = "def _unused(x):\n" + "    x.a.b.c.d = x.a[0].b(1).c + x.d.e(2)[3].f\n" * 4000  # ~170 KiB, never run


def test_more_code_than_one_exercise_may_have_is_refused_before_it_is_scanned(grade_files):
    """hostile11 d1: six helpers just under the per-file cap, imported by an honest ex04, held the
    grader's CPU for minutes in the built-by-hand scan (outside every time budget). What an
    exercise's file and its own imports hold together is capped, and a submission past it is told
    which file and how much."""
    helpers = {f"bulk{i}.py": BULK for i in range(4)}
    ex4 = "".join(f"import bulk{i}  # noqa\n" for i in range(4)) + EX4_REF
    report = grade_files({f"{EX4}.py": ex4, **helpers}, exercises=[EX4])
    ex = by_id(report)[EX4]
    assert ex.score == 0
    assert all(f"{EX4}.py" in c.message and "KiB" in c.message for c in ex.checks), messages(ex)
    fits = grade_files({f"{EX4}.py": "import bulk0  # noqa\n" + EX4_REF, "bulk0.py": BULK}, exercises=[EX4])
    assert by_id(fits)[EX4].score == by_id(fits)[EX4].max_score  # one helper of that size is fine


def test_the_cap_on_an_exercises_code_counts_its_own_file_too(tmp_path):
    from graders.harness.core.errors import SubmissionFileError
    from graders.harness.core.siblings import MAX_TOTAL_BYTES

    big = ("# padding\n" * (MAX_TOTAL_BYTES // 10 + 1)).encode()
    with pytest.raises(SubmissionFileError) as refused:
        sibling_sources(tmp_path, big, [], shown="mine.py")
    assert "mine.py" in refused.value.text.en and "mine.py" in refused.value.text.zh
    assert sibling_sources(tmp_path, big[: MAX_TOTAL_BYTES], [], shown="mine.py") == {}


def test_a_siblings_own_imports_follow_the_allow_list(grade_files):
    helper = "import os\n" + EX2_REF
    report = grade_files({f"{EX2}.py": EX2_WITH_HELPER, "attention_utils.py": helper}, exercises=[EX2])
    ex2 = by_id(report)[EX2]
    assert ex2.score == 0
    assert all("'os'" in c.message for c in ex2.checks), messages(ex2)


def test_a_banned_call_in_a_sibling_is_caught_statically_and_at_run_time(grade_files):
    cheat = (
        "import torch.nn.functional as F\n\n\n"
        "def attend(q, k, v):\n"
        "    return F.scaled_dot_product_attention(q, k, v)\n"
    )
    ex4 = EX4_REF.replace("import math\n", "import math\n\nfrom helpers import attend\n", 1)
    report = grade_files({f"{EX4}.py": ex4, "helpers.py": cheat}, exercises=[EX4])
    check = next(c for c in by_id(report)[EX4].checks if c.id == "mha_no_builtin_attention")
    assert check.status == "failed" and "helpers.py" in check.message, check.message
    assert check.diagnosis == "uses_builtin_attention"

    # the same call reached without naming it in the source: only the tripwire can see it
    hidden = (
        "import torch\n\n\n"
        "def attend(q, k, v):\n"
        "    f = torch.nn.functional\n"
        "    return f.scaled_dot_product_attention(q, k, v)\n"
    )
    softmax_line = "weights = torch.softmax(scores, dim=-1)  # (B, H, L, L), each row sums to 1"
    ex4 = EX4_REF.replace(softmax_line, softmax_line + "\n        attend(q, k, v)")
    ex4 = ex4.replace("import math\n", "import math\n\nfrom helpers import attend\n", 1)
    assert "attend(q, k, v)" in ex4
    report = grade_files({f"{EX4}.py": ex4, "helpers.py": hidden}, exercises=[EX4])
    check = next(c for c in by_id(report)[EX4].checks if c.id == "mha_no_builtin_attention")
    assert check.status == "failed" and check.diagnosis == "uses_builtin_attention", check.message


@pytest.mark.parametrize(
    "statement, refused",
    [
        ("from . import attention_utils", "relative import"),
        ("from .attention_utils import scaled_dot_product_attention", "relative import"),
        ("import attention_utils.inner", "not a package"),
        ("from attention_utils.inner import scaled_dot_product_attention", "not a package"),
        ("__import__('../attention_utils')", ""),
        ("import importlib; importlib.import_module('attention_utils')", "'importlib'"),
    ],
)
def test_a_sibling_cannot_be_reached_as_a_path_or_a_package(grade_files, statement, refused):
    source = "import torch\n" + statement + "\n" + EX2_REF
    files = {f"{EX2}.py": source, "attention_utils.py": EX2_REF, "inner.py": EX2_REF}
    ex2 = by_id(grade_files(files, exercises=[EX2]))[EX2]
    assert ex2.score == 0
    assert all(refused in c.message for c in ex2.checks), messages(ex2)


def test_a_file_of_an_allowed_module_name_never_shadows_that_module(grade_files, tmp_path):
    files = {f"{EX2}.py": EX2_REF, "torch.py": "raise SystemExit('shadowed')\n", "math.py": "x = 1\n"}
    ex2 = by_id(grade_files(files, exercises=[EX2]))[EX2]
    assert ex2.score == ex2.max_score
    assert sibling_sources(tmp_path / "submission", b"import torch, math\n", ["torch", "math"]) == {}


DEEP = {"attributes": "x = a" + ".b" * 200_000 + "\n", "minus_signs": "x = " + "-" * 100_000 + "1\n"}


@pytest.mark.parametrize("helper", list(DEEP.values()), ids=list(DEEP))
def test_a_sibling_nested_past_the_parsers_limits_is_the_students_fault(grade_files, helper):
    ex4 = EX4_REF.replace("import math\n", "import math\n\nimport helpers  # noqa: F401\n", 1)
    exercise = by_id(grade_files({f"{EX4}.py": ex4, "helpers.py": helper}, exercises=[EX4]))[EX4]
    assert exercise.score == 0
    assert {c.status for c in exercise.checks} == {"failed"}, messages(exercise)


def test_a_symlinked_sibling_is_refused_with_its_name(grade_files, tmp_path):
    target = tmp_path / "elsewhere.py"
    target.write_text(EX2_REF, encoding="utf-8")
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "attention_utils.py").symlink_to(target)
    ex2 = by_id(grade_files({f"{EX2}.py": EX2_WITH_HELPER}, exercises=[EX2]))[EX2]
    assert ex2.score == 0
    assert all("attention_utils.py" in c.message and "symbolic" in c.message for c in ex2.checks)


def test_imported_names_reads_every_level_zero_import():
    source = b"import a.b as c, d\nfrom e.f import g\nfrom . import h\ndef f():\n    import i\n"
    assert sorted(imported_names(source)) == ["a", "d", "e", "i"]
    assert imported_names(b"def broken(:\n") == ()


def test_siblings_in_batch_mode(tmp_path):
    root = tmp_path / "subs"
    (root / "alice").mkdir(parents=True)
    (root / "alice" / f"{EX2}.py").write_text(EX2_WITH_HELPER, encoding="utf-8")
    (root / "alice" / "attention_utils.py").write_text(EX2_REF, encoding="utf-8")
    (root / "bob").mkdir()
    (root / "bob" / f"{EX2}.py").write_text(EX2_WITH_HELPER, encoding="utf-8")
    out = tmp_path / "out"
    cmd = [sys.executable, str(PROJECT.root / "grade.py"), "batch", str(root), "--out", str(out),
           "--exercise", EX2, "--jobs", "1", "--seed", "7"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=PROJECT.root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    alice = json.loads((out / "results" / "alice.json").read_text(encoding="utf-8"))
    bob = json.loads((out / "results" / "bob.json").read_text(encoding="utf-8"))
    assert alice["score"] == alice["max_score"] > 0
    assert bob["score"] == 0 and "attention_utils.py" in json.dumps(bob)
    assert EX2 in EXERCISES


EX7 = "ex07_transformer_encoder_layer"


def test_ex07_runs_with_the_students_own_ex04_module(pool, tmp_path):
    from graders.harness.core.student import StudentSession

    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / f"{EX7}.py").write_bytes(PROJECT.reference_path(EX7).read_bytes())
    marked = EX4_REF.replace("self.head_dim = ", "self.mine = True\n        self.head_dim = ")
    (folder / f"{EX4}.py").write_text(marked, encoding="utf-8")
    session = StudentSession(pool)
    try:
        session.add(EX7, folder / f"{EX7}.py", seed=3)
        layer = session.module(EX7).TransformerEncoderLayer(12, 3, 20, 0.1)
        modules = {name: (kind, where) for name, kind, where in layer._introspect()["modules"]}
        assert modules["self_attn"] == ("SimpleMultiHeadAttention", EX4)
        assert layer.self_attn.mine is True  # the student's file, not the grader's stand-in
    finally:
        session.close()


@pytest.mark.parametrize("ex04", ["stub", "mutant", "absent"])
def test_ex07_is_not_charged_for_ex04(grade_files, ex04):
    files = {f"{EX7}.py": PROJECT.reference_path(EX7)}
    if ex04 == "stub":
        files[f"{EX4}.py"] = PROJECT.template_path(EX4)
    elif ex04 == "mutant":
        files[f"{EX4}.py"] = PROJECT.root / "tests" / "mutants" / EX4 / "no_scaling.py"
    report = by_id(grade_files(files, exercises=[EX4, EX7]))
    assert report[EX7].score == report[EX7].max_score > 0, messages(report[EX7])
    assert report[EX4].score < report[EX4].max_score
