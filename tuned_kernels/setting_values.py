"""How a `TUNED_KERNELS_*` value is read: one parser per kind of value, used both where a setting takes
effect and where `registry/environment_check.py` judges it, so that every value is either honoured or named
as ignored, never both and never neither. Choices are read without case or surrounding blanks
(`Nearest`, ` seed`); a switch is on as 1, true, yes or on and off as 0, false, no or off; a count is 1 to
3 ASCII digits (`+8`, `1_0`, `²` and a 5,000-digit number are not counts). Pure."""

from __future__ import annotations

MAX_MISS_JOBS = 256  # a larger value is a mistake: the default is used, and the check says so
ON = ("1", "true", "yes", "on")
OFF = ("0", "false", "no", "off")
SWITCH = ON + OFF
SWITCH_TAKES = "1, true, yes or on; 0, false, no or off"  # as a check names a switch's values
VERBOSE_TAKES = "1, true, yes, on or a higher level; 0, false, no or off"


def choice(text: str | None, choices: tuple[str, ...]) -> str | None:
    """The choice `text` names, or None (unset, or not one of `choices`)."""
    value = (text or "").strip().lower()
    return value if value in choices else None


def count(text: str | None, largest: int = MAX_MISS_JOBS) -> int | None:
    """The whole number from 1 to `largest` that `text` is, or None."""
    value = (text or "").strip()
    if not 1 <= len(value) <= 3 or not all("0" <= c <= "9" for c in value):
        return None
    return int(value) if 1 <= int(value) <= largest else None


def switch(text: str | None, default: bool) -> bool:
    """An on/off setting; unset, empty or anything else (named by the check) is the default."""
    value = choice(text, SWITCH)
    return default if value is None else value in ON


def verbosity(text: str | None) -> bool | None:
    """TUNED_KERNELS_VERBOSE: on as a switch is on or as a higher level (2, 3, ...: asking for more never
    gives less), off as a switch is off; None when unset or neither."""
    value = choice(text, SWITCH)
    if value is not None:
        return value in ON
    return True if count(text) is not None else None
