"""Student-controlled text as inert data: names, messages and printed output, in every output format.

A submission controls the text of its exceptions, what it prints, and (in a batch) the names of its
folders and zip members. None of it may act on what displays it. Two layers:

* `clean` (applied to every string of a report when it is built, see `bounds.bound_report`): lone
  surrogates become U+FFFD, and every control character except newline and tab (C0, DEL, C1, the
  bidirectional overrides of "Trojan source", line and paragraph separators, XML's non-characters)
  is replaced by a visible escape (``\\x1b``, ``\\u202e``). The result is valid UTF-8, valid XML 1.0
  text, and carries no terminal escape: a report holds nothing active before any format sees it.
* per format, on top: HTML through Jinja's autoescape; Markdown through `markdown` / `markdown_code`
  (every character Markdown or HTML would act on is escaped; code goes in a fence longer than any
  run of backticks it holds); terminal through `terminal`; CSV quoting in `formats.gradebook`.

Names of files and folders may hold any bytes the file system allows. `display_name` shows them on
one line (undecodable bytes as ``\\xfc``); `student_key` turns one into the key a batch files its
results under: printable, valid UTF-8, short enough for any file name, and one-to-one (a backslash
is escaped too, and a long name keeps a digest of the whole), so two students never share a row.
"""

from __future__ import annotations

import hashlib
import os
import re

# C0 but tab and newline, DEL, C1, bidi embeddings/overrides/isolates, line/paragraph separators,
# surrogates (only lone ones can occur in a str), and the XML non-characters U+FFFE, U+FFFF.
_ACTIVE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)
_SURROGATE = re.compile("[\ud800-\udfff]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~=:^$])")
_BACKTICKS = re.compile("`+")
MAX_KEY_BYTES = 120


def _escape(match: re.Match) -> str:
    char = match.group()
    if "\ud800" <= char <= "\udfff":
        return "\ufffd"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """`text` with every control character shown as an escape and lone surrogates replaced."""
    return _ACTIVE.sub(_escape, text)


def single_line(text: str) -> str:
    """`clean`, and newlines and tabs escaped too: for names and one-line fields."""
    return clean(text).replace("\n", "\\n").replace("\t", "\\t")


def display_name(name: str) -> str:
    """A file or folder name as read from the file system (undecodable bytes as surrogate escapes,
    see `os.fsdecode`), shown on one line with those bytes as ``\\xNN``."""
    raw = os.fsencode(name) if _SURROGATE.search(name) else None
    if raw is not None:
        name = raw.decode("utf-8", "backslashreplace")
    return single_line(name)


def student_key(name: str) -> str:
    """The one-to-one, printable, file-name-safe key of a submission named `name`."""
    raw = os.fsencode(name)
    text = raw.decode("utf-8", "surrogateescape").replace("\\", "\\\\")
    key = single_line(
        _SURROGATE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    )  # surrogateescape: U+DC80..U+DCFF stand for the bytes 0x80..0xFF
    if len(key.encode()) <= MAX_KEY_BYTES:
        return key
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = key.encode()[: MAX_KEY_BYTES - 20].decode("utf-8", "ignore")
    return f"{head}~{digest}"


def terminal(text: str) -> str:
    """Text for a terminal: nothing that a terminal would run (escape sequences, carriage returns)."""
    return clean(text)


def markdown(text: str, inline: bool = False) -> str:
    """Text inside a Markdown paragraph (or a table cell when `inline`): shown, never acted on.

    HTML's characters become entities, every ASCII character that Markdown gives a meaning to at
    some position is backslash-escaped, and line breaks become hard breaks (spaces in a cell)."""
    text = clean(text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    lines = [line.strip() for line in text.replace("\t", " ").split("\n")]
    if inline:
        return " ".join(line for line in lines if line)
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\\\n".join(lines)  # a backslash at the end of a line: a hard line break


def markdown_code(text: str) -> str:
    """A fenced code block holding `text` verbatim: its fence is longer than any backtick run in it."""
    text = clean(text).rstrip("\n")
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"
