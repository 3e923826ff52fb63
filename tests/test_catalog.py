"""The one catalogue of user-facing text (`i18n.CATALOG`): every key namespaced and in both
languages with the same placeholders; every key the code or a template names exists; no key is
unused. Keys are found by reading the source (`ast`) and the templates, never by running them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graders.harness.core.i18n import CATALOG, LANGS, labels, say

ROOT = Path(__file__).resolve().parent.parent
I18N = ROOT / "graders" / "harness" / "core" / "i18n.py"  # the catalogue itself names every key
CODE = [p for p in (*(ROOT / "graders").rglob("*.py"), ROOT / "grade.py") if p != I18N]
TEMPLATES = sorted((ROOT / "graders" / "harness" / "formats" / "reports" / "templates").glob("*.j2"))
NAMESPACES = {key.split(".")[0] for key in CATALOG}
KEY = re.compile(r"^[a-z_]+(\.[a-z_]+)+$")
PLACEHOLDER = re.compile(r"\{(\w+)[^{}]*\}")
CHINESE = re.compile(r"[\u3400-\u9fff]")
# `t.report.total`, `t.report.status[k.status]`; `.format` is str's, not a key
TEMPLATE_REF = re.compile(r"\bt\.((?:[a-z_]+\.)*[a-z_]+)(\[)?")


def names_in_code(paths: list[Path]) -> tuple[set[str], set[str]]:
    """(every string constant, every f-string's constant head that ends in a dot) in `paths`."""
    constants: set[str] = set()
    heads: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                constants.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values:
                head = node.values[0]
                if isinstance(head, ast.Constant) and str(head.value).endswith("."):
                    heads.add(str(head.value))
    return constants, heads


def names_in_templates(paths: list[Path]) -> tuple[set[str], set[str]]:
    """(keys a template reads, namespaces it indexes with a value known only when it renders)."""
    keys: set[str] = set()
    indexed: set[str] = set()
    for path in paths:
        for match in TEMPLATE_REF.finditer(path.read_text(encoding="utf-8")):
            name = match.group(1).removesuffix(".format")
            if name.split(".")[0] not in NAMESPACES:
                continue
            (indexed if match.group(2) else keys).add(name)
    return keys, indexed


CONSTANTS, HEADS = names_in_code(CODE)
TEMPLATE_KEYS, TEMPLATE_INDEXED = names_in_templates(TEMPLATES)
# namespaces whose last part comes from data: `say(f"lms.problem.{problem}")`, `t.report.status[...]`
DYNAMIC = {head.removesuffix(".") for head in HEADS if head.split(".")[0] in NAMESPACES} | TEMPLATE_INDEXED


def is_key_reference(text: str) -> bool:
    return bool(KEY.match(text)) and text.split(".")[0] in NAMESPACES and not text.endswith(FILE_SUFFIXES)


FILE_SUFFIXES = (".html", ".json", ".csv", ".md", ".txt", ".xml", ".j2", ".py", ".ipynb", ".toml")


@pytest.mark.parametrize("key", sorted(CATALOG))
def test_every_key_is_namespaced_and_in_both_languages(key):
    assert KEY.match(key), f"{key!r}: keys are `namespace.name`, lower case"
    entry = CATALOG[key]
    assert set(entry) == set(LANGS), f"{key}: languages {sorted(entry)}"
    for lang in LANGS:
        assert entry[lang].strip(), f"{key} has no {lang} text"
    assert CHINESE.search(entry["zh"]), f"{key}: the zh text has no Chinese character"
    zh, en = set(PLACEHOLDER.findall(entry["zh"])), set(PLACEHOLDER.findall(entry["en"]))
    assert zh == en, f"{key}: zh uses {sorted(zh)}, en {sorted(en)}"


def test_no_key_is_also_a_namespace():
    """`report.status` cannot be a sentence and the namespace of `report.status.passed` at once."""
    clashes = [key for key in CATALOG if any(other.startswith(key + ".") for other in CATALOG)]
    assert clashes == []


def test_every_key_the_code_names_exists():
    named = {text for text in CONSTANTS if is_key_reference(text)}
    assert named, "the reader of the source found no key at all"
    assert sorted(named - set(CATALOG)) == []


def test_every_key_a_template_reads_exists():
    assert TEMPLATE_KEYS, "the reader of the templates found no key at all"
    assert sorted(TEMPLATE_KEYS - set(CATALOG)) == []
    for namespace in TEMPLATE_INDEXED:
        assert any(key.startswith(namespace + ".") for key in CATALOG), namespace


def used(key: str) -> bool:
    namespace, _, name = key.rpartition(".")
    return key in CONSTANTS or key in TEMPLATE_KEYS or (namespace in DYNAMIC and name in CONSTANTS)


def test_no_key_is_unused():
    assert {"lms.problem", "report.status", "report.level"} <= DYNAMIC
    assert sorted(key for key in CATALOG if not used(key)) == []


def test_the_usage_reader_tells_a_used_key_from_an_unused_one():
    assert used("report.total") and used("lms.problem.zip_bad") and used("check.not_tensor")
    assert not used("report.no_such_label") and not used("lms.problem.no_such_problem")


def test_say_fills_in_both_languages_and_labels_nest_by_namespace():
    text = say("lms.problem.no_files", expected="ex01.py")
    assert "ex01.py" in text("zh") and "ex01.py" in text("en") and text("zh") != text("en")
    for lang in LANGS:
        assert labels(lang).report.status.passed == CATALOG["report.status.passed"][lang]
        assert labels(lang).class_report.more == CATALOG["class_report.more"][lang]  # unformatted
    with pytest.raises(KeyError):
        say("no_such.key")
