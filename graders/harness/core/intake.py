"""Submissions as they arrive from an LMS export: one folder or one `.zip` per student.

`discover` lists a submissions folder, one `Entry` per student. `unpack_zip` extracts a zip into
a fresh folder under strict rules, because the archive is the student's: no absolute paths, no
`..`, no links, no encrypted entries, at most `ZipCaps.members` entries and `ZipCaps.total_bytes`
bytes once unpacked (counted while reading, never trusting the sizes the archive declares).
Before `zipfile` parses anything, the end-of-central-directory record (ZIP64 too) is read by hand:
its entry count and the size of the central directory are checked against the caps, so that a zip
declaring a million entries is refused in microseconds instead of after `ZipFile` has built a
million objects. Any breach raises `Refusal`, which becomes a gradebook row with the reason.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from . import inert
from .i18n import Text, say
from .notebook import SUFFIX as NOTEBOOK_SUFFIX
from .notebook import has_code

EntryKind = Literal["dir", "zip", "notebook", "other", "link"]
IGNORED_DIRS = {"__MACOSX", "__pycache__"}


class Refusal(Exception):
    """A submission that cannot be graded; `problem` is a stable id, `text` says why (the
    catalogue's `lms.problem.<id>` with `params`)."""

    def __init__(self, problem: str, **params) -> None:
        self.problem = problem
        self.text = problem_text(problem, **params)
        super().__init__(self.text.en)


def problem_text(problem: str, **params) -> Text:
    """Why a submission has no score, for the stable id `problem`: the catalogue's `lms.problem.<id>`."""
    return say(f"lms.problem.{problem}", **params)


@dataclass(frozen=True)
class ZipCaps:
    archive_bytes: int = 64 << 20
    members: int = 500
    total_bytes: int = 32 << 20
    directory_bytes: int = 500 * 1024  # the central directory: ~1 KiB per entry at most


# signature, disk, cd disk, entries here, entries, cd size, cd offset, comment length
EOCD = struct.Struct("<IHHHHIIH")
# signature, cd disk, offset of the ZIP64 record, disks
EOCD64_LOCATOR = struct.Struct("<IIQI")
# signature, size, versions (2), disk, cd disk, entries here, entries, cd size, cd offset
EOCD64 = struct.Struct("<IQHHIIQQQQ")


def central_directory(archive: Path) -> tuple[int, int]:
    """(entries, central directory bytes) as the archive's end records declare them, read without
    parsing the archive; `zipfile.BadZipFile` if there is no such record. Whether the directory is
    really there is for `zipfile` to find out, once these figures are known to be within the caps.

    Every record that could be believed counts, and the largest figures are taken: the classic end
    record; and where a ZIP64 locator sits before it, the ZIP64 record where the locator points AND
    the one right before the locator, which is where `zipfile` reads it, whatever the classic record
    says (an unseen attack declared 1 entry in the classic record and 1.2 million in the ZIP64 one,
    and `zipfile` parsed them all: 800 MiB and 11 s for one student)."""
    with open(archive, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        tail_start = max(0, size - (EOCD.size + 0xFFFF))
        fh.seek(tail_start)
        tail = fh.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < EOCD.size:
            raise zipfile.BadZipFile("no end-of-central-directory record")
        _sig, disk, cd_disk, _here, entries, cd_size, cd_offset, _comment = EOCD.unpack_from(tail, at)
        if disk != 0 or cd_disk != 0:
            raise zipfile.BadZipFile("multi-disk archives are not supported")
        # a field at its ZIP64 marker (0xFFFF, 0xFFFFFFFF) is no figure: it means "see the ZIP64 record"
        marked = entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF
        declared = [(entries if entries != 0xFFFF else 0, cd_size if cd_size != 0xFFFFFFFF else 0)]
        locator_at = at - EOCD64_LOCATOR.size
        if locator_at >= 0 and tail[locator_at : locator_at + 4] == b"PK\x06\x07":
            _s, _d, record_offset, _disks = EOCD64_LOCATOR.unpack_from(tail, locator_at)
            for offset in sorted({record_offset, tail_start + locator_at - EOCD64.size}):
                if not 0 <= offset <= size - EOCD64.size:
                    continue
                fh.seek(offset)
                record = fh.read(EOCD64.size)
                if record[:4] != b"PK\x06\x06":
                    continue
                _s, _n, _v1, _v2, disk, cd_disk, _here, entries, cd_size, cd_offset = EOCD64.unpack(record)
                if disk != 0 or cd_disk != 0:
                    raise zipfile.BadZipFile("multi-disk archives are not supported")
                declared.append((entries, cd_size))
        if len(declared) == 1 and marked:
            raise zipfile.BadZipFile("ZIP64 record missing")
    return max(e for e, _ in declared), max(c for _, c in declared)


@dataclass(frozen=True)
class Entry:
    """One student's submission in the submissions folder."""

    student: str
    path: Path
    kind: EntryKind

    @property
    def source(self) -> str:
        """The entry's name as shown in reasons and reports (any bytes, on one line)."""
        return inert.display_name(self.path.name)


REPORT_SUFFIX = "_report.html"  # what a single grade's HTML report is called: never a student
# what file managers, version control and notebooks leave in a folder: never a student
SYSTEM_NAMES = {
    ".DS_Store",
    ".git",
    ".hg",
    ".svn",
    "__MACOSX",
    "Thumbs.db",
    "desktop.ini",
    ".ipynb_checkpoints",
}


def skipped(path: Path) -> bool:
    """Is `path` a file manager's, a tool's or a single grade's, not a student's? Any other name,
    hidden ones included (`.alice`), is a student entry: a student is never dropped without a row."""
    name = path.name
    if name in SYSTEM_NAMES or name.startswith("._"):  # macOS AppleDouble files
        return True
    return name.endswith(REPORT_SUFFIX) and path.is_file()


def discover(folder: Path) -> list[Entry]:
    """Every student entry of `folder`, sorted; system files (`SYSTEM_NAMES`, `._*`) and
    single-grade HTML reports (`*_report.html` files) are skipped, nothing else.

    The key (`inert.student_key`: printable, one-to-one, short enough for a file name whatever
    bytes the name holds) is that of the folder name or of the zip name without `.zip`; when a
    zip's stem is taken (by a folder of that name), the zip keeps its full name so that nothing is
    lost or merged.
    """
    entries: list[Entry] = []
    names = sorted(p for p in folder.iterdir() if not skipped(p))
    taken = {p.name for p in names if p.is_dir() and not p.is_symlink()}
    key = inert.student_key
    for path in names:
        if path.is_symlink():
            entries.append(Entry(key(path.name), path, "link"))
        elif path.is_dir():
            entries.append(Entry(key(path.name), path, "dir"))
        elif path.is_file() and path.suffix.lower() == ".zip":
            name = path.stem if path.stem and path.stem not in taken else path.name
            taken.add(name)
            entries.append(Entry(key(name), path, "zip"))
        elif path.is_file() and path.suffix.lower() == NOTEBOOK_SUFFIX:  # a notebook on its own
            name = path.stem if path.stem and path.stem not in taken else path.name
            taken.add(name)
            entries.append(Entry(key(name), path, "notebook"))
        else:
            entries.append(Entry(key(path.name), path, "other"))
    return entries


MAX_TREE_DEPTH = 64  # folders inside a submission: deeper is refused (no exercise needs more)
MAX_TREE_ENTRIES = 100_000  # a walk stops after this many entries (a digest needs no more)


def walk_tree(root: Path, depth_cap: int = MAX_TREE_DEPTH, entry_cap: int = MAX_TREE_ENTRIES):
    """(every path under `root`, sorted; the first folder found deeper than `depth_cap`, or None).

    Iterative (a stack, never recursion: a tree thousands of folders deep is data, not a crash),
    links are listed but never followed, unreadable folders are skipped, and the walk stops after
    `entry_cap` entries."""
    paths: list[Path] = []
    too_deep: Path | None = None
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack and len(paths) < entry_cap:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                children = [(Path(e.path), e.is_dir(follow_symlinks=False)) for e in it]
        except OSError:  # unreadable, vanished, or a path too long for the file system
            continue
        for path, is_dir in children:
            paths.append(path)
            if is_dir:
                if depth + 1 >= depth_cap:
                    too_deep = too_deep or path
                    continue
                stack.append((path, depth + 1))
    return sorted(paths[:entry_cap]), too_deep


def check_tree(folder: Path, source: str, depth_cap: int = MAX_TREE_DEPTH) -> None:
    """Refuse (`too_deep`) a submission folder whose folders nest deeper than `depth_cap`."""
    _paths, too_deep = walk_tree(folder, depth_cap)
    if too_deep is not None:
        where = inert.display_name(str(too_deep.relative_to(folder)))
        if len(where) > 80:
            where = where[:38] + "…" + where[-38:]
        raise Refusal("too_deep", source=source, cap=depth_cap, where=where)


def fingerprint(entry: Entry, cap: int = 2000) -> str:
    """A digest of names, sizes and modification times, to notice a submission replaced later."""
    digest = hashlib.sha256()
    paths = [entry.path]
    if entry.kind == "dir":
        paths = [p for p in walk_tree(entry.path)[0] if not p.is_symlink()][:cap]
    for path in paths:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        rel = path.relative_to(entry.path.parent)
        digest.update(f"{rel}\0{info.st_size}\0{info.st_mtime_ns}\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:24]


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "zip_absolute"
    if ".." in PurePosixPath(name).parts:
        return "zip_traversal"
    if len([p for p in PurePosixPath(name).parts if p not in ("", ".")]) > MAX_TREE_DEPTH:
        return "too_deep"
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        return "zip_link"
    if info.flag_bits & 0x1:
        return "zip_encrypted"
    return None


def unpack_zip(archive: Path, dest: Path, caps: ZipCaps = ZipCaps()) -> Path:
    """Extract `archive` into the empty folder `dest` under the rules above; returns `dest`."""
    source = inert.display_name(archive.name)
    size = archive.stat().st_size
    if size > caps.archive_bytes:
        raise Refusal("zip_file_too_large", source=source, size=size, cap=caps.archive_bytes)
    try:
        entries, directory = central_directory(archive)
        if entries > caps.members:
            raise Refusal("zip_too_many", source=source, count=entries, cap=caps.members)
        if directory > caps.directory_bytes:
            raise Refusal(
                "zip_directory_too_large",
                source=source,
                size=directory,
                cap=caps.directory_bytes,
            )
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            if len(members) > caps.members:
                raise Refusal("zip_too_many", source=source, count=len(members), cap=caps.members)
            for info in members:
                problem = _member_problem(info)
                if problem == "too_deep":
                    where = inert.display_name(info.filename)
                    where = where if len(where) <= 80 else where[:38] + "…" + where[-38:]
                    raise Refusal(problem, source=source, cap=MAX_TREE_DEPTH, where=where)
                if problem:
                    raise Refusal(problem, source=source, member=info.filename)
            written = 0
            for info in members:
                written = _extract_member(zf, info, dest, written, caps, source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError) as exc:
        raise Refusal("zip_bad", source=source, detail=str(exc)[:200] or type(exc).__name__) from None
    except OSError as exc:
        raise Refusal("zip_bad", source=source, detail=exc.strerror or str(exc)) from None
    return dest


def _extract_member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, dest: Path, written: int, caps: ZipCaps, source: str
) -> int:
    parts = [p for p in PurePosixPath(info.filename.replace("\\", "/")).parts if p not in ("", ".")]
    if not parts:
        return written
    target = dest.joinpath(*parts)
    if not target.resolve().is_relative_to(dest.resolve()):  # belt and braces after the checks above
        raise Refusal("zip_traversal", source=source, member=info.filename)
    if info.is_dir():
        target.mkdir(parents=True, exist_ok=True)
        return written
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with zf.open(info) as src, os.fdopen(fd, "wb") as out:
        while chunk := src.read(1 << 16):
            written += len(chunk)
            if written > caps.total_bytes:
                raise Refusal(
                    "zip_too_large",
                    source=source,
                    cap=caps.total_bytes,
                    member=info.filename,
                )
            out.write(chunk)
    return written


def submission_root(folder: Path, exercise_ids: list[str], depth: int = 3) -> Path:
    """The folder that holds the exercise files (or notebooks): `folder`, or its only sub-folder (zips
    often wrap one)."""
    for _ in range(depth):
        if has_code(folder, exercise_ids):
            return folder
        subdirs = [
            p for p in folder.iterdir()
            if p.is_dir() and not p.is_symlink() and p.name not in IGNORED_DIRS and not p.name.startswith(".")
        ]  # fmt: skip
        if len(subdirs) != 1:
            return folder
        folder = subdirs[0]
    return folder


def require_exercise_files(folder: Path, exercise_ids: list[str]) -> None:
    """Refuse a submission that holds none of the exercise files nor a notebook (nothing to grade)."""
    if not has_code(folder, exercise_ids):
        expected = ", ".join(f"{e}.py" for e in exercise_ids) + ", *.ipynb"
        raise Refusal("no_files", expected=expected)
