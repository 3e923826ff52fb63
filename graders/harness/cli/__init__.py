"""Command-line interface behind `grade.py`. This module only wires arguments to the harness.

    python grade.py [PATH] [--format text|html|md|json|gradescope|prairielearn|junit] [--out FILE]
                    [--lang zh|en] [--seed N]
                    [--exercise ID ...] [--fail-under SCORE] [--watch]
    python grade.py schema            the JSON Schema of the JSON report

Exit status: 0 when grading ran (whatever the score), 1 below --fail-under, 2 for bad usage or a
bad manifest, 130 when stopped by Ctrl-C (then no report is written and nothing is left behind).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from ..core import inert
from ..core.i18n import Lang, Text, say
from ..core.intake import REPORT_SUFFIX
from ..core.options import exercise_option, lang_option
from ..core.project import ManifestError, Project, UsageError, default_project
from ..core.settings import Settings
from ..sandbox.launch import take_interrupts

EXIT_OK, EXIT_BELOW, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def grade_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="grade.py",
        parents=[
            lang_option("report language (default: from the locale)"),
            exercise_option("grade only this exercise (repeatable)"),
        ],
        description="Grade a submission of this course's exercises in a sandbox and print a scored report.",
        epilog="Other commands: schema, validate, new, build, batch, merge, similarity "
        "(python grade.py COMMAND --help).",
    )
    parser.add_argument(
        "path",
        nargs="?",
        default=None,
        help="submission folder, or a Jupyter notebook (default: submission/, created from the template)",
    )
    formats = ["text", "html", "md", "json", "gradescope", "prairielearn", "junit"]
    parser.add_argument("--format", choices=formats, default="text")
    parser.add_argument("--out", type=Path, default=None, help="write the report to FILE instead of stdout")
    parser.add_argument(
        "--fail-under", type=float, default=None, metavar="SCORE", help="exit 1 when the total is below SCORE"
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="keep running: regrade each exercise when its file is saved (needs watchfiles)",
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="seed for the check inputs (default: random, printed)"
    )
    return parser


def tell(text: Text | str, lang: Lang, file=None) -> None:
    """Print one notice line: whatever names or paths it holds (a folder's name is anyone's choice)
    shown inert, on one line (`inert.display_name`: escapes, invisible characters, line breaks)."""
    line = text if isinstance(text, str) else text(lang)
    print(inert.display_name(line), file=file or sys.stderr)


def prepare_submission(project: Project, path: str | None, notice: Callable[[Text], None]) -> Path:
    """The folder to grade; on a first run without PATH, `submission/` copied from the template."""
    if path is None:
        folder = project.root / "submission"
        if not folder.exists():
            shutil.copytree(project.root / "student_template", folder)
            notice(say("cli.created", folder=folder))
        else:
            add_missing_stubs(project, folder, notice)
        return folder
    folder = Path(path)
    if not folder.exists():
        raise UsageError(f"{folder}: no such {'notebook' if folder.suffix.lower() == '.ipynb' else 'folder'}")
    if folder.suffix.lower() == ".ipynb" and folder.is_file():  # a notebook: its tagged cells (see notebook)
        return folder
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder (give the folder that holds your exercise files)")
    return folder


def add_missing_stubs(project: Project, folder: Path, notice: Callable[[Text], None]) -> None:
    """Copy into `submission/` the stub of each exercise it lacks (one added by `grade.py new`, or a
    new lesson's): otherwise it would score 0 as "file not found"."""
    added = []
    for exercise in project.exercise_ids():
        stub, mine = project.template_path(exercise), folder / f"{exercise}.py"
        if stub.is_file() and not mine.exists() and not mine.is_symlink():
            shutil.copyfile(stub, mine)
            added.append(mine.name)
    if added:
        notice(say("cli.added", files=", ".join(added), folder=folder))


def cmd_grade(argv: list[str], project: Project) -> int:
    from ..core.runner import grade
    from ..formats import render  # text/html/md/json from reports, plus the LMS formats
    from ..formats.progress import CheckProgress

    args = grade_parser().parse_args(argv)
    settings = Settings.from_args(args, project)
    lang = settings.lang
    one_thread()
    if args.watch and (args.out is not None or args.format != "text" or args.fail_under is not None):
        raise UsageError(say("watch.format")(lang))
    folder = prepare_submission(project, args.path, lambda text: tell(text, lang))
    if args.watch:
        if folder.is_file():  # a notebook: it is saved as one file, and its last cell grades it
            raise UsageError(f"{folder}: --watch takes a folder of .py files, not a notebook")
        return cmd_watch(project, folder, settings)
    progress = CheckProgress(sys.stderr.fileno()) if sys.stderr.isatty() else None
    try:
        with interruptible():
            report = grade(project, folder, settings=settings, progress=progress)
    except KeyboardInterrupt:  # the sandbox is already gone (grade's own clean-up); nothing is written
        if progress is not None:
            progress.close()
        tell(say("cli.interrupted"), lang)
        return EXIT_INTERRUPTED
    if progress is not None:
        progress.close()
    if args.out is not None:
        args.out.write_text(render(report, args.format, project=project), encoding="utf-8")
        tell(say("cli.report_written", path=args.out), lang)
    else:
        color = args.format == "text" and sys.stdout.isatty()
        sys.stdout.write(render(report, args.format, color=color, project=project))
        if args.format == "text":
            write_html_report(project, folder, report, lang)
    if args.fail_under is not None and report.score < args.fail_under:
        return EXIT_BELOW
    return EXIT_OK


def one_thread() -> None:
    """The trusted side's tensors are small: torch's thread pool only adds hand-offs, and on a busy
    machine its OpenMP threads spin waiting for a core (regrades measured 2-8x slower)."""
    import torch

    torch.set_num_threads(1)


def html_report_path(project: Project, folder: Path) -> Path:
    """Where a text-mode grade also writes its HTML report: the project's `reports/` folder, never
    beside the submission (a batch over the submission's parent would take it for a student)."""
    return project.root / "reports" / f"{inert.file_stem(folder.resolve().name)}{REPORT_SUFFIX}"


def write_html_report(project: Project, folder: Path, report, lang: Lang, notices=None) -> None:
    from ..formats import render

    notices = notices or sys.stderr
    html = html_report_path(project, folder)
    try:
        html.parent.mkdir(exist_ok=True)
        html.write_text(render(report, "html", project=project), encoding="utf-8")
    except OSError as exc:  # a read-only course folder: the terminal report stands alone
        tell(say("cli.html_not_written", path=html, problem=exc.strerror), lang, notices)
        return
    tell(say("cli.html_report", path=html), lang, notices)


def cmd_watch(project: Project, folder: Path, settings: Settings) -> int:
    from ..formats import render
    from .watch import WatchUnavailable, watch

    color = sys.stdout.isatty()

    def show(shown, whole, terminal) -> None:
        terminal.write(render(shown, "text", color=color, project=project))
        write_html_report(project, folder, whole, settings.lang, notices=terminal)

    try:
        if take_interrupts():  # Ctrl-C while starting
            raise KeyboardInterrupt
        watch(project, folder, settings, show=show)
    except WatchUnavailable as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:  # how a watch ends
        print(file=sys.stderr)
    return EXIT_OK


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C (SIGINT) raises KeyboardInterrupt once; a second one while the sandbox is being torn
    down is ignored, so that the clean-up finishes and nothing is left behind."""

    def first(signum, frame) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    take = take_interrupts()  # a Ctrl-C while starting (grade.py defers those): stop now
    previous = signal.signal(signal.SIGINT, first)
    try:
        if take:
            raise KeyboardInterrupt
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_schema(argv: list[str], project: Project) -> int:
    from ..formats.reports import json_schema

    argparse.ArgumentParser(
        prog="grade.py schema", description="Print the JSON Schema of the JSON report."
    ).parse_args(argv)
    sys.stdout.write(json_schema())
    return EXIT_OK


# command -> (module, function): a command's module is imported when it runs, so that grading one
# submission does not import the batch, build and validate machinery first
COMMANDS: dict[str, tuple[str, str]] = {
    "schema": (__name__, "cmd_schema"),
    "batch": ("..batch.dispatcher", "cmd_batch"),
    "merge": ("..batch.dispatcher", "cmd_merge"),
    "similarity": ("..batch.dispatcher", "cmd_similarity"),
    "build": ("..authoring.build", "cmd_build"),
    "validate": ("..authoring.validate", "cmd_validate"),
    "new": ("..authoring.scaffold", "cmd_new"),
}


def command_of(name: str) -> Callable[[list[str], Project], int] | None:
    if name not in COMMANDS:
        return None
    module, function = COMMANDS[name]
    return getattr(importlib.import_module(module, __package__), function)


def main(argv: list[str] | None = None, project: Project | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    project = project or default_project()
    command = command_of(argv[0]) if argv else None
    try:
        if command is not None:
            return command(argv[1:], project)
        return cmd_grade(argv, project)
    except ManifestError as exc:
        for line in exc.lines:
            print(f"error: {inert.display_name(line)}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"error: {inert.display_name(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
