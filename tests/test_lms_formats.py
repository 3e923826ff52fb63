"""The LMS formats follow their specs' field rules, for real reports and for ungradable submissions.

Gradescope (autograder results.json) and PrairieLearn (external grader results.json) are checked
against JSON Schemas written here from their specifications, plus the rules a schema cannot say
(scores add up, hidden checks are `after_published`, score = points / max points). JUnit XML is
parsed with xml.etree and its structure and counts checked.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from conftest import PROJECT, reference_files, template_files

from graders.harness.cli import main
from graders.harness.formats import gradebook, gradescope, junit, prairielearn, result_of
from graders.harness.formats.result import SubmissionResult

EX = "ex02_self_attention"
MUTANTS = PROJECT.root / "tests" / "mutants" / EX

VISIBILITIES = ["hidden", "after_due_date", "after_published", "visible"]
OUTPUT_FORMATS = ["text", "html", "simple_format", "md", "ansi"]

GRADESCOPE_SCHEMA = {
    "type": "object",
    "anyOf": [{"required": ["score"]}, {"required": ["tests"]}],
    "properties": {
        "score": {"type": "number", "minimum": 0},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": OUTPUT_FORMATS},
        "test_output_format": {"enum": OUTPUT_FORMATS},
        "test_name_format": {"enum": OUTPUT_FORMATS},
        "visibility": {"enum": VISIBILITIES},
        "stdout_visibility": {"enum": VISIBILITIES},
        "extra_data": {"type": "object"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "name",
                    "score",
                    "max_score",
                    "status",
                    "output",
                    "output_format",
                    "visibility",
                    "tags",
                ],
                "additionalProperties": False,
                "properties": {
                    "score": {"type": "number", "minimum": 0},
                    "max_score": {"type": "number", "minimum": 0},
                    "status": {"enum": ["passed", "failed"]},
                    "name": {"type": "string", "minLength": 1},
                    "name_format": {"enum": OUTPUT_FORMATS},
                    "number": {"type": "string"},
                    "output": {"type": "string"},
                    "output_format": {"enum": OUTPUT_FORMATS},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "visibility": {"enum": VISIBILITIES},
                    "extra_data": {"type": "object"},
                },
            },
        },
        "leaderboard": {"type": "array"},
    },
    "additionalProperties": False,
}

PL_TEST = {
    "type": "object",
    "required": ["name", "description", "points", "max_points", "message", "output"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "points": {"type": "number", "minimum": 0},
        "max_points": {"type": "number", "minimum": 0},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "images": {"type": "array"},
    },
}
PRAIRIELEARN_SCHEMA = {
    "type": "object",
    "required": ["gradable", "message", "tests"],
    "additionalProperties": False,
    "properties": {
        "gradable": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "message": {"type": "string"},
        "output": {"type": "string"},
        "format_errors": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "tests": {"type": "array", "items": PL_TEST},
        "images": {"type": "array"},
    },
    "if": {"properties": {"gradable": {"const": True}}},
    "then": {"required": ["score"]},
    "else": {"required": ["format_errors"], "properties": {"format_errors": {"minItems": 1, "minLength": 1}}},
}


@pytest.fixture(scope="module")
def reports(pool, tmp_path_factory):
    """Real reports of exercise 2: the reference, the stub and one named mistake."""
    from graders.harness.core.runner import grade

    out = {}
    cases = {
        "reference": reference_files([EX]),
        "stub": template_files([EX]),
        "no_scaling": {f"{EX}.py": MUTANTS / "no_scaling.py"},
    }
    for name, files in cases.items():
        folder = tmp_path_factory.mktemp(name)
        for filename, source in files.items():
            (folder / filename).write_bytes(Path(source).read_bytes())
        out[name] = grade(PROJECT, folder, seed=7, lang="en", exercises=[EX], pool=pool)
    return out


REASON = "bad.zip: the entry '../x' points outside"


def refused(problem: str = "zip_traversal", reason: str = REASON) -> SubmissionResult:
    return SubmissionResult(
        student="mallory",
        source="mallory.zip",
        status="refused",
        problem=problem,
        reason=reason,
        seed=7,
        lang="en",
        score=0.0,
        max_score=28.0,
    )


# ---------------------------------------------------------------- Gradescope


@pytest.mark.parametrize("case", ["reference", "stub", "no_scaling"])
def test_gradescope_follows_the_spec(reports, case):
    report = reports[case]
    data = json.loads(gradescope.render(result_of(report)))
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    checks = [c for e in report.exercises for c in e.checks]
    assert len(data["tests"]) == len(checks)
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"])) == report.score
    for test, check in zip(data["tests"], checks, strict=True):
        assert 0 <= test["score"] <= test["max_score"] == check.max_score
        assert test["status"] == ("passed" if check.status == "passed" else "failed")
        assert test["visibility"] == ("after_published" if check.visibility == "hidden" else "visible")
        assert check.id in test["tags"] and EX in test["tags"]
    assert any(t["visibility"] == "after_published" for t in data["tests"]), "exercise 2 has hidden checks"


def test_gradescope_names_the_mistake(reports):
    data = json.loads(gradescope.render(result_of(reports["no_scaling"])))
    named = [t for t in data["tests"] if "no_scaling" in t["tags"]]
    assert named and all(t["status"] == "failed" and "√d_k" in t["output"] for t in named)


def test_gradescope_refused_submission_scores_zero_with_the_reason():
    data = json.loads(gradescope.render(refused()))
    jsonschema.validate(data, GRADESCOPE_SCHEMA)
    assert data["score"] == 0 and data["tests"] == []
    assert "points outside" in data["output"]


# ---------------------------------------------------------------- PrairieLearn


@pytest.mark.parametrize("case", ["reference", "stub", "no_scaling"])
def test_prairielearn_follows_the_spec(reports, case):
    report = reports[case]
    data = json.loads(prairielearn.render(result_of(report)))
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is True
    assert data["score"] == pytest.approx(report.score / report.max_score)
    assert sum(t["max_points"] for t in data["tests"]) == report.max_score
    assert sum(t["points"] for t in data["tests"]) == report.score
    assert len({t["name"] for t in data["tests"]}) == len(data["tests"])
    assert all(0 <= t["points"] <= t["max_points"] for t in data["tests"])


def test_prairielearn_submission_without_files_is_not_gradable(pool, tmp_path):
    from graders.harness.core.runner import grade

    empty = tmp_path / "empty"
    empty.mkdir()
    report = grade(PROJECT, empty, seed=7, lang="en", exercises=[EX], pool=pool)
    data = json.loads(prairielearn.render(result_of(report)))
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is False and "score" not in data
    assert any(f"{EX}.py" in e for e in data["format_errors"])


def test_prairielearn_refused_zip_is_not_gradable():
    data = json.loads(prairielearn.render(refused()))
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is False and data["format_errors"] == [refused().reason]


def test_prairielearn_stays_under_one_megabyte(reports):
    report = reports["stub"]
    huge = report.model_copy(
        update={"exercises": [e.model_copy(update={"output": "x" * 2_000_000}) for e in report.exercises]}
    )
    text = prairielearn.render(result_of(huge))
    assert len(text.encode()) <= prairielearn.MAX_BYTES
    jsonschema.validate(json.loads(text), PRAIRIELEARN_SCHEMA)


# ---------------------------------------------------------------- JUnit


def _count(suite: ET.Element, tag: str) -> int:
    return sum(1 for case in suite.iter("testcase") if case.find(tag) is not None)


@pytest.mark.parametrize("case", ["reference", "stub", "no_scaling"])
def test_junit_has_one_testcase_per_check_and_true_counts(reports, case):
    report = reports[case]
    root = ET.fromstring(junit.render(result_of(report)))
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [e.id for e in report.exercises]
    for suite, exercise in zip(suites, report.exercises, strict=True):
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == [c.id for c in exercise.checks]
        assert all(c.get("classname") == exercise.id for c in cases)
        for key, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
            assert int(suite.get(key)) == _count(suite, tag)
        assert int(suite.get("tests")) == len(cases)
        failed = {c.id for c in exercise.checks if c.status in ("failed", "timeout", "not_implemented")}
        assert {c.get("name") for c in cases if c.find("failure") is not None} == failed
        for case_el in cases:  # at most one outcome element, and no properties (strict schemas)
            assert len([x for x in case_el if x.tag in ("failure", "error", "skipped")]) <= 1
            assert case_el.find("properties") is None
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert float(props["score"]) == exercise.score and props["seed"] == "7"
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    assert int(root.get("failures")) == sum(int(s.get("failures")) for s in suites)


def test_junit_failure_carries_the_diagnosis(reports):
    root = ET.fromstring(junit.render(result_of(reports["no_scaling"])))
    typed = [f for f in root.iter("failure") if f.get("type") == "no_scaling"]
    assert typed and all("√d_k" in f.text for f in typed)


def test_junit_refused_submission_is_one_error():
    root = ET.fromstring(junit.render(refused()))
    (case,) = root.iter("testcase")
    error = case.find("error")
    assert error is not None and error.get("type") == "zip_traversal"
    assert root.get("errors") == "1" and root.get("failures") == "0"


def test_junit_survives_control_characters_in_student_output(reports):
    report = reports["stub"]
    noisy = report.model_copy(
        update={
            "exercises": [
                e.model_copy(update={"output": "bell\x07 nul\x00 esc\x1b"}) for e in report.exercises
            ]
        }
    )
    root = ET.fromstring(junit.render(result_of(noisy)))
    assert "bell" in root.find("testsuite/system-out").text


# ---------------------------------------------------------------- gradebook and the CLI


def test_gradebook_quotes_formula_cells_and_keeps_refused_rows(reports):
    manifests = PROJECT.load_manifests([EX])
    rows = [
        result_of(reports["reference"]).model_copy(update={"student": "=HYPERLINK(1)"}),
        refused(),
    ]
    lines = gradebook.render(rows, manifests).splitlines()
    assert lines[0] == f"student,status,{EX},total,max_total,seed,reason"
    assert lines[1].startswith("'=HYPERLINK(1),graded,28,28,28,7,")
    assert lines[2].startswith("mallory,refused,0,0,28,7,")


def test_single_submission_grading_writes_lms_formats(tmp_path):
    """`grade.py --format prairielearn` goes through the same renderer (one format: a run starts a zygote)."""
    fmt = "prairielearn"
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / f"{EX}.py").write_bytes(PROJECT.reference_path(EX).read_bytes())
    out = tmp_path / "results.out"
    assert (
        main(
            [str(folder), "--format", fmt, "--out", str(out), "--exercise", EX, "--seed", "3", "--lang", "en"]
        )
        == 0
    )
    data = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(data, PRAIRIELEARN_SCHEMA)
    assert data["gradable"] is True and data["score"] == 1.0


# ---------------------------------------------------------------- against the published specifications

GOLDEN = Path(__file__).parent / "golden"


def json_type(value) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}[
        type(value)
    ]


def gradescope_spec() -> dict:
    """The example, visibility options, statuses and formats, read from Gradescope's own text."""
    text = (GOLDEN / "gradescope_specs.md").read_text(encoding="utf-8")
    block = text.split("## Output format", 1)[1].split("```", 2)[1]
    block = re.sub(r"//[^\n]*", "", block)  # the example is annotated with // comments
    block = re.sub(r",(\s*[\]}])", r"\1", block)  # ... which leave trailing commas behind
    block = re.sub(r"(?<=[:\s])\.(\d)", r"0.\1", block)  # and `.926`
    visibility = text.split("### Controlling Test Case Visibility", 1)[1].split("###", 1)[0]
    formats = text.split("### Output String Formatting", 1)[1]
    status = text.split("### Test case status", 1)[1].split("###", 1)[0]
    return {
        "example": json.loads(block),
        "visibilities": re.findall(r"^- `(\w+)`(?: \(default\))?:", visibility, re.M),
        "formats": re.findall(r'^\* `"(\w+)"`', formats, re.M),
        "statuses": re.findall(r'`"(passed|failed)"`', status),
    }


def assert_keys_and_types(ours: dict, spec: dict, where: str) -> None:
    for key, value in ours.items():
        assert key in spec, f"{where}: {key!r} is not a field of the published format"
        assert json_type(value) == json_type(spec[key]), f"{where}.{key}: {json_type(value)}"


def test_the_gradescope_golden_file_reads_as_the_spec_says():
    spec = gradescope_spec()
    assert spec["visibilities"] == VISIBILITIES and sorted(spec["formats"]) == sorted(OUTPUT_FORMATS)
    assert sorted(set(spec["statuses"])) == ["failed", "passed"]
    assert {"score", "tests"} <= set(spec["example"]) and "max_score" in spec["example"]["tests"][0]


@pytest.mark.parametrize("case", ["reference", "stub", "no_scaling", "refused"])
def test_gradescope_results_use_only_what_gradescopes_spec_defines(reports, case):
    spec = gradescope_spec()
    result = refused() if case == "refused" else result_of(reports[case])
    data = json.loads(gradescope.render(result))
    assert_keys_and_types(data, spec["example"], "results")
    for key in ("visibility", "stdout_visibility"):
        assert data.get(key, "visible") in spec["visibilities"]
    for key in ("output_format", "test_output_format", "test_name_format"):
        assert data.get(key, "text") in spec["formats"]
    for test in data["tests"]:
        assert_keys_and_types(test, spec["example"]["tests"][0], "tests[]")
        assert (
            test["status"] in spec["statuses"] and test.get("visibility", "visible") in spec["visibilities"]
        )
        assert test.get("output_format", "text") in spec["formats"]
        # "passing" by Gradescope's default rule agrees with the status this project sets
        assert (test["score"] >= test["max_score"]) == (test["status"] == "passed")


@pytest.mark.parametrize("case", ["reference", "stub", "no_scaling", "refused"])
def test_prairielearn_results_use_only_what_prairielearns_docs_define(reports, case):
    example = json.loads((GOLDEN / "prairielearn_results_example.json").read_text(encoding="utf-8"))
    result = refused() if case == "refused" else result_of(reports[case])
    data = json.loads(prairielearn.render(result))
    documented = {**example, "format_errors": ["a string or an array of strings"]}
    assert_keys_and_types({k: v for k, v in data.items() if k != "format_errors"}, documented, "results")
    assert isinstance(data["gradable"], bool)
    if data["gradable"]:
        assert 0.0 <= data["score"] <= 1.0
    else:
        errors = data["format_errors"]
        assert isinstance(errors, str) or all(isinstance(e, str) for e in errors)
    for test in data.get("tests", []):
        assert_keys_and_types(test, example["tests"][1], "tests[]")
        assert 0 <= test["points"] <= test["max_points"]
