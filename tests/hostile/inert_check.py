"""Is a report inert in every output format? Shared by the hostile suite and tests/test_inert.py.

`problems(report)` renders the report in every format a student, an instructor or an LMS reads and
returns what is wrong: a format that does not render or parse, a JSON that does not reload to the
same report, active content (terminal escapes other than the report's own colours, carriage
returns, HTML elements or attributes the template does not write, Markdown that becomes a link,
an image, raw HTML or an extra heading), and student text that does not come through as text.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import html5lib
from markdown_it import MarkdownIt

from graders.harness.core.models import Report
from graders.harness.formats import render as render_any
from graders.harness.formats.reports import CODE_SPAN

HTML_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "div", "span", "code", "details",
    "summary", "br", "section", "strong", "pre", "table", "caption", "tr", "th", "td", "tbody", "a",
}  # fmt: skip
MD_TAGS = {
    "h1",
    "h2",
    "p",
    "strong",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "blockquote",
    "br",
}
OWN_SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colours the text template itself writes
ACTIVE_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
XHTML = "{http://www.w3.org/1999/xhtml}"


def _tags(tree) -> list[ET.Element]:
    return list(tree.iter())


def html_problems(text: str, allowed: set[str], where: str) -> list[str]:
    out = []
    tree = html5lib.parse(text, namespaceHTMLElements=True)
    for el in _tags(tree):
        tag = el.tag.replace(XHTML, "") if isinstance(el.tag, str) else "?"
        if tag not in allowed and tag not in ("html", "head", "body"):
            out.append(f"{where}: element <{tag}>")
        for name, value in el.attrib.items():
            if name.lower().startswith("on") or "javascript:" in value.lower().replace(" ", ""):
                out.append(f"{where}: active attribute {name}={value[:40]!r}")
    return out


def visible_text(text: str) -> str:
    tree = html5lib.parse(text, namespaceHTMLElements=False)
    return "".join(tree.itertext())


def student_texts(report: Report, failed_only: bool = False) -> list[str]:
    return [
        c.message for e in report.exercises for c in e.checks
        if c.message and not (failed_only and c.status == "passed")
    ]  # fmt: skip


def problems(report: Report) -> list[str]:
    out: list[str] = []
    rendered: dict[str, str] = {}
    for fmt in ("text", "html", "md", "json", "gradescope", "prairielearn", "junit"):
        try:
            rendered[fmt] = render_any(report, fmt)
            rendered[fmt].encode("utf-8")
        except Exception as exc:  # noqa: BLE001 - any failure to render is the finding
            out.append(f"{fmt}: does not render: {type(exc).__name__}: {str(exc)[:200]}")
    if out:
        return out
    coloured = render_any(report, "text", color=True)
    for name, text in (("text", rendered["text"]), ("text (colour)", OWN_SGR.sub("", coloured))):
        if ACTIVE_TEXT.search(text):
            out.append(f"{name}: control character {ACTIVE_TEXT.search(text).group()!r}")
    out += html_problems(rendered["html"], HTML_TAGS, "html")
    md_html = MarkdownIt("commonmark").enable("table").render(rendered["md"])
    out += html_problems(md_html, MD_TAGS, "md")
    headings = re.findall(r"<h([12])>", md_html)
    if headings.count("1") != 1 or headings.count("2") != len(report.exercises):
        out.append(f"md: headings {headings} (one title and one per exercise expected)")
    reloaded = Report.model_validate_json(rendered["json"])
    if reloaded.model_dump_json() != report.model_dump_json():
        out.append("json: does not reload to the same report")
    for fmt in ("gradescope", "prairielearn"):
        data = json.loads(rendered[fmt])
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', json.dumps(data, ensure_ascii=False))
        if any(ACTIVE_TEXT.search(json.loads(f'"{s}"')) for s in strings):
            out.append(f"{fmt}: a control character in a string")
    junit = ET.fromstring(rendered["junit"].encode())
    junit_text = "".join(junit.itertext()) + " ".join(
        str(v) for el in junit.iter() for v in el.attrib.values()
    )
    html_text = visible_text(rendered["html"])
    for message in student_texts(report):
        probe = CODE_SPAN.sub(r"\1", message)[:60].strip()  # `code` in a message is shown as code
        if probe and probe not in html_text:
            out.append(f"html: message {probe!r} not shown as text")
    for message in student_texts(report, failed_only=True):  # JUnit says nothing of a passed check
        probe = message[:60].strip()
        if probe and probe not in junit_text:
            out.append(f"junit: message {probe!r} missing")
    return out
