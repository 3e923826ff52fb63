"""Jupyter notebook submissions: the code of an exercise taken out of a `.ipynb`, never run here.

A submission folder may hold, for an exercise `<id>`, the file `<id>.py` (always preferred), a
notebook `<id>.ipynb`, or a notebook with any other name whose cells are tagged for it. The
notebook is read as bytes (`student.read_submission_file`, capped at `MAX_NOTEBOOK_BYTES`),
parsed and validated with `nbformat` in this trusted process, and only its code cells' text is
kept: outputs, attachments and metadata other than tags are ignored, and nothing is executed.

Which cells make an exercise's code (one rule, applied the same everywhere):

* the code cells whose metadata `tags` hold the exercise id (``"tags": ["ex02_self_attention"]``,
  what `grade.py build student --notebook` writes), in notebook order;
* when no cell of a notebook carries any exercise tag, the notebook's code cells all count: a
  notebook `<id>.ipynb` for that exercise, a single other notebook for every exercise;
* once a notebook tags cells for some exercise, tags decide: an exercise without a tagged cell
  gets a message naming the notebook and the tag to add, as does an exercise tagged in two notebooks.

IPython syntax is dropped, line for line, so that every line keeps its place: a cell starting with
a cell magic (``%%time``) is left out whole; a line magic (``%matplotlib``) or shell line
(``!pip install``) becomes ``pass``. The code is compiled in the sandbox under a name of its own
(`Extracted.compile_name`), and whatever comes back mentioning it (syntax errors, tracebacks, the
line a check names) is translated to "lesson.ipynb, cell 7, line 3" (`Extracted.translate`):
cells are numbered from 1 in notebook order, Markdown cells included, as a reader counts them.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from . import inert
from .errors import SubmissionFileError
from .i18n import say
from .source import read_submission_file

SUFFIX = ".ipynb"
MAX_NOTEBOOK_BYTES = 16 << 20  # stored outputs (images) make notebooks large; they are never kept
MAX_CODE_BYTES = 1 << 20  # the code taken out of it: the cap of a `.py` file
MAX_CELLS = 5000


def _fault(key: str, **params) -> SubmissionFileError:
    return SubmissionFileError(say(key, **params))


@dataclass(frozen=True)
class Cell:
    number: int  # 1-based position in the notebook, every cell counted
    kind: str
    source: str
    tags: tuple[str, ...]


@dataclass
class Notebook:
    """A parsed notebook: its cells, nothing else (outputs dropped)."""

    name: str  # the file name as messages show it (inert)
    cells: list[Cell]

    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]

    def tagged(self, exercise_id: str) -> list[Cell]:
        return [c for c in self.code_cells() if exercise_id in c.tags]

    def tags_any(self, exercise_ids: list[str]) -> bool:
        return any(set(c.tags) & set(exercise_ids) for c in self.code_cells())


def parse_notebook(data: bytes, name: str) -> Notebook:
    """The cells of the notebook `data` (file `name`), or `SubmissionFileError` saying what is wrong."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise _fault("submission.notebook.too_large", file=name, cap=MAX_NOTEBOOK_BYTES)
    try:
        import nbformat
    except ImportError:
        raise _fault("submission.notebook.no_nbformat", file=name) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _fault(
            "submission.notebook.not_json", file=name, detail=f"not UTF-8 text at byte {exc.start}"
        ) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fault(
            "submission.notebook.not_json",
            file=name,
            detail=f"line {exc.lineno}, column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:
        raise _fault("submission.notebook.not_json", file=name, detail="nested too deeply") from None
    except ValueError as exc:  # valid JSON Python will not read: an integer of 4 301+ digits
        detail = str(exc).split(";")[0][:200]
        raise _fault("submission.notebook.not_json", file=name, detail=detail) from None
    if not isinstance(raw, dict) or not isinstance(raw.get("nbformat"), int):
        raise _fault(
            "submission.notebook.not_notebook", file=name, detail='no "nbformat" version at its top level'
        )
    if raw["nbformat"] not in (3, 4):
        raise _fault(
            "submission.notebook.not_notebook",
            file=name,
            detail=f"unsupported format version {raw['nbformat']}",
        )
    try:
        nb = nbformat.reader.reads(text)  # nbformat.reads would log its validation errors: said below
        nb = nbformat.convert(nb, 4)
        nbformat.validate(nb)
    except nbformat.ValidationError as exc:
        detail = str(getattr(exc, "message", exc)).splitlines()[0][:200]
        raise _fault(
            "submission.notebook.not_notebook", file=name, detail=f"it does not follow the format ({detail})"
        ) from None
    except (nbformat.reader.NotJSONError, nbformat.NBFormatError) as exc:
        raise _fault("submission.notebook.not_notebook", file=name, detail=str(exc)[:200]) from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        detail = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise _fault("submission.notebook.not_notebook", file=name, detail=detail) from None
    if len(nb.cells) > MAX_CELLS:
        raise _fault("submission.notebook.not_notebook", file=name, detail=f"more than {MAX_CELLS} cells")
    cells = []
    for number, cell in enumerate(nb.cells, 1):
        tags = cell.get("metadata", {}).get("tags", [])
        tags = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
        cells.append(Cell(number, str(cell.cell_type), str(cell.source), tags))
    return Notebook(name, cells)


# ---------------------------------------------------------------- the code of one exercise

MAGIC_LINE = re.compile(r"^(\s*)(%|!)")
CELL_MAGIC = re.compile(r"^\s*%%")


@dataclass
class Extracted:
    """The code of one exercise taken out of a notebook, with where each line came from."""

    notebook: str  # the file name as messages show it
    exercise: str
    source: bytes
    lines: list[tuple[int, int]] = field(default_factory=list)  # generated line - 1 -> (cell, line)
    cells: list[int] = field(default_factory=list)  # the cells used

    @property
    def compile_name(self) -> str:
        """The name the sandbox compiles it under: one per exercise, never a file of the submission."""
        return f"{self.notebook}[{self.exercise}]"

    @property
    def display(self) -> str:
        return self.notebook

    def read(self) -> bytes:
        return self.source

    def cell_line(self, line: int) -> tuple[int, int] | None:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else None

    def place(self, line: int) -> str:
        """ "lesson.ipynb, cell 7, line 3" for line `line` of the generated source."""
        at = self.cell_line(line)
        return f"{self.notebook}, cell {at[0]}, line {at[1]}" if at else self.notebook

    def translate(self, text: str) -> str:
        """`text` with every mention of a generated line turned into the cell and line it came from:
        tracebacks (`File "NAME", line 12`) and syntax errors (`(NAME, line 12)`)."""
        if self.compile_name not in text:
            return text
        name = re.escape(self.compile_name)
        text = re.sub(rf'File "{name}", line (\d+)', lambda m: f'File "{self._quoted(int(m.group(1)))}', text)
        text = re.sub(rf"{name}, line (\d+)", lambda m: self.place(int(m.group(1))), text)
        return text.replace(self.compile_name, self.notebook)

    def _quoted(self, line: int) -> str:
        at = self.cell_line(line)
        return f'{self.notebook}", cell {at[0]}, line {at[1]}' if at else f'{self.notebook}"'


def code_lines(source: str) -> list[str]:
    """`source` cut into lines as the interpreter cuts them (\\n, \\r\\n, \\r; not str.splitlines's
    form feeds and Unicode separators, which may sit inside a string literal)."""
    lines = re.split(r"\r\n|\r|\n", source)
    return lines[:-1] if lines and lines[-1] == "" else lines


def statement_starts(lines: list[str]) -> set[int]:
    """The 1-based lines of `lines` on which a statement may start: not inside brackets, a string
    or a backslash continuation (only there is `%…` or `!…` IPython syntax rather than Python).
    Past a point the tokenizer cannot go, every line counts."""
    starts, depth, last = {1}, 0, 0
    text = "".join(line + "\n" for line in lines)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            last = tok.end[0]
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(0, depth - 1)
            elif tok.type in (tokenize.NEWLINE, tokenize.NL) and depth == 0:
                starts.add(tok.end[0] + 1)
    except (tokenize.TokenError, SyntaxError):
        starts.update(range(last + 1, len(lines) + 1))
    return starts


def extract(notebook: Notebook, exercise_id: str, cells: list[Cell]) -> Extracted:
    """The code of `cells` (of `notebook`) as one module, IPython syntax dropped line for line."""
    out: list[str] = []
    lines: list[tuple[int, int]] = []
    used: list[int] = []
    for cell in cells:
        if CELL_MAGIC.match(cell.source):  # %%time, %%capture, %%bash…: not Python
            continue
        used.append(cell.number)
        cell_lines = code_lines(cell.source)
        starts = statement_starts(cell_lines) if any(MAGIC_LINE.match(x) for x in cell_lines) else set()
        for number, line in enumerate(cell_lines, 1):
            magic = MAGIC_LINE.match(line) if number in starts else None
            out.append(f"{magic.group(1)}pass" if magic else line)
            lines.append((cell.number, number))
        out.append("")  # a blank line between cells: a cell's last block ends with it
        lines.append((cell.number, len(cell_lines) + 1))
    source = "\n".join(out).encode("utf-8", "surrogatepass")
    if len(source) > MAX_CODE_BYTES:
        raise _fault(
            "submission.notebook.code_too_large", file=notebook.name, exercise=exercise_id, cap=MAX_CODE_BYTES
        )
    return Extracted(notebook.name, exercise_id, source, lines, used)


# ---------------------------------------------------------------- a submission's notebooks


class Failed:
    """The source of an exercise that cannot be had: reading it raises the fault, every time."""

    def __init__(self, fault: SubmissionFileError, display: str) -> None:
        self.fault = fault
        self.display = self.compile_name = display

    def read(self) -> bytes:
        raise self.fault

    def place(self, line: int) -> str:
        return self.display

    def translate(self, text: str) -> str:
        return text


def notebooks_in(submission: Path) -> list[Path]:
    """The notebooks of a submission: the file itself, or those directly in the folder, sorted."""
    if submission.suffix.lower() == SUFFIX and not submission.is_dir():
        return [submission]
    if not submission.is_dir():
        return []
    return sorted(
        p for p in submission.iterdir() if p.suffix.lower() == SUFFIX and not p.name.startswith(".")
    )


def python_file(submission: Path, exercise_id: str) -> Path | None:
    """`<id>.py` of the submission folder when it is there (a link counts: reading it refuses it)."""
    path = submission / f"{exercise_id}.py"
    return path if submission.is_dir() and (path.exists() or path.is_symlink()) else None


def has_code(submission: Path, exercise_ids: list[str]) -> bool:
    """Does `submission` hold something to grade: an exercise's `.py` file or a notebook?"""
    return any(python_file(submission, e) for e in exercise_ids) or bool(notebooks_in(submission))


class NotebookSources:
    """Where each exercise's code comes from in one submission, notebooks parsed once."""

    def __init__(self, submission: Path, exercise_ids: list[str]) -> None:
        self.submission = submission
        self.exercise_ids = list(exercise_ids)
        self._parsed: dict[Path, Notebook | SubmissionFileError] = {}

    def _notebook(self, path: Path) -> Notebook | SubmissionFileError:

        if path not in self._parsed:
            name = inert.display_name(path.name)
            try:
                data = read_submission_file(path, cap=MAX_NOTEBOOK_BYTES)
                self._parsed[path] = parse_notebook(data, name)
            except SubmissionFileError as exc:
                self._parsed[path] = exc
        return self._parsed[path]

    def origin(self, exercise_id: str) -> Extracted | Failed | None:
        """The notebook source of `exercise_id`, None when a `.py` file (or nothing) is to be read."""
        if python_file(self.submission, exercise_id):
            return None
        paths = notebooks_in(self.submission)
        if not paths:
            return None
        own = [p for p in paths if Path(p.name).stem == exercise_id]
        others = [p for p in paths if p not in own]
        try:
            return self._from(exercise_id, own, others)
        except SubmissionFileError as exc:
            return Failed(exc, inert.display_name((own or paths)[0].name))

    def _from(self, exercise_id: str, own: list[Path], others: list[Path]) -> Extracted | None:
        for path in own:  # <id>.ipynb: its tagged cells, else all its code cells
            nb = self._checked(path)
            cells = nb.tagged(exercise_id) or ([] if nb.tags_any(self.exercise_ids) else nb.code_cells())
            if not cells:
                key = (
                    "submission.notebook.no_tagged_cell"
                    if nb.tags_any(self.exercise_ids)
                    else "submission.notebook.no_code"
                )
                raise _fault(key, file=nb.name, exercise=exercise_id)
            return extract(nb, exercise_id, cells)
        parsed = [self._notebook(p) for p in others]
        found = [nb for nb in parsed if isinstance(nb, Notebook) and nb.tagged(exercise_id)]
        if len(found) > 1:
            raise _fault(
                "submission.notebook.ambiguous",
                exercise=exercise_id,
                files=", ".join(nb.name for nb in found),
            )
        if found:
            return extract(found[0], exercise_id, found[0].tagged(exercise_id))
        for nb in parsed:  # a notebook that cannot be read is named before anything else is said
            if isinstance(nb, SubmissionFileError):
                raise nb
        if any(python_file(self.submission, e) for e in self.exercise_ids):
            return None  # .py files, and notebooks that tag nothing for this exercise: its file is missing
        if len(parsed) == 1 and not parsed[0].tags_any(self.exercise_ids):  # one untagged notebook
            if not parsed[0].code_cells():
                raise _fault("submission.notebook.no_code", file=parsed[0].name)
            return extract(parsed[0], exercise_id, parsed[0].code_cells())
        raise _fault(
            "submission.notebook.no_tagged_cell",
            file=", ".join(nb.name for nb in parsed),
            exercise=exercise_id,
        )

    def _checked(self, path: Path) -> Notebook:
        nb = self._notebook(path)
        if isinstance(nb, SubmissionFileError):
            raise nb
        return nb


# ---------------------------------------------------------------- writing notebooks


def new_notebook(cells: list[tuple[str, str, list[str]]]) -> str:
    """A v4 notebook of `cells` (kind "markdown" or "code", text, tags) as JSON text; cell ids are
    numbered, so the same cells always give the same file."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for number, (kind, text, tags) in enumerate(cells, 1):
        cell = nbformat.v4.new_markdown_cell(text) if kind == "markdown" else nbformat.v4.new_code_cell(text)
        cell.id = f"cell-{number}"
        if tags:
            cell.metadata["tags"] = list(tags)
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


GRADE_CELL = """\
# {comment}
import subprocess
import sys
from pathlib import Path

here = Path.cwd()
grade_py = next(p / "grade.py" for p in [here, *here.parents] if (p / "grade.py").is_file())
notebook = here / {notebook!r}
run = subprocess.run(
    [sys.executable, str(grade_py), str(notebook), "--exercise", {exercise!r}, "--lang", {lang!r}],
    capture_output=True, text=True,
)
print(run.stdout + run.stderr)
"""
GRADE_COMMENT = {
    "zh": "评分：先保存笔记本（Ctrl-S），再运行这个单元格。"
    "它用公开检查给这个笔记本中标记为 {exercise} 的单元格评分。",
    "en": "Grading: save the notebook first (Ctrl-S), then run this cell. It grades the cells tagged "
    "{exercise} in this notebook with the visible checks.",
}
STUB_NOTE = {
    "zh": "下面的代码单元格带有标签 `{exercise}`：评分程序只读取带这个标签的单元格。在其中完成练习，"
    "不要删除标签；可以另加单元格做实验（不带标签的单元格不会被评分）。",
    "en": "The code cell below carries the tag `{exercise}`: the grader reads only the cells with this "
    "tag. Do the exercise there and keep the tag; add cells of your own to experiment (cells without "
    "the tag are not graded).",
}


def markdown_sections(text: str) -> list[str]:
    """A Markdown text cut before each heading of level 1 or 2 (outside code fences): one cell each."""
    sections: list[list[str]] = [[]]
    fence = None
    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is None and stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
        elif fence is not None and stripped.startswith(fence):
            fence = None
        if fence is None and re.match(r"#{1,2} ", line) and any(s.strip() for s in sections[-1]):
            sections.append([])
        sections[-1].append(line)
    return ["\n".join(s).strip("\n") for s in sections if any(x.strip() for x in s)]


def exercise_notebook(statement: str, stub: str, exercise_id: str, lang: str) -> str:
    """The notebook a student gets for one exercise: the statement as Markdown cells, the stub in a
    code cell tagged with the exercise id, and a last cell that grades the notebook itself."""
    cells: list[tuple[str, str, list[str]]] = [("markdown", s, []) for s in markdown_sections(statement)]
    cells.append(("markdown", STUB_NOTE[lang].format(exercise=exercise_id), []))
    cells.append(("code", stub.rstrip("\n"), [exercise_id]))
    comment = GRADE_COMMENT[lang].format(exercise=exercise_id)
    grade = GRADE_CELL.format(
        comment=comment, notebook=f"{exercise_id}{SUFFIX}", exercise=exercise_id, lang=lang
    )
    cells.append(("code", grade.rstrip("\n"), []))
    return new_notebook(cells)
