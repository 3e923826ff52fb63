"""`python grade.py validate`: prove, with one command, that every exercise's grader is fair.

For each exercise (one shared `SandboxPool` for the whole run):

- static: the manifest loads; the four files and two statements exist and are not empty; no
  scaffold placeholder (`scaffold.SCAFFOLD_MARKER`, the example check) is left; stub and reference
  both define every name in `exports` and the grader reads no `student.NAME` outside them (all by
  `ast`: nothing of the stub or reference is imported here); every manifest check is implemented by
  exactly one `@check` test and every test implements a declared check; no visible check takes the
  `reference` fixture (the student build ships visible checks without the reference); every title,
  diagnosis message and section has non-empty zh and en, with the same `{placeholders}`.
- graded: the reference scores full marks under every seed; the untouched stub passes no check and
  causes no grader error; every mutant in `tests/mutants/<id>/` fails exactly the checks it
  declares, each with the diagnosis it declares (`mutants.mutant_problems`): a mutant that fails a
  check it does not declare shows a check whose title holds losing points. Stub and mutants are
  graded under every seed, and any difference between seeds (score, failing checks, diagnoses) is a
  problem: the same code gets the same score on every seed.
- coverage: every diagnosis the manifest declares is produced by at least one mutant. This is a
  FAILURE, not a warning: a diagnosis no mutant produces is feedback nobody has seen work, and
  the instructor must either add the mutant or drop the diagnosis.
- warnings (reported, exit status unaffected): a diagnosis `section` that is no heading of the
  statement in that language; a zh text without a Chinese character; an exercise without mutants.

It prints one row per exercise (reference score, the minimum over seeds; stub score; mutants
caught / total; mutants named / total; the most points any single mutant loses, with its name;
status), then one line per problem, then the totals.
Exit status: 0 when every exercise is fair, 1 when any problem was found, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.diagnoses import lookup
from ..core.i18n import LANGS, Lang, Text, say
from ..core.models import ExerciseManifest, Report
from ..core.options import exercise_option, lang_option
from ..core.project import ManifestError, Project
from ..core.statements import heading_lines, normalise_heading, section_matches
from .mutants import Mutant, failing_checks, load_mutants, mutant_problems, mutants_dir
from .scaffold import EXAMPLE_CHECK, SCAFFOLD_MARKER

DEFAULT_SEEDS = (1, 2, 20261129)
NOT_PASSING = {"failed", "timeout", "not_implemented"}
CHINESE = re.compile(r"[\u3400-\u9fff]")
PLACEHOLDER = re.compile(r"\{(\w+)[^{}]*\}")

COLUMNS = (
    "validate.column.exercise", "validate.column.reference", "validate.column.stub", "validate.column.caught",
    "validate.column.named", "validate.column.worst", "report.column.status",
)  # fmt: skip


@dataclass
class ExerciseVerdict:
    """What `validate` found for one exercise."""

    id: str
    max_score: float | None = None
    reference_score: float | None = None  # minimum over seeds
    stub_score: float | None = None
    mutants_total: int = 0
    mutants_caught: int = 0
    mutants_named: int = 0
    problems: list[Text] = field(default_factory=list)
    unparsable: bool = False  # the grader, stub or reference does not parse
    unimplemented: set[str] = field(default_factory=set)  # checks no test implements (reported once)
    warnings: list[Text] = field(default_factory=list)
    worst_loss: float | None = None  # the most points one mutant loses
    worst_mutant: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def status(self) -> str:
        return "FAIL" if self.problems else "warn" if self.warnings else "ok"


# ---------------------------------------------------------------- static analysis (ast, never import)


def parse(path: Path, shown: str, verdict: ExerciseVerdict) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as exc:
        verdict.problems.append(say("validate.syntax", file=shown, line=exc.lineno, msg=exc.msg))
    except (OSError, UnicodeDecodeError) as exc:
        verdict.problems.append(say("validate.syntax", file=shown, line=0, msg=str(exc)))
    verdict.unparsable = True
    return None


def module_names(tree: ast.Module) -> set[str]:
    """Names a module defines at top level (including inside top-level if/try blocks)."""
    names: set[str] = set()
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.If | ast.Try):
            stack += node.body + node.orelse + getattr(node, "finalbody", [])
            stack += [n for h in getattr(node, "handlers", []) for n in h.body]
    return names


def check_id_of(decorator: ast.expr) -> str | None:
    """`x` for `@check("x")` or `@pytest.mark.check("x")`, else None."""
    if not isinstance(decorator, ast.Call) or not decorator.args:
        return None
    func = decorator.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    first = decorator.args[0]
    if name == "check" and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


@dataclass
class GraderTest:
    name: str
    check: str | None
    fixtures: set[str]


def grader_tests(tree: ast.Module) -> list[GraderTest]:
    """The module's pytest tests (top-level `test*` functions) with their @check id and arguments."""
    tests = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            ids = [i for d in node.decorator_list if (i := check_id_of(d)) is not None]
            args = {a.arg for a in node.args.args + node.args.kwonlyargs}
            tests.append(GraderTest(node.name, ids[0] if ids else None, args))
    return tests


def student_attributes(tree: ast.Module) -> set[str]:
    """Every NAME read as `student.NAME` in the grader."""
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "student"
        and not n.attr.startswith("_")
    }


def statement_headings(path: Path) -> list[str]:
    return heading_lines(path.read_text(encoding="utf-8")) if path.is_file() else []


def static_checks(project: Project, manifest: ExerciseManifest, verdict: ExerciseVerdict) -> None:
    root, eid = project.root, manifest.id
    paths = {
        "template": project.template_path(eid),
        "reference": project.reference_path(eid),
        "grader": project.grader_path(eid),
        "statement.zh": project.statement_path(eid, "zh"),
        "statement.en": project.statement_path(eid, "en"),
    }
    shown = {k: str(p.relative_to(root)) for k, p in paths.items()}
    mutant_folder = mutants_dir(project) / eid
    scanned = [project.manifest_path(eid), *paths.values(), *sorted(mutant_folder.glob("*"))]
    for path in scanned:
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if not text.strip():
            verdict.problems.append(say("validate.empty", file=path.relative_to(root)))
        for number, line in enumerate(text.splitlines(), 1):
            if SCAFFOLD_MARKER in line:
                verdict.problems.append(
                    say("validate.marker", file=path.relative_to(root), line=number, marker=SCAFFOLD_MARKER)
                )
                break
    for key, path in paths.items():
        if not path.is_file():
            verdict.problems.append(say("validate.missing", file=shown[key]))
    if any(c.id == EXAMPLE_CHECK for c in manifest.checks):
        verdict.problems.append(
            say(
                "validate.example_check",
                file=project.manifest_path(eid).relative_to(root),
                check=EXAMPLE_CHECK,
            )
        )

    for key in ("template", "reference"):
        if paths[key].is_file() and (tree := parse(paths[key], shown[key], verdict)) is not None:
            defined = module_names(tree)
            for name in manifest.exports:
                if name not in defined:
                    verdict.problems.append(say("validate.export_missing", file=shown[key], name=name))

    if paths["grader"].is_file() and (tree := parse(paths["grader"], shown["grader"], verdict)) is not None:
        grader_checks(manifest, tree, shown["grader"], verdict)
    text_checks(project, manifest, verdict)


def static_problems(project: Project, manifest: ExerciseManifest) -> list[Text]:
    """What the static half of `validate` rejects in this exercise (no grading: milliseconds).
    `build` refuses to ship an exercise with any of these."""
    verdict = ExerciseVerdict(manifest.id)
    static_checks(project, manifest, verdict)
    return verdict.problems


def grader_checks(manifest: ExerciseManifest, tree: ast.Module, shown: str, verdict: ExerciseVerdict) -> None:
    tests = grader_tests(tree)
    declared = {c.id: c for c in manifest.checks}
    for test in tests:
        if test.check is None:
            verdict.problems.append(say("validate.test_unmarked", file=shown, test=test.name))
        elif test.check not in declared:
            verdict.problems.append(
                say("validate.check_unknown", file=shown, test=test.name, check=test.check)
            )
        elif declared[test.check].visibility == "visible" and "reference" in test.fixtures:
            verdict.problems.append(
                say("validate.visible_reference", file=shown, check=test.check, test=test.name)
            )
    for check_id in declared:
        implementing = [t.name for t in tests if t.check == check_id]
        if not implementing:
            verdict.unimplemented.add(check_id)
            verdict.problems.append(say("validate.check_missing", check=check_id, file=shown))
        elif len(implementing) > 1:
            verdict.problems.append(
                say("validate.check_twice", check=check_id, tests=", ".join(implementing))
            )
    for name in sorted(student_attributes(tree) - set(manifest.exports)):
        verdict.problems.append(say("validate.export_unlisted", file=shown, name=name))


def text_checks(project: Project, manifest: ExerciseManifest, verdict: ExerciseVerdict) -> None:
    """Both languages present and consistent; sections that point at real statement headings."""
    texts: list[tuple[str, Text]] = [("title", manifest.title)]
    texts += [(f"checks.{c.id}.title", c.title) for c in manifest.checks]
    for diag_id, diag in manifest.diagnoses.items():
        texts.append((f"diagnoses.{diag_id}.message", diag.message))
        if diag.section is not None:
            texts.append((f"diagnoses.{diag_id}.section", diag.section))
    manifest_file = project.manifest_path(manifest.id).relative_to(project.root)
    for where, text in texts:
        where = f"{manifest_file}: {where}"
        for lang in LANGS:
            if not text(lang).strip():
                verdict.problems.append(say("validate.text_empty", where=where, lang=lang))
        zh_params, en_params = set(PLACEHOLDER.findall(text.zh)), set(PLACEHOLDER.findall(text.en))
        if zh_params != en_params:
            verdict.problems.append(
                say("validate.text_params", where=where, zh=sorted(zh_params), en=sorted(en_params))
            )
        if text.zh.strip() and not CHINESE.search(text.zh):
            verdict.warnings.append(say("validate.zh_not_chinese", where=where))
    for lang in LANGS:
        path = project.statement_path(manifest.id, lang)
        headings = statement_headings(path)
        if not headings:
            continue
        for diag_id, diag in manifest.diagnoses.items():
            if diag.section is None:
                continue
            wanted = normalise_heading(diag.section(lang))
            if not any(section_matches(wanted, h) for h in headings):
                verdict.warnings.append(
                    say(
                        "validate.section_unmatched",
                        diagnosis=diag_id,
                        section=diag.section(lang),
                        file=path.relative_to(project.root),
                    )
                )


# ---------------------------------------------------------------- graded checks (in the sandbox)

Grader = Callable[[Path, int], Report]


def graded_checks(
    project: Project,
    manifest: ExerciseManifest,
    verdict: ExerciseVerdict,
    grade_file: Grader,
    seeds: list[int],
) -> None:
    eid = manifest.id
    verdict.max_score = manifest.max_score

    reference_scores, failures = [], {}
    for seed in seeds:
        report = _safe_grade(
            grade_file, project.reference_path(eid), seed, f"reference (seed {seed})", verdict
        )
        if report is None:
            continue
        (result,) = report.exercises
        reference_scores.append(result.score)
        for c in result.checks:
            if c.status != "passed" and c.id not in verdict.unimplemented:
                failures.setdefault((c.id, c.status), ([], _one_line(c.message)))[0].append(seed)
    for (check_id, status), (failed_seeds, message) in failures.items():
        seeds_text = ", ".join(map(str, failed_seeds))
        verdict.problems.append(
            say("validate.reference_fails", seed=seeds_text, check=check_id, status=status, message=message)
        )
    verdict.reference_score = min(reference_scores) if reference_scores else None

    reports = _graded_under_seeds(grade_file, project.template_path(eid), seeds, "stub", eid, verdict)
    if reports:
        (result,) = reports[0].exercises
        verdict.stub_score = result.score
        for c in result.checks:
            if c.id in verdict.unimplemented:
                continue
            if c.status == "passed":
                verdict.problems.append(say("validate.stub_passes", check=c.id))
            elif c.status == "error":
                verdict.problems.append(say("validate.stub_error", check=c.id, message=_one_line(c.message)))

    try:
        mutants = load_mutants(project, eid)
    except ManifestError as exc:
        verdict.problems += [Text(zh=line, en=line) for line in exc.lines]
        mutants = []
    folder = mutants_dir(project).relative_to(project.root) / eid
    if not mutants and not manifest.diagnoses:
        verdict.warnings.append(say("validate.no_mutants", folder=folder))
    produced: set[str] = set()
    for mutant in mutants:
        verdict.mutants_total += 1
        for diagnosis in mutant.spec.expect.values():
            if diagnosis and lookup(manifest.diagnoses, diagnosis) is None:
                verdict.problems.append(
                    say("validate.mutant_unknown_diagnosis", name=mutant.name, diagnosis=diagnosis)
                )
        reports = _graded_under_seeds(grade_file, mutant.source, seeds, f"mutant {mutant.name}", eid, verdict)
        if not reports:
            continue
        report = reports[0]
        (result,) = report.exercises
        produced |= {c.diagnosis for c in result.checks if c.diagnosis}
        loss = result.max_score - result.score
        if verdict.worst_loss is None or loss > verdict.worst_loss:
            verdict.worst_loss, verdict.worst_mutant = loss, mutant.name
        if mutant_caught(mutant, report):
            verdict.mutants_caught += 1
        problems = mutant_problems(mutant, report)
        if not problems:
            verdict.mutants_named += 1
        verdict.problems += [say("validate.mutant", name=mutant.name, problem=_one_line(p)) for p in problems]
    unexercised = [d for d in manifest.diagnoses if d not in produced]
    if unexercised and not mutants:
        verdict.problems.append(
            say("validate.diagnoses_no_mutants", folder=folder, diagnoses=", ".join(unexercised))
        )
    else:
        for diagnosis in unexercised:
            verdict.problems.append(say("validate.diagnosis_unexercised", diagnosis=diagnosis, folder=folder))


def _graded_under_seeds(
    grade_file: Grader, source: Path, seeds: list[int], what: str, eid: str, verdict: ExerciseVerdict
) -> list[Report]:
    """`source` graded under every seed (first seed first); a problem when the results differ."""
    reports = [r for seed in seeds if (r := _safe_grade(grade_file, source, seed, what, verdict)) is not None]
    if len(reports) < 2:
        return reports
    first = failing_checks(reports[0], eid)
    differences = []
    for seed, report in zip(seeds[1:], reports[1:], strict=False):
        other = failing_checks(report, eid)
        changed = sorted(c for c in first.keys() | other.keys() if first.get(c) != other.get(c))
        if changed or report.score != reports[0].score:
            shown = "; ".join(f"{c} {first.get(c, 'passed')} → {other.get(c, 'passed')}" for c in changed)
            differences.append(
                f"seed {seeds[0]} scores {reports[0].score:g}, seed {seed} scores {report.score:g}"
                + (f" ({shown})" if shown else "")
            )
    if differences:
        verdict.problems.append(
            say("validate.seed_dependent", what=what, differences=" | ".join(differences))
        )
    return reports


def mutant_caught(mutant: Mutant, report: Report) -> bool:
    """The mutant lost points, and every check it declares failed because of the student code."""
    result = next(e for e in report.exercises if e.id == mutant.exercise)
    statuses = {c.id: c.status for c in result.checks}
    return result.score < result.max_score and all(statuses.get(c) in NOT_PASSING for c in mutant.spec.expect)


def _safe_grade(
    grade_file: Grader, source: Path, seed: int, what: str, verdict: ExerciseVerdict
) -> Report | None:
    if not source.is_file():
        return None
    try:
        return grade_file(source, seed)
    except Exception as exc:  # a crash of the harness is reported as a problem, never as a traceback
        verdict.problems.append(
            say("validate.grading_crashed", what=what, type=type(exc).__name__, message=_one_line(str(exc)))
        )
        return None


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- the whole run


def validate_project(
    project: Project,
    exercises: list[str] | None = None,
    seeds: list[int] | tuple[int, ...] = DEFAULT_SEEDS,
    *,
    lang: Lang = "en",
    pool=None,
    progress: Callable[[str], None] | None = None,
    jobs: int = 1,
) -> list[ExerciseVerdict]:
    """Validate `exercises` (default: all) of `project`; one verdict per exercise, in exercise order.

    With `jobs` > 1, exercises are validated side by side in that many processes (each with its own
    sandbox; `pool` is then unused): the same verdicts, sooner on a machine with as many cores.
    Raises `ManifestError` only for an unknown exercise id (bad usage); a bad manifest is a
    problem in that exercise's verdict.
    """
    ids = project.exercise_ids()
    unknown = [i for i in exercises or [] if i not in ids]
    if unknown:
        raise ManifestError([f"unknown exercise {i!r} (known: {', '.join(ids)})" for i in unknown])
    ids = [i for i in ids if not exercises or i in exercises]
    seeds = list(seeds)
    if jobs > 1 and len(ids) > 1:
        return _validate_side_by_side(project, ids, seeds, lang, progress, jobs)
    from ..core.runner import SessionGrader
    from ..sandbox.client import SandboxPool

    own_pool = pool is None
    pool = pool or SandboxPool()
    verdicts = []
    try:
        with tempfile.TemporaryDirectory(prefix="validate-") as scratch:
            for eid in ids:
                if progress:
                    progress(eid)
                verdict = ExerciseVerdict(eid)
                verdicts.append(verdict)
                try:
                    manifest = project.load_manifest(eid)
                except ManifestError as exc:
                    verdict.problems += [Text(zh=line, en=line) for line in exc.lines]
                    continue
                static_checks(project, manifest, verdict)
                if not project.grader_path(eid).is_file() or verdict.unparsable:
                    continue  # every graded check would only repeat the static problem
                folder = Path(scratch) / eid
                folder.mkdir()
                # one pytest session grades the reference, the stub and every mutant (as a batch job
                # does: `SessionGrader`), not one `pytest.main` per grading
                session = SessionGrader(project, pool=pool, exercises=[eid], run_hidden=True)

                def feed(
                    grade, eid: str = eid, folder: Path = folder, manifest=manifest, verdict=verdict
                ) -> None:
                    def grade_file(source: Path, seed: int) -> Report:
                        shutil.copyfile(source, folder / f"{eid}.py")
                        return grade(folder, seed=seed, lang=lang)

                    graded_checks(project, manifest, verdict, grade_file, seeds)

                session.run(feed)
    finally:
        if own_pool:
            pool.close()
    verdicts.sort(key=lambda v: _order(project, v.id))
    return verdicts


def _validate_side_by_side(
    project: Project, ids: list[str], seeds: list[int], lang: Lang,
    progress: Callable[[str], None] | None, jobs: int,
) -> list[ExerciseVerdict]:  # fmt: skip
    """`validate_project` for each exercise in a process of its own, `jobs` at a time, largest first
    (by mutant count) so that the last to finish is a small one. Fresh interpreters ("spawn"): a
    process forked from one where torch has run can deadlock."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    def size(eid: str) -> int:
        folder = mutants_dir(project) / eid
        return len(list(folder.glob("*.py"))) if folder.is_dir() else 0

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as executor:
        futures = []
        for eid in sorted(ids, key=size, reverse=True):
            if progress:
                progress(eid)
            futures.append(executor.submit(_validate_one, project.root, eid, seeds, lang))
        verdicts = [future.result() for future in futures]
    verdicts.sort(key=lambda v: _order(project, v.id))
    return verdicts


def _validate_one(root: Path, eid: str, seeds: list[int], lang: Lang) -> ExerciseVerdict:
    import torch

    torch.set_num_threads(1)  # one core per process: the processes share the machine
    return validate_project(Project(root), [eid], seeds, lang=lang)[0]


def _order(project: Project, eid: str) -> tuple[int, str]:
    try:
        return project.load_manifest(eid).order, eid
    except ManifestError:
        return 1 << 30, eid


# ---------------------------------------------------------------- printing


def _score(got: float | None, total: float | None) -> str:
    if got is None or not total:
        return "-"
    return f"{got:g}/{total:g} ({100 * got / total:.0f}%)"


def _ratio(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "0/0"


def render_table(verdicts: list[ExerciseVerdict], lang: Lang) -> str:
    rows = [tuple(say(key)(lang) for key in COLUMNS)]
    for v in verdicts:
        worst = f"-{v.worst_loss:g} ({v.worst_mutant})" if v.worst_loss is not None else "-"
        rows.append(
            (
                v.id,
                _score(v.reference_score, v.max_score),
                _score(v.stub_score, v.max_score),
                _ratio(v.mutants_caught, v.mutants_total),
                _ratio(v.mutants_named, v.mutants_total),
                worst,
                v.status,
            )
        )
    widths = [max(_width(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell + " " * (w - _width(cell)) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if CHINESE.match(ch) else 1 for ch in text)


def render_findings(verdicts: list[ExerciseVerdict], lang: Lang) -> str:
    lines = [f"FAIL {v.id}: {p(lang)}" for v in verdicts for p in v.problems]
    lines += [f"warn {v.id}: {w(lang)}" for v in verdicts for w in v.warnings]
    return "".join(line + "\n" for line in lines)


def render_total(verdicts: list[ExerciseVerdict], lang: Lang) -> str:
    total = sum(v.mutants_total for v in verdicts)
    caught = sum(v.mutants_caught for v in verdicts)
    named = sum(v.mutants_named for v in verdicts)
    pct = lambda n: f"{100 * n / total:.0f}%" if total else "-"  # noqa: E731
    text = say(
        "validate.total",
        count=len(verdicts),
        failed=sum(not v.ok for v in verdicts),
        caught=caught,
        named=named,
        total=total,
        caught_pct=pct(caught),
        named_pct=pct(named),
    )
    return text(lang) + "\n"


def parse_seeds(value: str) -> list[int]:
    try:
        seeds = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {value!r}") from None
    if not seeds:
        raise argparse.ArgumentTypeError("give at least one seed")
    return seeds


def cmd_validate(argv: list[str], project: Project) -> int:
    """`validate [--exercise ID ...] [--seeds 1,2,3] [--lang zh|en]`: 0 fair, 1 problems, 2 bad usage."""
    from ..core.i18n import default_lang

    parser = argparse.ArgumentParser(
        prog="grade.py validate",
        description="Prove every exercise fair: manifest, exports, checks, both languages, the reference "
        "scores full marks under several seeds, the stub scores zero, every mutant is caught and named.",
        parents=[exercise_option(), lang_option("language of the table and messages")],
    )
    parser.add_argument(
        "--seeds", type=parse_seeds, default=list(DEFAULT_SEEDS), metavar="S1,S2,...",
        help=f"seeds for the reference runs (default: {','.join(map(str, DEFAULT_SEEDS))})",
    )  # fmt: skip
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N",
        help="validate N exercises side by side, in N processes (default 1)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    lang = args.lang or default_lang()
    progress = (
        (lambda eid: print(say("validate.progress", exercise=eid)(lang), file=sys.stderr, flush=True))
        if sys.stderr.isatty()
        else None
    )
    verdicts = validate_project(project, args.exercise, args.seeds, lang=lang, progress=progress,
                                jobs=max(1, args.jobs))  # fmt: skip
    sys.stdout.write(render_table(verdicts, lang))
    findings = render_findings(verdicts, lang)
    if findings:
        sys.stdout.write("\n" + findings)
    sys.stdout.write("\n" + render_total(verdicts, lang))
    return 0 if all(v.ok for v in verdicts) else 1
