"""Reports: reproducible, valid, self-contained, true to the shipped schema; `grade.py`'s exit codes.

In-process tests grade with the session pool; the command-line tests run `python grade.py` as a
subprocess inside a temporary build of the project (exercise 2 only, to keep them quick).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import html5lib
import jsonschema
import pytest
from conftest import EXERCISES, PROJECT, reference_files, template_files

from graders.harness.authoring.distribution import write_distribution
from graders.harness.cli import main
from graders.harness.core.project import ManifestError, Project
from graders.harness.formats.reports import json_schema, render

EX2 = "ex02_self_attention"
SCHEMA_FILE = PROJECT.root / "graders" / "harness" / "formats" / "report.schema.json"
XHTML = "{http://www.w3.org/1999/xhtml}"
SUBPROCESS_SECONDS = 180

# exercise 2 with the classic mistake: no 1/√d_k, so its weights differ from the expected ones
EX2_NO_SCALING = """\
import torch
import torch.nn as nn


def scaled_dot_product_attention(q, k, v):
    weights = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
    return weights @ v, weights


class SimpleSelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        return scaled_dot_product_attention(self.query(x), self.key(x), self.value(x))
"""


@pytest.fixture(scope="module")
def mixed_report(pool, tmp_path_factory):
    """A report over every exercise: stubs, exercise 2 wrong (diagnosis + heatmaps)."""
    from graders.harness.core.runner import grade

    folder = tmp_path_factory.mktemp("mixed") / "submission"
    folder.mkdir()
    for name, path in template_files().items():
        shutil.copyfile(path, folder / name)
    (folder / f"{EX2}.py").write_text(EX2_NO_SCALING, encoding="utf-8")
    return grade(PROJECT, folder, seed=20261129, lang="en", pool=pool)


def parse_html(text: str):
    return html5lib.HTMLParser(strict=True, namespaceHTMLElements=True).parse(text)


def visible_text(element) -> str:
    return " ".join("".join(element.itertext()).split())


# ---------------------------------------------------------------- reproducible


def test_same_submission_and_seed_give_the_same_report_twice(grade_files):
    files = {**reference_files(), f"{EX2}.py": EX2_NO_SCALING}
    first = grade_files(files, seed=77, lang="zh")
    second = grade_files(files, seed=77, lang="zh")
    assert first.model_dump() == second.model_dump()
    for fmt in ("text", "json", "html", "md"):
        assert render(first, fmt) == render(second, fmt), fmt
    other = grade_files(files, seed=78, lang="zh")
    assert render(other, "json") != render(first, "json")  # the seed matters, so the test above can fail


# ---------------------------------------------------------------- HTML


def test_html_is_valid_and_names_every_check(mixed_report):
    html = render(mixed_report, "html")
    document = parse_html(html)  # strict: raises on any parse error
    body_text = visible_text(document)
    for exercise in mixed_report.exercises:
        for check in exercise.checks:
            element = document.find(f".//{XHTML}div[@id='{exercise.id}-{check.id}']")
            assert element is not None, check.id
            text = visible_text(element)
            assert check.title in text and check.id in text
    assert f"{mixed_report.score:g} / {mixed_report.max_score:g}" in body_text


def test_reports_are_titled_with_the_course_of_the_project(mixed_report, tmp_path):
    course = PROJECT.course().title
    for fmt in ("text", "md", "html"):
        for lang in ("en", "zh"):
            report = mixed_report.model_copy(update={"lang": lang})
            assert f"{course(lang)} · {'Grading report' if lang == 'en' else '自动评分报告'}" in render(
                report, fmt, project=PROJECT
            )
    (tmp_path / "course.toml").write_text('title = { zh = "另一课", en = "Another lesson" }\n')
    assert "Another lesson · Grading report" in render(mixed_report, "text", project=Project(tmp_path))
    (tmp_path / "course.toml").write_text('title = "one language only"\n')
    with pytest.raises(ManifestError, match=r"course.toml: title: "):
        Project(tmp_path).course()


def test_html_is_self_contained(mixed_report):
    html = render(mixed_report, "html")
    document = parse_html(html)
    for element in document.iter():
        for attribute in ("src", "href", "srcset", "action", "data"):
            value = (element.get(attribute) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//")), (element.tag, value)
    assert document.find(f".//{XHTML}script[@src]") is None
    assert document.find(f".//{XHTML}link") is None
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html) and "@import" not in html


def test_html_shows_the_heatmap_of_exercise_2_weights(mixed_report):
    (ex2,) = [e for e in mixed_report.exercises if e.id == EX2]
    scaling = next(c for c in ex2.checks if c.id == "sdpa_scaling")
    assert scaling.status == "failed" and scaling.diagnosis == "no_scaling" and scaling.heatmaps
    heatmap = scaling.heatmaps[0]
    document = parse_html(render(mixed_report, "html"))
    element = document.find(f".//{XHTML}div[@id='{EX2}-sdpa_scaling']")
    tables = element.findall(f".//{XHTML}div[@class='heatmaps']/{XHTML}table")
    assert len(tables) == 2  # the student's weights beside the expected ones
    for table, matrix in zip(tables, (heatmap.got, heatmap.expected), strict=True):
        header, *rows = table.findall(f".//{XHTML}tr")
        cells = [[td.text for td in row.findall(f"{XHTML}td")] for row in rows]
        assert cells == [[f"{v:.2f}" for v in row] for row in matrix]
        # axes labelled: queries as rows, keys as columns
        assert [th.text for th in header.findall(f"{XHTML}th")][1:] == [
            f"k{j}" for j in range(len(matrix[0]))
        ]
        assert [row.find(f"{XHTML}th").text for row in rows] == [f"q{i}" for i in range(len(matrix))]
        assert "queries" in visible_text(table.find(f"{XHTML}caption"))
        assert all("background" in td.get("style", "") for row in rows for td in row.findall(f"{XHTML}td"))
    assert heatmap.got != heatmap.expected


@pytest.mark.parametrize(
    "row",
    [
        [1.7976931348623157e308, -9.9792015476736e291],  # the span overflows to inf
        [-1.7976931348623157e308, 1.7976931348623157e308],
        [float("nan"), float("inf"), -float("inf"), 0.5],
        [5e-324, 0.0],  # a span that halves to nothing
    ],
)
def test_heatmap_colours_any_float_matrix(row):
    from graders.harness.formats.reports import _cell_color

    low, high = min(row), max(row)
    for value in row:
        assert re.fullmatch(r"rgb\((\d{1,3}),(\d{1,3}),(\d{1,3})\)", _cell_color(value, low, high))


# ---------------------------------------------------------------- JSON and its schema


def test_shipped_schema_is_up_to_date():
    regenerate = f"python grade.py schema > {SCHEMA_FILE.relative_to(PROJECT.root)}"
    assert SCHEMA_FILE.is_file(), f"generate it: {regenerate}"
    assert SCHEMA_FILE.read_text(encoding="utf-8") == json_schema(), (
        "the Report model changed: python grade.py schema > graders/harness/formats/report.schema.json"
    )


def test_json_report_validates_against_the_shipped_schema(mixed_report):
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    data = json.loads(render(mixed_report, "json"))
    validator.validate(data)
    for key in ("score", "max_score", "seed", "lang", "exercises"):
        assert key in data
    check = data["exercises"][0]["checks"][0]
    assert {"id", "title", "status", "score", "max_score", "message", "diagnosis"} <= set(check)
    check["status"] = "passed with flying colours"
    assert not validator.is_valid(data)  # the schema constrains, it does not accept anything


# ---------------------------------------------------------------- grade.py as a command


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A runnable copy of the project with exercise 2 only."""
    root = tmp_path_factory.mktemp("course") / "project"
    write_distribution(PROJECT, root, "autograder", exercises=[EX2])
    return root


def run_grade(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LANG", "LC_ALL", "LANGUAGE")}
    return subprocess.run(
        [sys.executable, "grade.py", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_SECONDS,
    )


def test_first_run_creates_submission_and_fail_under_exits_1(course, tmp_path):
    root = tmp_path / "course"
    shutil.copytree(course, root)
    result = run_grade(root, "--format", "json", "--out", "stub.json", "--seed", "5", "--fail-under", "1")
    assert result.returncode == 1, result.stderr[-2000:]
    assert (
        "Created" in result.stderr and "student_template/" in result.stderr and "已根据" not in result.stderr
    )
    assert (root / "submission" / f"{EX2}.py").read_bytes() == (
        root / "student_template" / f"{EX2}.py"
    ).read_bytes()
    report = json.loads((root / "stub.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    assert report["score"] == 0 and report["seed"] == 5
    again = run_grade(root, "--format", "json", "--out", "stub2.json", "--seed", "5", "--fail-under", "0")
    assert again.returncode == 0 and "Created" not in again.stderr
    assert (root / "stub2.json").read_text(encoding="utf-8") == (root / "stub.json").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_stub_missing_from_submission_is_added_with_a_notice(course, tmp_path, capsys, lang):
    root = tmp_path / "course"
    shutil.copytree(course, root)
    (root / "submission").mkdir()  # made before this exercise existed (`grade.py new`, a new lesson)
    argv = ["--format", "json", "--out", str(tmp_path / "r.json"), "--seed", "2", "--lang", lang]
    assert main(argv, Project(root)) == 0
    err = capsys.readouterr().err.splitlines()
    added = {
        "en": f"Added {EX2}.py to {root / 'submission'} from student_template/: a new exercise to do.",
        "zh": f"已从 student_template/ 复制 {EX2}.py 到 {root / 'submission'}：这是新的练习。",
    }
    written = {"en": "report written to", "zh": "报告已写入"}
    assert err[0] == added[lang] and err[1].startswith(written[lang]) and len(err) == 2  # one language
    assert (root / "submission" / f"{EX2}.py").read_bytes() == (
        root / "student_template" / f"{EX2}.py"
    ).read_bytes()
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "not found" not in json.dumps(report)  # graded as the stub it now is
    assert main(argv, Project(root)) == 0
    assert "Added" not in capsys.readouterr().err


def test_a_missing_file_names_the_stub_to_copy(course, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "r.json"
    assert main([str(empty), "--format", "json", "--out", str(out), "--lang", "en"], Project(course)) == 0
    assert f"copy student_template/{EX2}.py into your submission folder" in out.read_text(encoding="utf-8")


def reference_submission(tmp_path: Path) -> Path:
    submission = tmp_path / "mine"
    submission.mkdir()
    shutil.copyfile(PROJECT.reference_path(EX2), submission / f"{EX2}.py")
    return submission


def test_format_md_and_out(course, tmp_path):
    out = tmp_path / "report.md"
    result = run_grade(
        course, str(reference_submission(tmp_path)), "--format", "md", "--out", str(out), "--seed", "9"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == "" and f"report written to {out}" in result.stderr
    text = out.read_text(encoding="utf-8")
    manifest = PROJECT.load_manifest(EX2)
    assert all(f"(`{check.id}`)" in text for check in manifest.checks)
    assert f"{manifest.max_score:g} / {manifest.max_score:g}" in text


def test_format_html_and_out(course, tmp_path, capsys):
    """The same path as the subprocess, in this process (a subprocess per format would be slow)."""
    out = tmp_path / "report.html"
    argv = [str(reference_submission(tmp_path)), "--format", "html", "--out", str(out), "--lang", "zh"]
    assert main(argv, Project(course)) == 0
    assert capsys.readouterr().out == ""
    document = parse_html(out.read_text(encoding="utf-8"))
    assert document.get("lang") == "zh-CN"
    text = visible_text(document)
    manifest = PROJECT.load_manifest(EX2)
    assert all(check.id in text and check.title.zh in text for check in manifest.checks)


def exit_status(argv: list[str], project: Project) -> int:
    try:
        return main(argv, project)
    except SystemExit as exc:  # argparse's exit on bad arguments
        return exc.code


@pytest.mark.parametrize(
    "args, says",
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["no/such/folder"], "no/such/folder: no such folder"),
        (["--format", "pdf"], "invalid choice: 'pdf'"),
        (["--exercise", "ex99_nothing"], "unknown exercise 'ex99_nothing'"),
    ],
)
def test_bad_usage_exits_2(course, capsys, args, says):
    assert exit_status(args, Project(course)) == 2
    assert says in capsys.readouterr().err


def test_bad_usage_from_the_command_line_has_no_traceback(course):
    result = run_grade(course, "no/such/folder")
    assert result.returncode == 2
    assert result.stderr == "error: no/such/folder: no such folder\n"


@pytest.mark.parametrize(
    "old, new, says",
    [
        (
            "points = 2",
            'points = "two"\ncolour = "red"',
            ["checks.0.points:", "checks.0.colour: Extra inputs"],
        ),
        ("[[checks]]", "[[checks]\n", ["not valid TOML"]),
    ],
)
def test_bad_manifest_exits_2_naming_file_and_field(course, tmp_path, capsys, old, new, says):
    root = tmp_path / "course"
    shutil.copytree(course, root)
    manifest = root / "exercises" / EX2 / "exercise.toml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    assert exit_status([str(root / "student_template")], Project(root)) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith(f"error: exercises/{EX2}/exercise.toml: ") for line in lines), lines
    for fragment in says:
        assert any(fragment in line for line in lines), (fragment, lines)


def test_every_exercise_is_in_the_reports(mixed_report):
    assert [e.id for e in mixed_report.exercises] == EXERCISES


# ---------------------------------------------------------------- one cause, shown once


def test_one_mistake_is_shown_once_above_its_checks_in_every_format(mixed_report):
    (ex2,) = [e for e in mixed_report.exercises if e.id == EX2]
    (cause,) = [c for c in ex2.causes if c.diagnosis == "no_scaling"]
    failed = [c for c in ex2.checks if c.diagnosis == "no_scaling"]
    assert cause.checks == [c.id for c in failed] and len(failed) >= 2
    assert cause.points == sum(c.max_score for c in failed)
    heading = f"one mistake, {len(failed)} checks, −{cause.points:g} points"
    text = render(mixed_report, "text")
    assert text.count(cause.message) == 1 and heading in text
    assert text.count("(the mistake [no_scaling] above)") == len(failed)
    assert heading in render(mixed_report, "md")
    data = json.loads(render(mixed_report, "json"))
    (ex2_json,) = [e for e in data["exercises"] if e["id"] == EX2]
    assert {"diagnosis": "no_scaling", "checks": cause.checks, "points": cause.points}.items() <= next(
        c for c in ex2_json["causes"] if c["diagnosis"] == "no_scaling"
    ).items()


def test_html_links_each_mistake_to_its_section_of_the_rendered_statement(mixed_report):
    document = parse_html(render(mixed_report, "html", project=PROJECT))
    ids = {element.get("id") for element in document.iter() if element.get("id")}
    box = document.find(f".//{XHTML}div[@id='{EX2}-cause-no_scaling']")
    assert box is not None
    links = [a.get("href") for a in box.iter(f"{XHTML}a")]
    statement_links = [h for h in links if h.startswith("#statement-")]
    assert statement_links and all(h[1:] in ids for h in links)  # every link lands somewhere
    target = next(e for e in document.iter() if e.get("id") == statement_links[0][1:])
    assert target.tag in {f"{XHTML}h{i}" for i in range(1, 7)} and "√d_k" in visible_text(target)
    check = document.find(f".//{XHTML}div[@id='{EX2}-sdpa_scaling']")
    assert any(a.get("href") == f"#{EX2}-cause-no_scaling" for a in check.iter(f"{XHTML}a"))


def test_html_shows_code_in_messages_as_code_and_nothing_else_as_markup(mixed_report):
    document = parse_html(render(mixed_report, "html"))
    messages = [p for p in document.iter(f"{XHTML}p") if p.get("class") == "message"]
    codes = [c.text for p in messages for c in p.iter(f"{XHTML}code")]
    assert "context" in codes or "weights" in codes  # `weights` has wrong values …
    assert not any("`" in visible_text(p) for p in messages)
