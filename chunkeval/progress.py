"""Progress on long work: a one-line counter on a terminal, silence elsewhere (CI logs, pipes)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, label: str, total: int | None = None, *, stream=None, enabled: bool | None = None):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._started = time.monotonic()

    def __enter__(self) -> "Progress":
        self._draw("")
        return self

    def step(self, what: str = "", n: int = 1) -> None:
        self.done += n
        self._draw(what)

    def _draw(self, what: str) -> None:
        if not self.enabled:
            return
        count = f"{self.done}/{self.total}" if self.total else str(self.done)
        line = f"\r{self.label}: {count} {what}"[:120]
        self.stream.write(line.ljust(120))
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        if self.enabled:
            took = time.monotonic() - self._started
            self.stream.write(f"\r{self.label}: {self.done} done in {took:.1f}s".ljust(120) + "\n")
            self.stream.flush()
