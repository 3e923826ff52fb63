"""Exercise statements as reports show them: Markdown rendered to HTML, each heading an anchor.

A diagnosis names the statement section that explains its mistake (`section` in the manifest);
`anchor_for` finds the heading it means by the rule `validate` checks (the normalised section is
the heading, or part of it), so that a report can link "See … in the statement" to that heading.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt

from .i18n import Lang
from .project import Project


def normalise_heading(text: str) -> str:
    """A heading or section title as compared: no leading #s or numbering, case folded."""
    text = text.lstrip("#").strip().casefold()
    text = re.sub(r"^[\d.()\s]+", "", text)  # "3. The steps" -> "the steps"
    return text.strip(" .:：。")


def heading_lines(text: str) -> list[str]:
    """The normalised headings of a Markdown text."""
    return [normalise_heading(line) for line in text.splitlines() if line.startswith("#")]


def section_matches(section: str, heading: str) -> bool:
    """Does the (normalised) section title name this (normalised) heading?"""
    return section == heading or section in heading


@dataclass
class RenderedStatement:
    """One exercise's statement in one language, as HTML with an id on every heading."""

    html: str
    anchors: dict[str, str] = field(default_factory=dict)  # normalised heading -> element id

    def anchor_for(self, section: str | None) -> str | None:
        if not section:
            return None
        wanted = normalise_heading(section)
        return next((a for h, a in self.anchors.items() if section_matches(wanted, h)), None)


_markdown = MarkdownIt("commonmark", {"html": False}).enable("table")


def render_statement(project: Project, exercise_id: str, lang: Lang) -> RenderedStatement | None:
    """The statement of `exercise_id` in `lang`, rendered (None when the file is missing)."""
    path = project.statement_path(exercise_id, lang)
    if not path.is_file():
        return None
    tokens = _markdown.parse(path.read_text(encoding="utf-8"))
    anchors: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            title = normalise_heading(tokens[i + 1].content)
            slug = re.sub(r"[^\w]+", "-", title).strip("-") or str(i)
            anchor = f"statement-{exercise_id}-{slug}"
            token.attrSet("id", anchor)
            anchors.setdefault(title, anchor)
    return RenderedStatement(_markdown.renderer.render(tokens, _markdown.options, {}), anchors)
