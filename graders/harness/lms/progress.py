"""Batch progress: a redrawn bar with count, rate and ETA on a terminal; plain lines otherwise.

The plain form (one line per finished submission) is what a CI log or `nohup` file wants; the
bar is for a person watching a terminal. The rate counts only submissions graded in this run, so
a resumed batch does not claim the speed of work done earlier.
"""

from __future__ import annotations

import time
from typing import TextIO

from .. import inert
from .result import SubmissionResult


def clock(seconds: float) -> str:
    seconds = max(int(seconds + 0.5), 0)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class Progress:
    def __init__(self, total: int, done: int, stream: TextIO, bar: bool, width: int = 30) -> None:
        self.total, self.done, self.kept = total, done, done
        self.stream, self.bar, self.width = stream, bar, width
        self.start = time.monotonic()

    @property
    def graded_now(self) -> int:
        return self.done - self.kept

    def rate(self) -> float:
        elapsed = time.monotonic() - self.start
        return self.graded_now / elapsed if elapsed > 0 else 0.0

    def line(self, result: SubmissionResult | None = None) -> str:
        rate = self.rate()
        left = self.total - self.done
        eta = clock(left / rate) if rate > 0 else "?"
        if self.bar:
            filled = int(self.width * self.done / self.total) if self.total else self.width
            tail = f"  {inert.single_line(result.student)[:24]}" if result else ""
            bar = "#" * filled + "." * (self.width - filled)
            return f"\r[{bar}] {self.done}/{self.total}  {rate:.1f}/s  ETA {eta}{tail}\x1b[K"
        assert result is not None
        score = (
            f"{result.score:g}/{result.max_score:g}" if result.status == "graded" else result.problem or "-"
        )
        return (
            f"[{self.done:>{len(str(self.total))}}/{self.total}] {inert.single_line(result.student)}: "
            f"{result.status} {inert.single_line(score)} "
            f"({result.elapsed:.2f} s; {rate:.1f}/s, ETA {eta})\n"
        )

    def started(self) -> None:
        if self.bar:
            self.stream.write(self.line())
            self.stream.flush()

    def advance(self, result: SubmissionResult) -> None:
        self.done += 1
        self.stream.write(self.line(result))
        self.stream.flush()

    def close(self) -> None:
        if self.bar:
            self.stream.write("\n")
            self.stream.flush()
