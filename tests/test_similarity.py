"""The similarity report: copied code is found under renamed names, independent solutions are not.

Generated classes: the reference, a copy of it with every local name renamed and its comments
rewritten, the correct solutions written differently that tests/test_alternatives_* prove fair,
and the stub (the starter code, which must never count as shared). Then the report: the class
report's section in both languages, analytics.json, the side-by-side page with nothing active,
and `grade.py batch --similarity` end to end on folders, a notebook and a zip.
"""

from __future__ import annotations

import builtins
import io
import json
import keyword
import subprocess
import sys
import tokenize
import zipfile
from pathlib import Path

import pytest
from conftest import PROJECT
from hypothesis import given

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import inert_check  # noqa: E402
import test_alternatives_ex02_ex04 as alternatives  # noqa: E402
from test_inert import PROPERTY, TEXT  # noqa: E402

from graders.harness.batch import analytics  # noqa: E402
from graders.harness.batch import similarity as S  # noqa: E402
from graders.harness.core.intake import discover  # noqa: E402
from graders.harness.core.notebook import new_notebook  # noqa: E402

pytest.importorskip("copydetect")

EX02, EX04 = "ex02_self_attention", "ex04_multi_head_attention"
KEEP = set(dir(builtins)) | {"torch", "nn", "F", "math", "self", "super", "forward", "__init__"}


def renamed(source: str, exported: set[str]) -> str:
    """`source` with every name it defines or uses renamed (but those the grader calls: `exported`,
    and the libraries'), and every comment rewritten: what a student hiding a copy would do."""
    names: dict[str, str] = {}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        word = tok.string
        if tok.type == tokenize.NAME and not keyword.iskeyword(word) and word not in KEEP | exported:
            tok = tok._replace(string=names.setdefault(word, f"my_{len(names)}"))
        elif tok.type == tokenize.COMMENT:
            tok = tok._replace(string="# my own work")
        out.append(tok)
    return tokenize.untokenize(out)


def code(exercise: str) -> dict[str, str]:
    ref = PROJECT.reference_path(exercise).read_text(encoding="utf-8")
    exported = {"scaled_dot_product_attention", "SimpleSelfAttention", "MultiHeadAttention"}
    exported |= {"query", "key", "value", "out_proj", "q_proj", "k_proj", "v_proj", "embed_dim", "num_heads"}
    prefix = "EX02_" if exercise == EX02 else "EX04_"
    others = {n.lower(): c for n, c in vars(alternatives).items() if n.startswith(prefix) and "\n" in str(c)}
    stub = PROJECT.template_path(exercise).read_text(encoding="utf-8")
    return {
        "ref": ref,
        "copy": renamed(ref, exported),
        **others,
        "stub": stub,
        "stub2": stub + "\n# started\n",
    }


@pytest.mark.parametrize("exercise", [EX02, EX04])
def test_a_renamed_copy_is_found_and_independent_solutions_are_not(exercise):
    codes = code(exercise)
    assert codes["copy"] != codes["ref"] and len([n for n in codes if n.startswith("ex0")]) >= 2
    starter = PROJECT.template_path(exercise).read_text(encoding="utf-8")
    found = {(a, b): (sa, sb) for a, b, sa, sb, *_ in S.compare(codes, starter, S.THRESHOLD)}
    assert list(found) == [("copy", "ref")], found
    assert min(found[("copy", "ref")]) > 0.9
    every = {(a, b): max(sa, sb) for a, b, sa, sb, *_ in S.compare(codes, starter, 0.01)}
    assert not any("stub" in a or "stub" in b for a, b in every)  # starter code is never shared
    assert max(v for k, v in every.items() if k != ("copy", "ref")) < S.THRESHOLD - 0.1  # the margin


def test_the_class_report_lists_the_pairs_in_both_languages_and_analytics_carries_them(tmp_path):
    root = tmp_path / "subs"
    for name, text in code(EX02).items():
        (root / name).mkdir(parents=True)
        (root / name / f"{EX02}.py").write_text(text, encoding="utf-8")
    found = S.run(discover(root), PROJECT, [EX02], tmp_path / "out", "en")
    assert [(p.a, p.b) for p in found.pairs] == [("copy", "ref")] and found.compared[EX02] == len(code(EX02))
    assert S.load(tmp_path / "out") == found
    view = (tmp_path / "out" / found.pairs[0].view).read_text(encoding="utf-8")
    assert "<mark>" in view and "my_0" in view
    for lang, title in (("en", "Code similarity"), ("zh", "代码相似度")):
        figures = analytics.analyse([], PROJECT.load_manifests([EX02]), 1, lang, similarity=found)
        html = analytics.render_html(figures)
        assert title in html and 'href="similarity/ex02_self_attention-1.html"' in html
        assert "100% / 100%" in html
        assert json.loads(figures.model_dump_json())["similarity"]["pairs"][0]["a"] == "copy"
    plain = analytics.render_html(analytics.analyse([], PROJECT.load_manifests([EX02]), 1, "en"))
    assert "Code similarity" not in plain  # the section appears only when asked for


@PROPERTY
@given(TEXT)
def test_the_side_by_side_page_holds_student_code_as_text(tmp_path_factory, inserted):
    root = tmp_path_factory.mktemp("subs")
    ref = PROJECT.reference_path(EX02).read_text(encoding="utf-8")
    hostile = ref.replace("import math", f"import math\nNOTE = {inserted!r}  # {inserted}", 1)
    for name, text in (("a", hostile), ("b", hostile + f"\n# {inserted}\n")):
        (root / name).mkdir()
        (root / name / f"{EX02}.py").write_text(text, encoding="utf-8", errors="surrogatepass")
    out = tmp_path_factory.mktemp("out")
    found = S.run(discover(root), PROJECT, [EX02], out, "zh")
    assert len(found.pairs) == 1
    page = (out / found.pairs[0].view).read_text(encoding="utf-8")
    assert inert_check.html_problems(page, inert_check.HTML_TAGS | {"mark"}, "similarity page") == []
    assert not inert_check.ACTIVE_TEXT.search(inert_check.visible_text(page))


@pytest.mark.slow
def test_batch_with_similarity_reads_folders_notebooks_and_zips(tmp_path):
    subs = tmp_path / "subs"
    codes = code(EX02)
    (subs / "ada").mkdir(parents=True)
    (subs / "ada" / f"{EX02}.py").write_text(codes["ref"], encoding="utf-8")
    (subs / "bob.ipynb").write_text(new_notebook([("code", codes["copy"], [EX02])]), encoding="utf-8")
    with zipfile.ZipFile(subs / "cy.zip", "w") as zf:
        zf.writestr(f"hw/{EX02}.py", codes["ex02_bmm"])
    out = tmp_path / "out"
    cmd = [sys.executable, str(PROJECT.root / "grade.py"), "batch", str(subs), "--out", str(out),
           "--jobs", "1", "--seed", "3", "--lang", "zh", "--exercise", EX02, "--similarity"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    pairs = json.loads((out / "analytics.json").read_text(encoding="utf-8"))["similarity"]["pairs"]
    assert [(p["a"], p["b"]) for p in pairs] == [("ada", "bob")]
    report = (out / "class_report.html").read_text(encoding="utf-8")
    assert "代码相似度" in report and (out / pairs[0]["view"]).is_file()
    again = [sys.executable, str(PROJECT.root / "grade.py"), "similarity", str(subs), "--out", str(out),
             "--threshold", "0.2"]  # fmt: skip
    proc = subprocess.run(again, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    pairs = json.loads((out / "analytics.json").read_text(encoding="utf-8"))["similarity"]["pairs"]
    assert ("ada", "bob") in [(p["a"], p["b"]) for p in pairs] and len(pairs) >= 2  # bmm shares ~30%


def test_similarity_of_a_folder_that_is_not_a_batch_is_refused(tmp_path, capsys):
    from graders.harness.cli import main

    (tmp_path / "subs").mkdir()
    assert main(["similarity", str(tmp_path / "subs"), "--out", str(tmp_path / "nothing")]) == 2
    assert "not the results folder of a batch" in capsys.readouterr().err
