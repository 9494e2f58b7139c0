"""hardware/: detection from recorded device facts, the target override, the compiler fingerprint."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from tuned_kernels.hardware import (
    DeviceFacts,
    compiler_fingerprint,
    detect,
    target_for_arch,
    target_from_facts,
)
from tuned_kernels.hardware import probe as detect_module
from tuned_kernels.hardware.archs import normalize_gcn_arch, triton_target_of

from tuned_kernels.errors import UnknownTargetError
from tuned_kernels.naming import distribution_name

FIXTURES = sorted((Path(__file__).parent / "fixtures" / "devices").glob("*.json"))


def load_fixture(path: Path) -> tuple[DeviceFacts, dict[str, str]]:
    data = json.loads(path.read_text())
    facts = data["facts"]
    if "capability" in facts:
        facts["capability"] = tuple(facts["capability"])
    return DeviceFacts(**facts), data["expect"]


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_recorded_device_normalizes_to_its_arch_and_bundle(fixture: Path) -> None:
    facts, expect = load_fixture(fixture)
    target = target_from_facts(facts)
    assert (target.vendor, target.arch, distribution_name(target.arch)) == (
        expect["vendor"],
        expect["arch"],
        expect["bundle_name"],
    )
    if facts.backend:
        assert target.device_name == facts.name
        assert target.multiprocessor_count == facts.multiprocessor_count


@pytest.mark.parametrize(
    ("gcn", "arch"),
    [
        ("gfx942:sramecc+:xnack-", "gfx942"),
        ("gfx90a:sramecc+:xnack-", "gfx90a"),
        ("gfx950", "gfx950"),
        ("GFX1100:xnack+", "gfx1100"),
    ],
)
def test_amd_arch_name_drops_feature_flags(gcn: str, arch: str) -> None:
    assert normalize_gcn_arch(gcn) == arch


def test_probe_reads_torch_device_properties(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    props = SimpleNamespace(
        name="NVIDIA H100 80GB HBM3",
        major=9,
        minor=0,
        multi_processor_count=132,
        total_memory=85520809984,
        gcnArchName="",
    )
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    facts = detect_module.probe_device()
    assert facts.backend == "cuda" and facts.capability == (9, 0) and facts.runtime_version == "13.0"
    assert target_from_facts(facts).arch == "sm90"


def test_no_gpu_is_the_cpu_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TUNED_KERNELS_TARGET", raising=False)
    assert detect().arch == "cpu"


@pytest.mark.parametrize("value", ["sm90", "SM90", "sm_90", "sm90a", "gfx942", "cpu", "sm100"])
def test_target_override_is_honoured(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TUNED_KERNELS_TARGET", value)
    target = detect()
    assert target.arch == value.lower().replace("_", "")
    assert distribution_name(target.arch) == f"tuned-kernels-{target.arch}"


def test_unknown_target_lists_the_valid_ones() -> None:
    with pytest.raises(
        UnknownTargetError, match=r"unknown target 'sm91'; valid targets: .*sm90.*gfx942.*cpu"
    ):
        target_for_arch("sm91")


@pytest.mark.parametrize(
    ("arch", "triton"),
    [
        ("sm90", ("cuda", 90, 32)),
        ("sm90a", ("cuda", 90, 32)),
        ("sm100", ("cuda", 100, 32)),
        ("gfx942", ("hip", "gfx942", 64)),
    ],
)
def test_arch_maps_to_tritons_gpu_target(arch: str, triton: tuple[object, ...]) -> None:
    assert triton_target_of(arch) == triton


def test_fingerprint_follows_tritons_cache_key_and_backend() -> None:
    import triton

    cpu = compiler_fingerprint(target_for_arch("cpu"))
    sm90 = compiler_fingerprint(target_for_arch("sm90"))
    assert cpu.triton_version == sm90.triton_version == triton.__version__
    assert cpu.triton_hash == sm90.triton_hash and len(cpu.triton_hash) == 64
    assert cpu.compiler_id != sm90.compiler_id  # the backend (ptxas for sm90) is part of it
    assert "ptxas" in dict(sm90.backend_versions)
