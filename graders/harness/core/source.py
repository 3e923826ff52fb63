"""A submission's source: its files read safely as bytes (`read_submission_file`, the one reader of
a student's file) and decoded exactly as the interpreter decodes them (`read_source`). Shared by the
student session, the static checks (`banned`), the sibling finder (`siblings`), notebooks and
similarity; it imports nothing of theirs."""

from __future__ import annotations

import codecs
import io
import os
import stat
import tokenize
from pathlib import Path

from .errors import SubmissionFileError
from .i18n import say

MAX_SOURCE_BYTES = 1 << 20  # the most of one file that is read


def read_module_source(path: Path, origin=None) -> bytes:
    """An exercise module's source: the code `origin` holds (a notebook's cells, see `notebook`),
    else the file `path`."""
    return origin.read() if origin is not None else read_submission_file(path)


def read_source(data: bytes) -> str:
    """`data` decoded exactly as the interpreter decodes a source file: BOM, then a coding cookie
    on one of the first two lines, else UTF-8. Raises `SyntaxError` where Python would."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    try:
        codecs.lookup(encoding)
        return data.decode("utf-8-sig" if encoding == "utf-8-sig" else encoding)
    except (LookupError, UnicodeDecodeError) as exc:
        raise SyntaxError(f"cannot decode the file as {encoding}: {exc}") from None


def read_submission_file(path: Path, cap: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a student's file (at most `cap`), or `SubmissionFileError` naming the file and
    the problem."""
    name = path.name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise SubmissionFileError(say("submission.missing_file", file=name)) from None
    except OSError as exc:
        raise SubmissionFileError(
            say("submission.bad_file", file=name, problem=exc.strerror or str(exc))
        ) from None
    if stat.S_ISLNK(info.st_mode):
        raise SubmissionFileError(say("submission.bad_file", file=name, problem="symbolic links are refused"))
    if not stat.S_ISREG(info.st_mode):
        raise SubmissionFileError(say("submission.bad_file", file=name, problem="not a regular file"))
    if info.st_size > cap:
        raise SubmissionFileError(say("submission.bad_file", file=name, problem=f"larger than {cap} bytes"))
    if info.st_nlink > 1:  # a hard link may point at a file the student could not read (the reference)
        raise SubmissionFileError(say("submission.bad_file", file=name, problem="hard links are refused"))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        opened = os.fstat(fh.fileno())  # the file may have been swapped since lstat
        if (opened.st_dev, opened.st_ino) != (info.st_dev, info.st_ino) or not stat.S_ISREG(opened.st_mode):
            problem = "the file changed while it was read"
            raise SubmissionFileError(say("submission.bad_file", file=name, problem=problem))
        return fh.read(cap + 1)
