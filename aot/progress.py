"""Progress lines: rewritten in place on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.width = 0

    def line(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + text[:160].ljust(self.width))
            self.width = min(len(text), 160)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
