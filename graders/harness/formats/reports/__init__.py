"""Render a `Report` as terminal text, HTML, Markdown or JSON. Every format comes from the one model.

HTML and Markdown go through Jinja templates (HTML with autoescape); JSON is the model itself.
In the terminal report, every line of a text that can hold a student's words (a check's message,
a traceback, what the code printed) starts with the gutter `GUTTER`, which the report never puts at
the start of a line of its own; names and one-line fields are shown on one line. So no student text
can make a line that `text_line_kind` (the report's own line grammar) reads as a check or a total.
Given the project, the HTML report also carries the statements of its exercises, rendered, and a
diagnosis links to the section of the statement that explains its mistake.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import jinja2
from markupsafe import Markup, escape

from ...core import inert
from ...core.i18n import labels
from ...core.models import Report
from ...core.project import Project
from ...core.statements import RenderedStatement, render_statement

TEMPLATES = Path(__file__).with_name("templates")
GUTTER = "\u2502 "  # "│ ": before every line of quoted text in the terminal report
MARKS = "✔✘!⏱…"
_CHECK_LINE = re.compile(rf"^  \S*[{MARKS}]\S* .*\(\S+/\S+, [^)]*\)\S*$")
_CAUSE_LINE = re.compile(r"^  \S*✘ .*\[[^\]]+\]\S*$")
_EXERCISE_LINE = re.compile(r"^\S.*  \[\S+ / \S+\]$")
FORMATS = ("text", "html", "md", "json")

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=jinja2.select_autoescape(["html.j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)


def _fmt(value: float) -> str:
    return f"{value:g}"


def _cell_color(value: float, low: float, high: float) -> str:
    """A cell's colour on the matrix's scale; NaN and ±inf (a student's matrix may hold them) grey."""
    if not math.isfinite(value):
        return "rgb(200,200,200)"
    low, high = (low, high) if math.isfinite(low) and math.isfinite(high) else (0.0, 1.0)
    # Halved so that a span near ±1.8e308 does not overflow to inf (inf / inf would be NaN).
    span = high / 2 - low / 2
    t = 0.0 if span <= 0 else (value / 2 - low / 2) / span
    t = min(max(t, 0.0), 1.0) if math.isfinite(t) else 0.0
    r, g, b = int(255 - 200 * t), int(255 - 120 * t), int(255 - 40 * t)
    return f"rgb({r},{g},{b})"


CODE_SPAN = re.compile(r"`([^`\n]+)`")


def _code_spans(text: str) -> Markup:
    """Plain text, escaped, with `code` shown as code (the only markup a message carries)."""
    return Markup(CODE_SPAN.sub(r"<code>\1</code>", str(escape(text))))


def _quoted(text: str, indent: str) -> str:
    """Student-controlled text, one or more lines, each behind `indent` and the gutter."""
    return "\n".join(f"{indent}{GUTTER}{line}" for line in inert.terminal(text).split("\n"))


def text_line_kind(line: str, total_label: str) -> str:
    """What a line of the terminal report is, read by the report's own grammar: "check", "cause",
    "total", "exercise", "quoted" (behind the gutter) or "other" (titles, labels, blank lines).
    `total_label` is the report language's word for the total (`labels(lang).report.total`)."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)  # the report's own colours
    if line.lstrip(" ").startswith(GUTTER):
        return "quoted"
    if line.startswith(f"{total_label}: "):
        return "total"
    if _CAUSE_LINE.match(line) and not _CHECK_LINE.match(line):
        return "cause"
    if _CHECK_LINE.match(line):
        return "check"
    if _EXERCISE_LINE.match(line):
        return "exercise"
    return "other"


_env.filters["pts"] = _fmt
_env.filters["code_spans"] = _code_spans
# Student-controlled text is data (see `inert`): each format's template applies its own filter.
_env.filters["term"] = inert.terminal
_env.filters["term_line"] = inert.single_line
_env.filters["quoted"] = _quoted
_env.filters["md"] = inert.markdown
_env.filters["md_cell"] = lambda text: inert.markdown(text, inline=True)
_env.filters["md_code"] = inert.markdown_code
_env.globals["cell_color"] = _cell_color


def render(report: Report, fmt: str, color: bool = False, project: Project | None = None) -> str:
    """`report` as `fmt`; with `project`, the report is titled with its course and an HTML report
    also holds the exercises' statements."""
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    template = _env.get_template(
        {"text": "report.txt.j2", "html": "report.html.j2", "md": "report.md.j2"}[fmt]
    )
    statements: dict[str, RenderedStatement] = {}
    if project is not None and fmt == "html":
        for exercise in report.exercises:
            rendered = render_statement(project, exercise.id, report.lang)
            if rendered is not None:
                statements[exercise.id] = rendered
    course = project.course().title(report.lang) if project is not None else ""
    return template.render(r=report, t=labels(report.lang), color=color, statements=statements, course=course)


def json_schema() -> str:
    """The JSON Schema of the JSON report, generated from the pydantic models."""
    return json.dumps(Report.model_json_schema(), indent=2, ensure_ascii=False) + "\n"
