"""post_import.when_imported: what TUNED_KERNELS=1 uses to start at Triton's or Inductor's import."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tuned_kernels.post_import import when_import_done, when_imported


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


def test_a_module_asked_for_from_inside_its_own_import_is_handed_over_once_it_has_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dynamo's convert_frame imports Inductor's config before it defines its classes: asked for from there,
    it is handed over at the next import after its own has finished, never half made."""
    (tmp_path / "outer_module_xyz.py").write_text("import inner_module_xyz\nLATE = 7\n")
    (tmp_path / "inner_module_xyz.py").write_text("")
    (tmp_path / "after_module_xyz.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    heard: list[int] = []

    def ask(_: ModuleType) -> None:
        when_import_done("outer_module_xyz", lambda module: heard.append(module.LATE))

    when_imported("inner_module_xyz", ask)
    try:
        import outer_module_xyz  # noqa: F401

        assert heard == []  # asked for while half made; nothing imported since it finished
        import after_module_xyz  # noqa: F401

        assert heard == [7]
    finally:
        for name in ("outer_module_xyz", "inner_module_xyz", "after_module_xyz"):
            sys.modules.pop(name, None)
