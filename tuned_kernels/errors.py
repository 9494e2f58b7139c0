"""The one exception hierarchy of tuned-kernels: messages name the file, the field and what was expected."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator


class TunedKernelsError(Exception):
    """Base of every error tuned-kernels raises on purpose."""


class UnknownTargetError(TunedKernelsError):
    """A target name (e.g. from TUNED_KERNELS_TARGET) that tuned-kernels does not know."""


MAX_CAUSE_CHARS = 200


def one_line(text: str, limit: int = MAX_CAUSE_CHARS) -> str:
    """`text` on one line of at most `limit` characters, its control characters escaped: what a file says
    must neither flood the user's log nor reach their terminal as escape sequences."""
    flat = printable(" ".join(text[: limit * 16].split()))  # cut before escaping: a quoted file may be huge
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def printable(text: str) -> str:
    """`text` with every control character (C0, DEL, C1: what starts a terminal escape sequence) written as
    its escape, `\\x1b`."""
    return "".join(c if c.isprintable() or c == " " else ascii(c)[1:-1] for c in text)


class ResultsFormatError(TunedKernelsError):
    """A results file that cannot be read: bad extension, corrupt, truncated, foreign or a newer schema."""

    def __init__(self, path: str, cause: str) -> None:
        self.path = path
        self.cause = one_line(cause)
        super().__init__(f"{one_line(path)}: {self.cause}")


class BadEntryError(ResultsFormatError):
    """One entry of a results file that cannot be decoded or fails its checks; the file's other entries
    are still served."""


class MergeConflictError(TunedKernelsError):
    """Results from different targets or compilers merged without --allow-mixed."""


class CorpusError(TunedKernelsError):
    """A corpus spec that cannot be loaded or a corpus entry that is malformed."""


class BundleError(TunedKernelsError):
    """A bundle wheel or bundle directory that cannot be built or used."""


class TunedKernelsWarning(UserWarning):
    """What a user's program is told, once, when a bundle, overlay or launch is not used as it came."""


def warn(message: str) -> None:
    """One line on stderr, `tuned-kernels: message`, through the warnings module (so `-W` and pytest's
    warning capture still apply) but without its `file.py:241: TunedKernelsWarning:` prefix and source line."""
    global _previous_format
    if _previous_format is None:  # once: whatever formats other warnings keeps doing so
        _previous_format = warnings.formatwarning
        warnings.formatwarning = _one_line_format
    warnings.warn(f"tuned-kernels: {message}", TunedKernelsWarning, stacklevel=3)


_previous_format: Callable[[Warning | str, type[Warning], str, int, str | None], str] | None = None


def _one_line_format(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    if issubclass(category, TunedKernelsWarning) or _previous_format is None:
        return f"{printable(str(message))}\n"
    return _previous_format(message, category, filename, lineno, line)


@contextlib.contextmanager
def owner_decides(warn: Callable[[str], None], what: str, owner: str, said: set[str]) -> Iterator[None]:
    """Within this block, a failure of ours (a framework whose objects look otherwise) leaves the decision
    to its `owner` (Inductor, Helion): one warning per `what`, kept in `said`."""
    try:
        yield
    except Exception as exc:
        from tuned_kernels import fallbacks

        fallbacks.count("owner_decides")
        if what not in said:
            said.add(what)
            warn(f"could not {what}: {one_line(f'{type(exc).__name__}: {exc}')}; {owner} decides")
