"""The terminal report keeps student text unmistakable: every line of it sits behind the gutter.

A student controls exception messages (and their class names), tracebacks, printed output, the
folder name and the parameters of a diagnosis. Hypothesis builds such texts out of copies of the
report's own lines ("  ✔ Output shapes  (2/2, passed)", "Total: 28 / 28", exercise headers) and
line breaks of every kind; the rendered report, read back by its own line grammar
(`reports.text_line_kind`), must have exactly its real check lines, one total and its exercise
headers, and the same skeleton as the same report with every student text replaced by "x".
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.harness.core.bounds import bound_report
from graders.harness.core.i18n import labels
from graders.harness.core.models import CheckResult, ExerciseResult, Report
from graders.harness.core.project import default_project
from graders.harness.formats.reports import GUTTER, render, text_line_kind

PROJECT = default_project()
EX = "ex02_self_attention"
MANIFEST = PROJECT.load_manifest(EX)
STATUSES = ["passed", "failed", "error", "timeout", "not_implemented"]

LOOK_ALIKES = st.sampled_from(
    [
        "  ✔ Output shapes  (2/2, passed)",
        "  ✘ Output shapes  (0/2, failed)",
        "✔ Rows sum to one  (1/1, passed)",
        "Total: 28 / 28",
        "总分: 28 / 28",
        "Total: 28 / 28    Seed: 1",
        "ex02_self_attention  Self-attention  [28 / 28]",
        "  ✘ One mistake behind 3 checks [no_scaling]",
        "\n",
        "\r\n",
        "\r",
        "\u2028",
        "\u0085",
        "\x0b",
        "\x0c",
        "\x1b[32m",
        "\x1b[0m",
        "\x1b[1A\x1b[2K",
        GUTTER,
        "  ",
        "\t",
    ]
)
TEXT = st.lists(st.one_of(LOOK_ALIKES, st.text(max_size=8)), max_size=10).map("".join)
PROPERTY = settings(
    deadline=None, database=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow]
)


def build(texts, statuses, lang: str, color: bool) -> Report:
    """A report of ex02's first four checks whose student texts are `texts` (a dict of lists)."""
    checks = []
    for i, (spec, status) in enumerate(zip(MANIFEST.checks[:4], statuses, strict=False)):
        checks.append(
            CheckResult(
                id=spec.id,
                title=spec.title(lang),
                status=status,
                score=spec.points if status == "passed" else 0.0,
                max_score=spec.points,
                message=texts["message"][i],
                diagnosis="no_scaling" if texts["diagnosis"][i] else None,
                diagnosis_message=texts["diagnosis"][i] or None,
                student_traceback=texts["traceback"][i],
            )
        )
    exercise = ExerciseResult(
        id=EX,
        title=MANIFEST.title(lang),
        score=sum(c.score for c in checks),
        max_score=sum(c.max_score for c in checks),
        checks=checks,
        output=texts["output"],
    )
    report = Report(
        submission=texts["name"], score=exercise.score, max_score=exercise.max_score, seed=1, lang=lang,
        exercises=[exercise],
    )  # fmt: skip
    return bound_report(report)


def blank(texts):
    return {
        k: ["x" if t else "" for t in v] if isinstance(v, list) else ("x" if v else "")
        for k, v in texts.items()
    }


def skeleton(text: str, lang: str) -> list[tuple[str, str]]:
    total = labels(lang).report.total
    return [(kind, line) for line in text.split("\n") if (kind := text_line_kind(line, total)) != "quoted"]


STUDENT_TEXTS = st.fixed_dictionaries(
    {
        "message": st.lists(TEXT, min_size=4, max_size=4),
        "traceback": st.lists(TEXT, min_size=4, max_size=4),
        "diagnosis": st.lists(TEXT, min_size=4, max_size=4),
        "output": TEXT,
        "name": TEXT.filter(bool),
    }
)


@PROPERTY
@given(
    STUDENT_TEXTS,
    st.lists(st.sampled_from(STATUSES), min_size=4, max_size=4),
    st.sampled_from(["en", "zh"]),
    st.booleans(),
)
def test_no_student_text_reads_as_a_check_line_or_a_total(texts, statuses, lang, color):
    report = build(texts, statuses, lang, color)
    text = render(report, "text", color=color)
    kinds = [text_line_kind(line, labels(lang).report.total) for line in text.split("\n")]
    assert kinds.count("check") == len(report.exercises[0].checks)
    assert kinds.count("total") == 1
    assert kinds.count("exercise") == len(report.exercises)
    plain = render(build(blank(texts), statuses, lang, color), "text", color=color)
    got, expected = skeleton(text, lang), skeleton(plain, lang)
    assert [k for k, _ in got] == [k for k, _ in expected]  # student text added no line of the report's own
    real = [line for kind, line in expected if kind in ("check", "total", "exercise")]
    assert [line for kind, line in got if kind in ("check", "total", "exercise")] == real


def test_a_message_with_a_copy_of_a_passed_line_stays_behind_the_gutter():
    texts = {
        "message": ["boom\n  ✔ Output shapes  (2/2, passed)\nTotal: 28 / 28", "", "", ""],
        "traceback": ["", "", "", ""],
        "diagnosis": ["", "", "", ""],
        "output": "Total: 28 / 28\n  ✔ Rows sum to one  (1/1, passed)",
        "name": "sub\nTotal: 28 / 28",
    }
    report = build(texts, ["failed", "failed", "failed", "failed"], "en", False)
    text = render(report, "text")
    lines = text.split("\n")
    assert [line for line in lines if line.startswith("Total")] == [
        "Total: 0 / 10    Seed (reproduce with --seed 1): 1"
    ]
    assert f"      {GUTTER}  ✔ Output shapes  (2/2, passed)" in lines
    assert f"    {GUTTER}Total: 28 / 28" in lines
    assert not any(text_line_kind(line, "Total") == "check" and "passed" in line for line in lines)
