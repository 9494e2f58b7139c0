"""post_import.when_imported: what TUNED_KERNELS=1 uses to start at Triton's or Inductor's import."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tuned_kernels.post_import import when_imported


def test_callbacks_for_one_module_share_one_finder_and_run_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "watched_module_xyz.py").write_text("VALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    heard: list[tuple[str, int]] = []

    def first(module: ModuleType) -> None:
        heard.append(("first", module.VALUE))

    def second(module: ModuleType) -> None:
        heard.append(("second", module.VALUE))

    finders = len(sys.meta_path)
    when_imported("watched_module_xyz", first)
    when_imported("watched_module_xyz", second)
    assert len(sys.meta_path) == finders + 1
    import watched_module_xyz  # noqa: F401

    assert heard == [("first", 7), ("second", 7)]
    assert len(sys.meta_path) == finders  # the finder is gone once it has fired
    when_imported("watched_module_xyz", first)  # already imported: at once
    assert heard[-1] == ("first", 7)
    del sys.modules["watched_module_xyz"]
