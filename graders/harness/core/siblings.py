"""A submission is a folder of modules: which of its files an exercise's file imports.

An exercise file may import another file of the same submission by its name (`import utils`,
`from ex04_multi_head_attention import SimpleMultiHeadAttention`). The worker reads nothing from
disk, so the trusted side finds those imports here, statically, reads each imported file as bytes
with the one safe reader (`student.read_submission_file`: regular files only, no links, capped) and
ships them with the module; the worker runs each one on its first import (`sandbox.worker`).

Only plain names are siblings: a level-0 import whose first component is an ASCII identifier that
is not a module of the import allow-list (so a `torch.py` in the folder never shadows torch) and
for which `<name>.py` exists next to the exercise file. Nothing else is looked up: a relative
import, a dotted name or a file that is not there is refused by the worker with a message naming
the file it would need; a name is never a path, so `..` or `/` cannot reach out of the folder.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from .errors import SubmissionFileError
from .i18n import say
from .source import read_source, read_submission_file

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_SIBLINGS = 32  # files one exercise may pull in, its own imports' imports included
# what an exercise's file and the files it pulls in may hold together: the trusted side parses and
# scans all of it (`banned.static_findings`, ~10 s a MiB of dense code) outside every time budget
MAX_TOTAL_BYTES = 512 * 1024


@functools.lru_cache(maxsize=32)  # at most 32 files of MAX_SOURCE_BYTES kept: 32 MiB at worst
def imported_names(source: bytes) -> tuple[str, ...]:
    """The first component of every level-0 import in `source`, in order (none if it does not parse:
    the worker reports the syntax error). Remembered per source: a grade asks it of one file for
    each module made from it (`derive`, `with_siblings`), validate for every seed."""
    try:
        tree = ast.parse(read_source(source))
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # nested past the parser's limits
        return ()
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.partition(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.partition(".")[0])
    return tuple(dict.fromkeys(names))


def is_sibling_name(name: str, allowed: Iterable[str]) -> bool:
    """Could `import name` mean a file `name.py` of the submission?"""
    return bool(NAME.match(name)) and not name.startswith("__") and name not in set(allowed)


def sibling_sources(
    folder: Path, source: bytes, allowed: Iterable[str], provided: dict[str, bytes] | None = None,
    shown: str = "",
) -> dict[str, tuple[str, bytes]]:  # fmt: skip
    """name -> (file name, bytes) of every file of `folder` that `source` imports, directly or through
    another such file. A file that exists but cannot be read is a `SubmissionFileError` naming it,
    and so is more code than `MAX_TOTAL_BYTES` in `source` (the file `shown`) and those files
    together. `provided` (name -> trusted source) stands in for those names, whether or not the
    file exists."""
    provided = provided or {}

    def too_large(total: int) -> SubmissionFileError:
        size, cap = -(-total // 1024), MAX_TOTAL_BYTES // 1024
        return SubmissionFileError(say("submission.siblings_too_large", file=shown, size=size, cap=cap))

    allowed = frozenset(allowed)
    found: dict[str, tuple[str, bytes]] = {}
    queue = [source]
    total = len(source)
    if total > MAX_TOTAL_BYTES:
        raise too_large(total)
    while queue:
        for name in imported_names(queue.pop()):
            if name in found or not is_sibling_name(name, allowed):
                continue
            path = folder / f"{name}.py"
            if name in provided:
                found[name] = (path.name, provided[name])
                queue.append(provided[name])
                continue
            if not os.path.lexists(path):
                continue  # the worker refuses the import, naming the missing file
            if len(found) >= MAX_SIBLINGS:
                problem = f"more than {MAX_SIBLINGS} files of the submission are imported"
                raise SubmissionFileError(say("submission.bad_file", file=path.name, problem=problem))
            data = read_submission_file(path)
            total += len(data)
            if total > MAX_TOTAL_BYTES:
                raise too_large(total)
            found[name] = (path.name, data)
            queue.append(data)
    return found
