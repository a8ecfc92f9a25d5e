"""The catalog: parameter counts vs published figures, model FLOPs per token vs source-implied values,
and a source on every number of every hardware file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from perfmodel.specs.counts import flops_per_token, param_counts
from perfmodel.specs.model import load_model
from perfmodel.specs.specfile import catalog_ids, data_dir

HARDWARE_IDS = {
    "a100-sxm-80gb",
    "h100-sxm",
    "h100-grand-teton",
    "h800-sxm",
    "h200-sxm",
    "b200",
    "b300",
    "gb200-nvl72",
    "gb300-nvl72",
    "mi300x",
}
MODEL_IDS = {
    "deepseek-v3",
    "gpt-1.7b",
    "gpt-145b",
    "gpt-175b",
    "gpt-18b",
    "gpt-1t",
    "gpt-22b",
    "gpt-3.6b",
    "gpt-310b",
    "gpt-39b",
    "gpt-530b",
    "gpt-7.5b",
    "gpt-76b",
    "gpt-oss-120b",
    "gpt3-175b",
    "grok1-314b",
    "kimi-k2",
    "llama2-13b",
    "llama2-70b",
    "llama2-7b",
    "llama3-70b",
    "llama3-8b",
    "llama3.1-405b",
    "llama4-maverick",
    "llama4-scout",
    "mixtral-8x22b",
    "mixtral-8x7b",
    "nemotron4-15b",
    "nemotron4-340b",
    "qwen3-235b-a22b",
    "qwen3-30b-a3b",
}


def test_hardware_ids_exact():
    assert set(catalog_ids("hardware")) == HARDWARE_IDS


def test_model_ids_present():
    assert MODEL_IDS <= set(catalog_ids("models"))


@pytest.mark.parametrize("mid", catalog_ids("models"))
def test_params_match_published(mid):
    m = load_model(mid)
    assert m.published is not None, f"{mid}: no [published] section"
    pc = param_counts(m)
    pub = m.published
    assert abs(pc.total - pub.total_params) / pub.total_params <= pub.tolerance, (mid, pc.total, pub.total_params)
    if pub.active_params:
        gap = abs(pc.active - pub.active_params) / pub.active_params
        assert gap <= pub.active_tolerance, (mid, pc.active, pub.active_params)
    assert pc.active <= pc.total
    assert (pc.active == pc.total) == (not m.is_moe)


def test_llama3_8b_hand_count():
    # 32 layers x (attention 4096*(4096+2*1024) + 4096*4096 = 41,943,040; SwiGLU 3*4096*14336 = 176,160,768;
    # two RMSNorms 8,192) + embedding and untied head 2*128256*4096 = 1,050,673,152 + final norm 4,096
    per_layer = 4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336 + 2 * 4096
    assert 32 * per_layer + 2 * 128256 * 4096 + 4096 == 8_030_261_248
    assert param_counts(load_model("llama3-8b")).total == 8_030_261_248


# model FLOPs per token (training, fwd+bwd) implied by the sources' own MFU / TFLOP/s figures
FLOPS_CASES = [
    ("llama3.1-405b", 8192, "causal", True, 2.524e12),
    ("llama3-70b", 8192, "causal", True, 4.49e11),
    ("llama3-8b", 8192, "causal", True, 5.15e10),
    ("deepseek-v3", 4096, "causal", True, 2.600e11),
    ("deepseek-v3", 4096, "causal", False, 2.497e11),
    ("qwen3-235b-a22b", 4096, "causal", True, 1.480e11),
    ("qwen3-30b-a3b", 4096, "causal", True, 2.30e10),
    ("kimi-k2", 4096, "causal", True, 2.045e11),
    ("gpt3-175b", 2048, "full", True, 1.074e12),
]


@pytest.mark.parametrize("mid,seq,conv,mtp,expected", FLOPS_CASES)
def test_flops_per_token(mid, seq, conv, mtp, expected):
    got = float(flops_per_token(load_model(mid), seq, conv, mtp=mtp))
    assert abs(got - expected) / expected < 0.02, (mid, got, expected)


@pytest.mark.parametrize("mid", catalog_ids("models"))
def test_flops_properties(mid):
    """Full attention counts at least as many FLOPs as causal; both grow with S; at least 6 N_active-ish."""
    m = load_model(mid)
    causal = [float(flops_per_token(m, s, "causal")) for s in (1024, 4096)]
    full = [float(flops_per_token(m, s, "full")) for s in (1024, 4096)]
    assert causal[1] >= causal[0] and full[1] > full[0]
    assert all(f >= c for f, c in zip(full, causal))
    assert causal[0] >= 6 * param_counts(m).n_mm


def _numeric_leaves_without_source(doc, path=""):
    """Dotted paths of numeric leaves not written as {value = ..., source = "..."}."""
    if isinstance(doc, dict):
        if "value" in doc:
            return [] if str(doc.get("source", "")).strip() else [path]
        out = []
        for k, v in doc.items():
            out += _numeric_leaves_without_source(v, f"{path}.{k}" if path else k)
        return out
    if isinstance(doc, list):
        return [p for i, v in enumerate(doc) for p in _numeric_leaves_without_source(v, f"{path}[{i}]")]
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return [path]
    return []


@pytest.mark.parametrize("hid", sorted(HARDWARE_IDS))
def test_every_hardware_number_has_a_source(hid):
    raw = tomllib.loads((data_dir("hardware") / f"{hid}.toml").read_text())
    assert _numeric_leaves_without_source(raw) == []


def test_source_walker_flags_bare_numbers():
    assert _numeric_leaves_without_source({"a": {"x": 1.0, "y": {"value": 2, "source": "s"}}}) == ["a.x"]
    assert _numeric_leaves_without_source({"z": {"value": 2}}) == ["z"]
    assert Path(data_dir("hardware")).is_dir()


def test_a_changed_copy_of_a_spec_hashes_apart():
    # The specs cache their hash in pydantic's private storage, which model_copy copies: a copy with changed
    # fields (the power-capped clock, a --set what-if) must not keep its original's hash, and an unchanged copy
    # keeps it (the planner's caches are keyed on the specs).
    from perfmodel.specs.hardware import load_hardware

    hw = load_hardware("h100-sxm")
    h = hash(hw)
    capped = hw.at_clock(0.8)
    assert capped != hw and hash(capped) != h and hash(hw.model_copy()) == h
    m = load_model("llama3-70b")
    assert hash(m.model_copy(update={"num_layers": 10})) != hash(m) == hash(m.model_copy())
