"""`python grade.py --watch`: grade, then regrade on every save, with everything kept warm.

A plain `python grade.py` spends most of its time starting: importing torch and pytest, starting
the sandbox's zygote, collecting the graders. Here that happens once. One `SandboxPool` and one
`SessionGrader` (one pytest session, graders collected once) live as long as the watcher; each save
regrades only the exercises whose file changed (every exercise when another module of the
submission changed, since an exercise may import it), each in a fresh sandboxed student session,
with the same seed every time, so the score moves only when the code does.

File watching is `watchfiles` (the optional extra `pip install ".[watch]"`): inotify on Linux,
FSEvents on macOS, polling elsewhere; a burst of writes (an editor's save-and-rename) is one change.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from ..core import inert
from ..core.i18n import Lang, say
from ..core.models import Report
from ..core.project import Project
from ..core.settings import Settings

DEBOUNCE_MS = 400  # the longest a burst of writes is gathered into one change
STEP_MS = 30  # a burst ends after this long without a new write
READY_MS = 200  # how often the watcher wakes without a change (to say it is ready)


class WatchUnavailable(Exception):
    """The optional dependency `watchfiles` is not installed."""


def exercises_to_regrade(changed: Iterable[Path], folder: Path, exercises: list[str]) -> set[str]:
    """The exercises a change of `changed` files can affect: its own file's exercise, or all of
    them when another module of the submission (a helper an exercise may import) changed."""
    names = {Path(p).name for p in changed if Path(p).suffix == ".py" and Path(p).parent == folder}
    if names - {f"{e}.py" for e in exercises}:
        return set(exercises)
    return {e for e in exercises if f"{e}.py" in names}


def merged(previous: Report, regraded: Report) -> Report:
    """`previous` with the exercises of `regraded` replaced, its total recomputed."""
    fresh = {e.id: e for e in regraded.exercises}
    exercises = [fresh.get(e.id, e) for e in previous.exercises]
    isolation = sorted(set(previous.isolation) | set(regraded.isolation))
    return previous.model_copy(
        update={
            "exercises": exercises,
            "score": sum(e.score for e in exercises),
            "max_score": sum(e.max_score for e in exercises),
            "isolation": isolation,
            "isolation_level": regraded.isolation_level if regraded.isolation else previous.isolation_level,
        }
    )


def watch(
    project: Project,
    folder: Path,
    settings: Settings,
    *,
    show: Callable[[Report, Report, TextIO], None],
    stop_event=None,
) -> None:
    """Grade `folder`, call `show(shown, whole, terminal)` (`shown`: what was regraded, `whole`: the
    latest result of every exercise, `terminal`: this process's stdout as it was at the start,
    since pytest captures the real one while its session runs), then regrade on each save until
    Ctrl-C (or until `stop_event` is set)."""
    seed, lang = settings.seed, settings.lang
    try:
        from watchfiles import PythonFilter
        from watchfiles import watch as changes_of
    except ImportError as exc:
        raise WatchUnavailable(say("watch.needs_watchfiles")(lang)) from exc
    from ..core.runner import SessionGrader
    from ..sandbox.client import SandboxPool

    folder = folder.resolve()
    terminal = open(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)  # noqa: SIM115
    ids = [m.id for m in project.load_manifests(settings.exercises)]
    with terminal, SandboxPool() as pool:
        grader = SessionGrader(project, pool=pool, settings=settings)

        def feed(grade: Callable[..., Report]) -> None:
            whole = grade(folder, seed=seed, lang=lang)
            show(whole, whole, terminal)
            announced = False  # "watching" is said once the watcher runs: a save after it counts
            for changes in changes_of(
                folder,
                watch_filter=PythonFilter(),
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                recursive=False,
                stop_event=stop_event,
                rust_timeout=READY_MS,
                yield_on_timeout=True,
            ):
                only = exercises_to_regrade((Path(p) for _, p in changes), folder, ids)
                if only:
                    regraded = grade(folder, seed=seed, lang=lang, only=only)
                    whole = merged(whole, regraded)
                    show(regraded, whole, terminal)
                    announced = False
                if not announced:
                    waiting(whole, folder, lang, terminal)
                    announced = True

        grader.run(feed)


def waiting(whole: Report, folder: Path, lang: Lang, terminal: TextIO) -> None:
    line = say("watch.waiting", score=f"{whole.score:g}", max_score=f"{whole.max_score:g}", folder=folder)
    print(inert.display_name(line(lang)), file=terminal, flush=True)
