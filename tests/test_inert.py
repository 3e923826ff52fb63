"""Names and strings are data, everywhere: property-based tests over every output format.

Hypothesis generates submission names (any bytes a file system allows), messages, tracebacks,
printed output and matrices (NaN and ±inf included); each report goes through the trusted side's
ingestion (`bounds.bound_report`, as `runner` builds it) and is rendered in every format, which
must parse, round-trip and carry no active content (tests/hostile/inert_check.py). Then real
batches over folders with hostile names: always exactly one gradebook row and one result each.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path

import html5lib
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import inert_check  # noqa: E402

from graders.harness.batch.progress import Progress  # noqa: E402
from graders.harness.core import inert  # noqa: E402
from graders.harness.core.bounds import bound_report, report_bound  # noqa: E402
from graders.harness.core.models import CheckResult, ExerciseResult, Heatmap, Report, Stopped  # noqa: E402
from graders.harness.core.project import default_project  # noqa: E402
from graders.harness.formats import gradebook  # noqa: E402
from graders.harness.formats.result import SubmissionResult  # noqa: E402

PROJECT = default_project()
EX = "ex02_self_attention"
MANIFEST = PROJECT.load_manifest(EX)

# text a student controls: anything, with the nasty parts made likely
NASTY = st.sampled_from(
    [
        "\x1b[2J",
        "\x1b]52;c;Zm9v\x07",
        "\x1b]0;title\x07",
        "\r",
        "\x00",
        "\x7f",
        "\x9b",
        "\u202e",
        "\u2028",
        "\ud800",
        "\udcfc",
        "\ufffe",
        "<img src=x onerror=alert(1)>",
        "<script>",
        "</pre>",
        "&amp;",
        "\n# Total",
        "\n===",
        "[x](javascript:alert(1))",
        "```",
        "~~~",
        "|",
        "\\",
        "*",
        "_",
        "=cmd|' /C calc'!A0",
        "\t",
        "\n",
        "javascript:",
        "\u0000\u0001",
        "<!--",
        "]]>",
        "\n    code",
        "> quote",
        "1. ",
        "- ",
        "<https://x>",
    ]
)
TEXT = st.lists(st.one_of(st.text(max_size=20), NASTY), max_size=12).map("".join)
CELL = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64), st.just(float("nan")))
MATRIX = st.integers(1, 4).flatmap(
    lambda n: st.lists(st.lists(CELL, min_size=n, max_size=n), min_size=1, max_size=4)
)
NAME_BYTES = st.binary(min_size=1, max_size=240).filter(
    lambda b: b"/" not in b and b"\0" not in b and not b.startswith(b".")
)
PROPERTY = settings(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def reports(draw) -> Report:
    checks = []
    for spec in MANIFEST.checks[:4]:
        status = draw(st.sampled_from(["passed", "failed", "error", "timeout", "not_implemented"]))
        diagnosis = draw(st.one_of(st.none(), TEXT))
        checks.append(
            CheckResult(
                id=spec.id,
                title=spec.title("en"),
                status=status,
                score=spec.points if status == "passed" else 0.0,
                max_score=spec.points,
                message=draw(TEXT),
                diagnosis="x" if diagnosis else None,
                diagnosis_message=diagnosis,
                student_traceback=draw(TEXT),
                heatmaps=[Heatmap(label="w", got=m, expected=m) for m in draw(st.lists(MATRIX, max_size=2))],
            )
        )
    exercise = ExerciseResult(
        id=EX,
        title=MANIFEST.title("en"),
        score=sum(c.score for c in checks),
        max_score=sum(c.max_score for c in checks),
        checks=checks,
        output=draw(TEXT),
        output_dropped=draw(st.integers(0, 10**6)),
        stopped=draw(
            st.one_of(
                st.none(),
                st.builds(
                    Stopped,
                    kind=st.sampled_from(["file", "crash", "timeout", "grader"]),
                    check=st.just(checks[0].id),
                    message=TEXT,
                ),
            )
        ),
    )
    name = os.fsdecode(draw(NAME_BYTES))
    report = Report(
        submission=f"/srv/{name}",
        score=exercise.score,
        max_score=exercise.max_score,
        seed=1,
        lang=draw(st.sampled_from(["en", "zh"])),
        exercises=[exercise],
    )
    return bound_report(report)  # what runner.build_report returns


@PROPERTY
@given(reports())
def test_every_format_parses_round_trips_and_carries_nothing_active(report):
    assert inert_check.problems(report) == []
    assert len(report.model_dump_json(indent=2).encode()) <= report_bound(1, len(report.exercises[0].checks))


@PROPERTY
@given(reports())
def test_a_stored_result_always_reloads(report):
    result = SubmissionResult.from_report(report)
    again = SubmissionResult.model_validate_json(result.model_dump_json(indent=1))
    assert again.model_dump_json() == result.model_dump_json()
    line = json.dumps({"result": json.loads(result.model_dump_json())})  # how a job sends it
    assert SubmissionResult.model_validate(json.loads(line)["result"]).student == result.student


@PROPERTY
@given(TEXT)
def test_markdown_text_renders_as_one_paragraph_of_the_same_text(text):
    html = MarkdownIt("commonmark").render(inert.markdown(text))
    tree = html5lib.parse(html, namespaceHTMLElements=False)
    body = tree.find("body")
    tags = {el.tag for el in body.iter()} - {"body"}
    assert tags <= {"p", "br"}, html
    shown = re.sub(r"\s+", " ", "".join(body.itertext())).strip()
    assert shown == re.sub(r"\s+", " ", inert.clean(text)).strip()


@PROPERTY
@given(TEXT)
def test_a_code_block_holds_the_text_verbatim(text):
    html = MarkdownIt("commonmark").render(inert.markdown_code(text))
    tree = html5lib.parse(html, namespaceHTMLElements=False)
    assert [el.tag for el in tree.find("body")] == ["pre"]
    assert "".join(tree.find("body").itertext()).rstrip("\n") == inert.clean(text).rstrip("\n")


@PROPERTY
@given(st.lists(NAME_BYTES, min_size=1, max_size=8, unique=True))
def test_student_keys_are_one_to_one_printable_and_fit_a_file_name(names):
    keys = [inert.student_key(os.fsdecode(n)) for n in names]
    assert len(set(keys)) == len(keys)
    for key in keys:
        assert key == inert.single_line(key) and not re.search(r"[\x00-\x1f\x7f-\x9f]", key)
        assert len(f".{key}.json.tmp-4194304".encode()) <= 255 and "/" not in key


@PROPERTY
@given(NAME_BYTES, st.integers(0, 300))
def test_no_folder_can_take_another_folder_s_key(name, pad):
    """A name is its own key only while short and free of `~`; a shortened key ends in `~` and a
    digest. So a folder named exactly like another's key (the unseen attack: a name over 120 bytes
    and a second folder named after its key, whose result replaced the first's) gets a key of its
    own."""
    long_name = os.fsdecode(name + b"v" * pad)
    key = inert.student_key(long_name)
    assert key == long_name or inert.student_key(key) != key
    assert inert.student_key(key) != key or "~" not in key


@PROPERTY
@given(st.lists(st.tuples(NAME_BYTES, TEXT), min_size=1, max_size=6, unique_by=lambda t: t[0]))
def test_gradebook_has_one_row_per_student_whatever_the_names(entries):
    results = [
        SubmissionResult(
            student=inert.student_key(os.fsdecode(name)),
            source=os.fsdecode(name),
            status="refused",
            problem="zip_bad",
            reason=reason,
            seed=1,
            lang="en",
            score=0.0,
            max_score=28.0,
        )
        for name, reason in entries
    ]
    text = gradebook.render(results, [MANIFEST])
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert sorted(r["student"] for r in rows) == sorted(gradebook.safe_cell(r.student) for r in results)
    for line in text.split("\r\n")[:-1]:  # no bare CR or LF outside a quoted field: one line per row
        assert "\r" not in line
    for row in rows:
        assert not row["student"].startswith(gradebook.FORMULA_START) and not row["reason"].startswith(
            ("=", "+", "@")
        )


@PROPERTY
@given(st.lists(NAME_BYTES, min_size=1, max_size=5, unique=True), st.booleans())
def test_progress_lines_are_one_line_each_with_nothing_active(names, bar):
    stream = io.StringIO()
    progress = Progress(len(names), 0, stream, bar=bar)
    for name in names:
        result = SubmissionResult(
            student=inert.student_key(os.fsdecode(name)),
            source="x",
            status="refused",
            problem="\x1b[2J" + os.fsdecode(name),
            seed=1,
            lang="en",
            score=0.0,
            max_score=1.0,
        )
        progress.advance(result)
    out = stream.getvalue()
    own = re.compile(r"\r|\x1b\[K") if bar else re.compile("$^")
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", own.sub("", out))
    if not bar:
        assert out.count("\n") == len(names)


# ---------------------------------------------------------------- invisible characters

ZERO_WIDTH = st.sampled_from(
    ["\u200b", "\u2060", "\u2063", "\ufeff", "\u180e", "\u00ad", "\u3164", "\U000e0041", "\U000e007f",
     "\U000e0001", "\u206f", "\ufff9"]
)  # fmt: skip
JOINERS = st.sampled_from(["\u200c", "\u200d", "\ufe0f", "\ufe00", "\U000e0100", "\u180b"])
INVISIBLE_RAW = re.compile(f"[{inert.INVISIBLE}]")
ORDINARY = st.text(
    st.characters(
        whitelist_categories=("Lu", "Ll", "Lo", "Nd", "Po", "Sm", "So", "Zs"),
        blacklist_characters="\u115f\u1160\u3164\uffa0\\",
    ),
    max_size=30,
)  # letters of any script (CJK included), digits, punctuation, symbols, spaces


@PROPERTY
@given(st.lists(st.one_of(ORDINARY, ZERO_WIDTH, JOINERS), max_size=10).map("".join))
def test_invisible_characters_are_shown_escaped_in_text_and_in_names(text):
    """Zero-width and tag characters are escaped as bidi controls are, in every text (before: raw in
    every format, so `al\u200bice` and `alice` looked the same); in names, joiners and variation
    selectors too, and any other format character."""
    assert not INVISIBLE_RAW.search(inert.clean(text))
    name = inert.single_line(text)
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in name), repr(name)
    assert not re.search(f"[{inert.NAME_INVISIBLE}]", name)


@PROPERTY
@given(ORDINARY)
def test_ordinary_text_of_any_script_is_left_as_it_is(text):
    assert inert.clean(text) == text and inert.single_line(text) == text == inert.display_name(text)


@PROPERTY
@given(ORDINARY.filter(bool), ZERO_WIDTH | JOINERS, st.integers(0, 30))
def test_two_names_that_differ_by_an_invisible_character_look_different(name, invisible, at):
    other = name[:at] + invisible + name[at:]
    assert inert.display_name(other) != inert.display_name(name)
    assert inert.student_key(other) != inert.student_key(name)


# ---------------------------------------------------------------- single mode: notices and the HTML copy

ANY_NAME = st.binary(min_size=1, max_size=240).filter(lambda b: b"/" not in b and b"\0" not in b)
FOLDER_NAMES = st.one_of(ANY_NAME, st.lists(st.one_of(TEXT, ZERO_WIDTH), max_size=6).map(
    lambda parts: "".join(parts).replace("/", "").replace("\0", "").encode("utf-8", "surrogatepass")
    if "".join(parts).replace("/", "").replace("\0", "") not in ("", ".", "..") else b"x"
))  # fmt: skip
NOTICE_ACTIVE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069{inert.INVISIBLE}]")


@PROPERTY
@given(st.lists(FOLDER_NAMES, min_size=1, max_size=6, unique=True))
def test_the_html_copy_of_a_single_grade_has_a_safe_file_name_and_inert_notice(names):
    """`grade.py DIR` in text mode saves `reports/<name>_report.html` and says where on stderr
    (before: the folder name went raw into both, so ESC, CR and LF reached the terminal)."""
    from graders.harness.cli import html_report_path, tell
    from graders.harness.core.i18n import say

    files = set()
    for raw in names:
        if raw in (b".", b".."):
            continue
        folder = Path(os.fsdecode(b"/srv/class/" + raw))
        path = html_report_path(PROJECT, folder)
        files.add(path.name)
        assert path.parent == PROJECT.root / "reports"
        assert re.fullmatch(r"[\w.\-~]+_report\.html", path.name) and path.name.isprintable(), path.name
        assert not path.name.startswith(".") and len(path.name.encode()) <= 255
        assert not any(unicodedata.category(c) in ("Cf", "Mn", "Cc", "Cs") for c in path.name)
        for lang in ("en", "zh"):
            stream = io.StringIO()
            tell(say("cli.html_report", path=folder / "x" / path.name), lang, stream)
            tell(say("cli.created", folder=folder), lang, stream)
            lines = stream.getvalue().split("\n")
            assert len(lines) == 3 and lines[-1] == "", lines  # one line each, whatever the name
            assert not NOTICE_ACTIVE.search(stream.getvalue()), stream.getvalue()
    assert len(files) == len([n for n in names if n not in (b".", b"..")])  # two folders never share a file


def test_a_usage_error_naming_a_hostile_folder_is_printed_inert(capsys, tmp_path):
    from graders.harness.cli import main

    folder = tmp_path / "\u202e82 :latoT\u200b\x1b[2J\n# Total 28 \r{{7*7}}"
    assert main([str(folder)]) != 0
    err = capsys.readouterr().err
    assert "no such folder" in err and err.count("\n") == 1 and not NOTICE_ACTIVE.search(err), repr(err)


# ---------------------------------------------------------------- real batches with hostile names

REFERENCE = PROJECT.reference_path(EX).read_bytes()
STUB = PROJECT.template_path(EX).read_bytes()
FIXED_NAMES = [
    b"m\xfcller",
    b"x" * 240,
    b'a\rb=HYPERLINK("evil")',
    b"\x1b[2J\x1b]0;owned\x07evil",
    b"<img src=x onerror=alert(1)>",
    b"=1+2",
    b"new\nline",
    b"tab\tname",
    "\u202eevil".encode(),
    ("\u00e9" * 110).encode(),
    b"back\\slash",
    b"m\\xfcller",
]


def run_batch(root: Path, names: list[bytes]) -> tuple[subprocess.CompletedProcess, Path]:
    subs, out = root / "subs", root / "out"
    os.makedirs(subs)
    for i, name in enumerate(names):
        path = os.path.join(os.fsencode(subs), name)
        if i % 4 == 3:  # some come as zips
            with open(path + b".zip", "wb") as raw, zipfile.ZipFile(raw, "w") as zf:
                zf.writestr(f"hw/{EX}.py", REFERENCE)
            continue
        os.mkdir(path)
        with open(os.path.join(path, f"{EX}.py".encode()), "wb") as fh:
            fh.write(REFERENCE if i % 2 == 0 else STUB)
    cmd = [
        sys.executable,
        str(PROJECT.root / "grade.py"),
        "batch",
        str(subs),
        "--out",
        str(out),
        "--exercise",
        EX,
        "--seed",
        "5",
        "--call-seconds",
        "1",
        "--jobs",
        "1",
        "--format",
        "junit",
        "--lang",
        "en",
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=600)
    return proc, out


def check_batch(proc: subprocess.CompletedProcess, out: Path, count: int) -> None:
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    results = sorted((out / "results").glob("*.json"))
    assert len(results) == count
    for path in results:
        SubmissionResult.model_validate_json(path.read_bytes())
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == count and len({r["student"] for r in rows}) == count
    assert json.loads((out / "analytics.json").read_text(encoding="utf-8"))["submissions"] == count
    assert (
        inert_check.html_problems(
            (out / "class_report.html").read_text(encoding="utf-8"),
            inert_check.HTML_TAGS | {"h2", "table", "th", "b", "div"},
            "class report",
        )
        == []
    )
    for path in (out / "junit").glob("*.xml"):
        import xml.etree.ElementTree as ET

        ET.fromstring(path.read_bytes())
    stderr = proc.stderr.decode("utf-8")  # valid UTF-8, and nothing active on the progress lines
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", stderr)


@pytest.mark.slow
def test_a_batch_of_hostile_names_gives_one_row_and_one_result_each(tmp_path):
    proc, out = run_batch(tmp_path, FIXED_NAMES)
    check_batch(proc, out, len(FIXED_NAMES))


@pytest.mark.slow
@settings(
    max_examples=1, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # noqa: E501
@given(st.lists(NAME_BYTES, min_size=2, max_size=5, unique=True))
def test_a_batch_of_generated_names_gives_one_row_and_one_result_each(tmp_path_factory, names):
    root = tmp_path_factory.mktemp("names")
    lowered = {n.lower().removesuffix(b".zip") for n in names}
    if len(lowered) != len(names):  # a folder "a" and a zip "a.zip" are two students already tested
        return
    proc, out = run_batch(root, names)
    check_batch(proc, out, len(names))
