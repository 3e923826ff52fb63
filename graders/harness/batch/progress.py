"""Batch progress: a live bar (rich) with count, rate and ETA on a terminal; plain lines otherwise.

The plain form (one line per finished submission) is what a CI log or `nohup` file wants; the
bar is for a person watching a terminal, drawn by `rich.progress`. Student names reach it as plain
text (`markup=False`, made printable by `inert.single_line`), never as rich markup. The rate
counts only submissions graded in this run, so a resumed batch does not claim the speed of work
done earlier.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

from ..core import inert
from ..formats.result import SubmissionResult

if TYPE_CHECKING:
    from rich.progress import Progress as Bar


def clock(seconds: float) -> str:
    seconds = max(int(seconds + 0.5), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    def __init__(self, total: int, done: int, stream: TextIO, bar: bool, width: int = 30) -> None:
        self.total, self.done, self.kept = total, done, done
        self.stream = stream
        self.start = time.monotonic()
        self.bar: Bar | None = None
        if bar:  # imported here: only a batch watched on a terminal draws a bar
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as Bar

            console = Console(file=stream, force_terminal=True, width=100, highlight=False)
            self.bar = Bar(
                BarColumn(bar_width=width),
                MofNCompleteColumn(),
                TextColumn("{task.fields[speed]}", markup=False),
                TextColumn("{task.fields[student]}", markup=False),
                console=console,
                auto_refresh=False,
                transient=False,
            )
            self.task = self.bar.add_task("batch", total=total, completed=done, speed="", student="")

    @property
    def graded_now(self) -> int:
        return self.done - self.kept

    def rate(self) -> float:
        elapsed = time.monotonic() - self.start
        return self.graded_now / elapsed if elapsed > 0 else 0.0

    def speed(self, sep: str = "  ") -> str:
        rate = self.rate()
        eta = clock((self.total - self.done) / rate) if rate > 0 else "?"
        return f"{rate:.1f}/s{sep}ETA {eta}"

    def line(self, result: SubmissionResult) -> str:
        score = (
            f"{result.score:g}/{result.max_score:g}" if result.status == "graded" else result.problem or "-"
        )
        return (
            f"[{self.done:>{len(str(self.total))}}/{self.total}] {inert.single_line(result.student)}: "
            f"{result.status} {inert.single_line(score)} "
            f"({result.elapsed:.2f} s; {self.speed(', ')})\n"
        )

    def started(self) -> None:
        if self.bar is not None:
            self.bar.start()
            self.bar.refresh()

    def advance(self, result: SubmissionResult) -> None:
        self.done += 1
        if self.bar is None:
            self.stream.write(self.line(result))
            self.stream.flush()
            return
        student = inert.single_line(result.student)[:24]
        self.bar.update(self.task, completed=self.done, speed=self.speed(), student=student)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
