"""Progress on long work: a counter redrawn in place on a terminal; in a log (CI, a pipe) a
plain line at most every INTERVAL seconds, so a long run is never silent and never floods."""

from __future__ import annotations

import sys
import time

INTERVAL = 10.0  # seconds between lines when the stream is not a terminal


class Progress:
    def __init__(self, label: str, total: int | None = None, *, stream=None,
                 enabled: bool | None = None, interval: float = INTERVAL):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.enabled = True if enabled is None else enabled
        self.tty = _isatty(self.stream)
        self.interval = interval
        self._started = self._said = time.monotonic()
        self._lines = 0

    def __enter__(self) -> "Progress":
        if self.tty:
            self._draw("")
        return self

    def step(self, what: str = "", n: int = 1) -> None:
        self.done += n
        if self.tty:
            self._draw(what)
        elif self.enabled and time.monotonic() - self._said >= self.interval:
            self._line(f"{self.label}: {self._count()} {what} "
                       f"({time.monotonic() - self._started:.0f}s)".rstrip())

    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total else str(self.done)

    def _draw(self, what: str) -> None:
        if self.enabled:
            self.stream.write(f"\r{self.label}: {self._count()} {what}"[:120].ljust(120))
            self.stream.flush()

    def _line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        self._said = time.monotonic()
        self._lines += 1

    def __exit__(self, *exc) -> None:
        if not self.enabled:
            return
        took = time.monotonic() - self._started
        done = f"{self.label}: {self.done} done in {took:.1f}s"
        if self.tty:
            self.stream.write(f"\r{done}".ljust(120) + "\n")
            self.stream.flush()
        elif self._lines or took >= self.interval:
            self._line(done)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
