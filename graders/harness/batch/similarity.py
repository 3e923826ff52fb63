"""Similarity report: which pairs of submissions share code, exercise by exercise.

    python grade.py batch SUBMISSIONS --out OUT --similarity [--similarity-threshold 0.5]
    python grade.py similarity SUBMISSIONS --out OUT [--threshold 0.5]   (after a batch)

The comparison is `copydetect`'s (the optional extra `pip install ".[similarity]"`): code is
tokenised and names, strings and comments are abstracted away (a renamed variable changes
nothing), its k-grams are hashed and winnowed into fingerprints (MOSS's method), and two files
overlap by the share of each one's tokens covered by fingerprints they have in common. The
starter code (`student_template/<id>.py`) is boilerplate: its fingerprints are dropped from every
file, so that what the course hands out never counts as shared. Every pair of submissions that
holds code for an exercise is compared (an inverted index of fingerprints skips pairs that share
none); a pair is listed when either side's overlap reaches the threshold.

Tuning, measured on this course (k-gram length `NOISE` tokens, every k-gram kept, i.e. the
guarantee threshold equals the noise threshold): a copy of the reference with every local name
renamed and its comments rewritten overlaps it 100%; the correct solutions written differently in
tests/test_alternatives_* overlap the reference and one another by at most 31%. Hence the default
threshold 0.5. Shorter k-grams raise the overlap of independent solutions (45% at k = 15: the
exercises' code is short and shares the lesson's formulas), longer ones miss short copied spans.

The code is read exactly as grading reads it (`.py` files as bytes, a notebook's tagged cells, a
zip unpacked under the same caps) and is never run. Results: `OUT/similarity.json` (the
`Similarity` model; `analytics.json` and the class report carry it) and one side-by-side page per
listed pair, `OUT/similarity/<exercise>-<n>.html`, the shared spans highlighted; student code is
text in those pages (escaped, control characters shown as escapes).
"""

from __future__ import annotations

import io
import itertools
import logging
import tempfile
from collections import defaultdict
from pathlib import Path

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from ..core import inert
from ..core.errors import SubmissionFileError
from ..core.i18n import Lang, labels
from ..core.intake import Entry, Refusal, submission_root, unpack_zip
from ..core.notebook import NotebookSources, python_file
from ..core.project import Project
from ..core.source import read_source, read_submission_file

NOISE = 25  # k: matches shorter than this many (abstracted) tokens are noise
GUARANTEE = 25  # matches this long are always found (window = GUARANTEE - NOISE + 1)
THRESHOLD = 0.5
MAX_PAIRS = 200  # listed per exercise, most similar first (a side-by-side page each); the rest counted
RESULT_FILE = "similarity.json"
VIEWS_DIR = "similarity"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SimilarPair(_Model):
    exercise: str
    a: str = Field(description="student key")
    b: str = Field(description="student key")
    overlap_a: float = Field(ge=0, le=1, description="share of a's tokens found in b")
    overlap_b: float = Field(ge=0, le=1, description="share of b's tokens found in a")
    tokens: int = Field(description="tokens of a in shared spans")
    view: str = Field(description="side-by-side page, relative to the results folder")


class Similarity(_Model):
    method: str = "copydetect (winnowed fingerprints of normalised tokens)"
    noise: int = NOISE
    guarantee: int = GUARANTEE
    threshold: float
    compared: dict[str, int] = Field(description="submissions with code, per exercise")
    pairs: list[SimilarPair] = Field(description="pairs at or above the threshold, most similar first")
    left_out: dict[str, int] = Field(
        default_factory=dict,
        description=f"pairs above the threshold past the first {MAX_PAIRS}, per exercise",
    )


class SimilarityUnavailable(Exception):
    """copydetect is not installed."""


def _copydetect():
    try:
        logging.getLogger("copydetect").setLevel(logging.ERROR)
        import copydetect
    except ImportError:
        raise SimilarityUnavailable(
            'the similarity report needs copydetect: pip install ".[similarity]"'
        ) from None
    return copydetect


# ---------------------------------------------------------------- reading the code


def _text(data: bytes) -> str:
    try:
        return read_source(data)
    except SyntaxError:
        return data.decode("utf-8", "replace")


def submission_code(entry: Entry, exercise_ids: list[str], tmp: Path) -> dict[str, str]:
    """The code of each exercise of one submission, read as grading reads it; missing ones left out."""
    if entry.kind in ("other", "link"):
        return {}
    try:
        if entry.kind == "notebook":
            folder = entry.path
        elif entry.kind == "zip":
            folder = submission_root(unpack_zip(entry.path, tmp / "unpacked"), exercise_ids)
        else:
            folder = submission_root(entry.path, exercise_ids)
    except Refusal:
        return {}
    notebooks = NotebookSources(folder, exercise_ids)
    code = {}
    for exercise in exercise_ids:
        try:
            origin = notebooks.origin(exercise)
            if origin is not None:
                code[exercise] = _text(origin.read())
            elif (path := python_file(folder, exercise)) is not None:
                code[exercise] = _text(read_submission_file(path))
        except SubmissionFileError:
            continue
    return code


# ---------------------------------------------------------------- comparing


def _fingerprint(copydetect, name: str, code: str, boilerplate):
    return copydetect.CodeFingerprint(
        f"{name}.py", NOISE, GUARANTEE - NOISE + 1, boilerplate=boilerplate, fp=io.StringIO(code),
        language="python",
    )  # fmt: skip


def compare(codes: dict[str, str], starter: str, threshold: float) -> list[tuple]:
    """(a, b, overlap_a, overlap_b, tokens, slices_a, slices_b) for every pair of `codes` (student
    -> code) at or above `threshold` on either side, `starter`'s fingerprints left out."""
    cd = _copydetect()
    import numpy as np

    boilerplate = np.unique(
        np.array(sorted(_fingerprint(cd, "starter", starter, None).hashes), dtype=np.int64)
    )
    prints = {}
    for student, code in codes.items():
        try:
            prints[student] = _fingerprint(cd, student, code, boilerplate)
        except Exception:  # noqa: BLE001  (a file the tokenizer cannot take is left out, not fatal)
            continue
    owners: dict[int, list[str]] = defaultdict(list)
    for student, fp in prints.items():
        for h in fp.hashes:
            owners[h].append(student)
    candidates = set()
    for students in owners.values():
        candidates.update(itertools.combinations(sorted(students), 2))
    found = []
    for a, b in sorted(candidates):
        if _bound(prints[a], prints[b]) < threshold:
            continue
        tokens, (sim_a, sim_b), (slices_a, slices_b) = cd.compare_files(prints[a], prints[b])
        sim_a, sim_b = (min(float(s), 1.0) if s == s else 0.0 for s in (sim_a, sim_b))
        if max(sim_a, sim_b) >= threshold:
            found.append((a, b, sim_a, sim_b, int(tokens), slices_a, slices_b))
    return sorted(found, key=lambda f: (-max(f[2], f[3]), f[0], f[1]))


def _bound(fa, fb) -> float:
    """An upper bound of both sides' overlap, from the fingerprints they share alone: each shared
    position covers at most k tokens. Pairs below the threshold by it are not compared."""
    shared = fa.hashes & fb.hashes
    bounds = []
    for fp in (fa, fb):
        positions = sum(len(fp.hash_idx[h]) for h in shared)
        bounds.append(positions * fp.k / fp.token_coverage if fp.token_coverage else 0.0)
    return max(bounds)


def _segments(code: str, slices) -> list[tuple[str, bool]]:
    """`code` cut into (text, shared?) runs along copydetect's slices (start and end offsets)."""
    out, at = [], 0
    starts, ends = (slices[0].tolist(), slices[1].tolist()) if len(slices) else ([], [])
    spans = sorted(zip(starts, ends, strict=True))
    for start, end in spans:
        start, end = max(int(start), at), min(int(end), len(code))
        if start > at:
            out.append((code[at:start], False))
        if end > start:
            out.append((code[start:end], True))
        at = max(at, end)
    if at < len(code):
        out.append((code[at:], False))
    return out


TEMPLATES = Path(__file__).resolve().parents[1] / "formats" / "reports" / "templates"
_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES),
    autoescape=jinja2.select_autoescape(["html.j2"]),
    undefined=jinja2.StrictUndefined,
)
_env.filters["clean"] = inert.clean


def run(
    entries: list[Entry], project: Project, exercise_ids: list[str], out: Path, lang: Lang,
    threshold: float = THRESHOLD,
) -> Similarity:  # fmt: skip
    """Compare the submissions of `entries`, write the side-by-side pages and `similarity.json`."""
    from .store import write_atomic

    _copydetect()  # fail before reading anything when it is missing
    codes: dict[str, dict[str, str]] = defaultdict(dict)
    for entry in entries:
        with tempfile.TemporaryDirectory(prefix="agw-similarity-") as tmp:
            for exercise, code in submission_code(entry, exercise_ids, Path(tmp)).items():
                codes[exercise][entry.student] = code
    views = out / VIEWS_DIR
    views.mkdir(parents=True, exist_ok=True)
    for old in views.glob("*.html"):
        old.unlink()
    pairs: list[SimilarPair] = []
    left_out: dict[str, int] = {}
    page = _env.get_template("similarity_pair.html.j2")
    for exercise in exercise_ids:
        starter_path = project.template_path(exercise)
        starter = starter_path.read_text(encoding="utf-8") if starter_path.is_file() else ""
        found = compare(codes.get(exercise, {}), starter, threshold)
        if len(found) > MAX_PAIRS:
            left_out[exercise] = len(found) - MAX_PAIRS
        for n, (a, b, sim_a, sim_b, tokens, slices_a, slices_b) in enumerate(found[:MAX_PAIRS], 1):
            view = f"{VIEWS_DIR}/{exercise}-{n}.html"
            pair = SimilarPair(exercise=exercise, a=a, b=b, overlap_a=sim_a, overlap_b=sim_b, tokens=tokens,
                               view=view)  # fmt: skip
            html = page.render(
                pair=pair, lang=lang, t=labels(lang),
                left=_segments(codes[exercise][a], slices_a), right=_segments(codes[exercise][b], slices_b),
            )  # fmt: skip
            write_atomic(out / view, html)
            pairs.append(pair)
    result = Similarity(
        threshold=threshold,
        compared={e: len(codes.get(e, {})) for e in exercise_ids},
        pairs=pairs,
        left_out=left_out,
    )
    write_atomic(out / RESULT_FILE, result.model_dump_json(indent=2) + "\n")
    return result


def load(out: Path) -> Similarity | None:
    """The similarity results of the results folder `out`, if a run wrote them."""
    path = out / RESULT_FILE
    if not path.is_file():
        return None
    try:
        return Similarity.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


# ---------------------------------------------------------------- `grade.py similarity`
