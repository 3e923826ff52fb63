"""Facts the harness states once: where a `SubmissionResult` is assembled, where the shared command-line
options are defined. Read from the source (`ast`), so a second copy fails here before it drifts."""

from __future__ import annotations

import ast
from pathlib import Path

HARNESS = Path(__file__).resolve().parent.parent / "graders" / "harness"


def calls(name: str, attribute: str | None = None, sources: dict[str, str] | None = None) -> dict[str, list]:
    """Every call of `name(...)` (or of `x.attribute(...)` whose first argument is `name`), by module."""
    if sources is None:
        sources = {str(p.relative_to(HARNESS)): p.read_text(encoding="utf-8") for p in HARNESS.rglob("*.py")}
    found: dict[str, list[ast.Call]] = {}
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            hit = (
                isinstance(func, ast.Name) and func.id == name
                if attribute is None
                else isinstance(func, ast.Attribute)
                and func.attr == attribute
                and bool(node.args)
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == name
            )
            if hit:
                found.setdefault(module, []).append(node)
    return found


def test_a_submission_result_is_assembled_only_in_its_own_module():
    """Everything else calls `SubmissionResult.graded` or `SubmissionResult.unscored`."""
    assert set(calls("SubmissionResult")) <= {"formats/result.py"}, sorted(calls("SubmissionResult"))


def test_the_call_reader_finds_a_call():
    source = {"m.py": 'r = SubmissionResult(status="graded")\np.add_argument("--lang", choices=[])\n'}
    assert list(calls("SubmissionResult", sources=source)) == ["m.py"]
    assert list(calls("--lang", attribute="add_argument", sources=source)) == ["m.py"]
    assert calls("--exercise", attribute="add_argument", sources=source) == {}


def test_exercise_and_lang_options_are_defined_once():
    for option in ("--exercise", "--lang"):
        found = calls(option, attribute="add_argument")
        assert set(found) == {"core/options.py"}, (option, sorted(found))
        assert len(found["core/options.py"]) == 1, option


def test_grading_settings_have_one_type():
    """What a command line decides (seed, language, exercises, call cap, hidden checks) travels as
    `settings.Settings`: no module declares its own settings type or carries a cap in a project."""
    declared = {}
    for path in HARNESS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (node.name.endswith("Settings") or "Capped" in node.name):
                declared.setdefault(node.name, []).append(str(path.relative_to(HARNESS)))
    assert declared == {"Settings": ["core/settings.py"]}
