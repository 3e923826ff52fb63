"""Student-controlled text as inert data: names, messages and printed output, in every output format.

A submission controls the text of its exceptions, what it prints, and (in a batch) the names of its
folders and zip members. None of it may act on what displays it. Two layers:

* `clean` (applied to every string of a report when it is built, see `bounds.bound_report`): lone
  surrogates become U+FFFD, and every control character except newline and tab (C0, DEL, C1, the
  bidirectional overrides of "Trojan source", line and paragraph separators, XML's non-characters)
  is replaced by a visible escape (``\\x1b``, ``\\u202e``), and so is every invisible character
  (``\\u200b``, ``\\ufeff``, the tag block ``\\U000e0041``...). The result is valid UTF-8, valid XML 1.0
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
import unicodedata

# C0 but tab and newline, DEL, C1, bidi embeddings/overrides/isolates, line/paragraph separators,
# surrogates (only lone ones can occur in a str), and the XML non-characters U+FFFE, U+FFFF; and
# characters that show as nothing at all (zero-width space, word joiner and invisible operators,
# U+FEFF, soft hyphen, Hangul fillers, the deprecated format characters, interlinear annotations,
# the tag block U+E0000-U+E007F...): with them two different names, or a name and a blank, look the same.
INVISIBLE = (
    "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2060-\u2064\u206a-\u206f\u3164\ufeff"
    "\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
# Joiners and variation selectors take part in ordinary text (Persian, Indic scripts, emoji), so
# they stay in messages; in a name (`single_line`) they are shown escaped too.
NAME_INVISIBLE = "\u180b-\u180d\u180f\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef"
_ACTIVE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff" + INVISIBLE + "]"
)
_NAME_INVISIBLE = re.compile(f"[{NAME_INVISIBLE}]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~=:^$])")
_BACKTICKS = re.compile("`+")
MAX_KEY_BYTES = 120


def _escape(match: re.Match) -> str:
    return _escape_char(match.group())


def _escape_char(char: str) -> str:
    if "\ud800" <= char <= "\udfff":
        return "\ufffd"
    code = ord(char)
    if code > 0xFFFF:
        return f"\\U{code:08x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str) -> str:
    """`text` with every control character shown as an escape and lone surrogates replaced."""
    return _ACTIVE.sub(_escape, text)


def single_line(text: str) -> str:
    """`clean`, and newlines, tabs, joiners and variation selectors escaped too: for names and
    one-line fields."""
    text = _NAME_INVISIBLE.sub(_escape, clean(text))
    if not text.isprintable():  # any other format character (Unicode category Cf) there may be
        text = "".join(_escape_char(c) if unicodedata.category(c) == "Cf" else c for c in text)
    return text.replace("\n", "\\n").replace("\t", "\\t")


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
    if len(key.encode()) <= MAX_KEY_BYTES and "~" not in key:
        return key
    # A shortened key ends in `~` and a digest of the whole name; a name with a `~` of its own gets
    # one too, else a folder named like another's shortened key would share its key (and results).
    digest = hashlib.sha256(raw).hexdigest()[:16]
    head = key.encode()[: MAX_KEY_BYTES - 20].decode("utf-8", "ignore")
    return f"{head}~{digest}"


_FILE_CHAR = re.compile(r"[^\w.\-]")  # what a report's file name keeps: letters and digits of any
# script (CJK included), `_`, `.` and `-`; everything else (controls, spaces, invisible characters) is `_`
MAX_STEM_BYTES = 100


def file_stem(name: str) -> str:
    """A file name made from the folder name `name` (any bytes, see `display_name`): nothing a
    terminal, shell or file manager would act on or hide, never hidden (no leading dot), at most
    `MAX_STEM_BYTES` bytes. A name that had to change keeps a digest of the original, so that two
    folders never share a file."""
    raw = os.fsencode(name)
    text = raw.decode("utf-8", "replace")
    stem = _FILE_CHAR.sub("_", "".join(c if c.isprintable() else "_" for c in text)).lstrip(".") or "_"
    if stem == name and len(raw) <= MAX_STEM_BYTES:
        return stem
    head = stem.encode()[: MAX_STEM_BYTES - 9].decode("utf-8", "ignore")
    return f"{head}~{hashlib.sha256(raw).hexdigest()[:8]}"


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
