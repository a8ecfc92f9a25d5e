"""Hugging Face config.json reader (perfmodel/specs/hf_config.py).

Fixtures under tests/fixtures/hf/<catalog id>/config.json are hand-written copies of the public
HF configs (values from ../shared/reference/model_arch.md §4 and the sources in its §7).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perfmodel.errors import InputError
from perfmodel.specs.hf_config import from_hf_config
from perfmodel.specs.model import ModelSpec, load_model
from perfmodel.specs.specfile import catalog_ids

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hf"

try:
    from perfmodel.specs.counts import param_counts
except ImportError:  # counts.py not there (yet): skip the count checks
    param_counts = None

CATALOG_FIXTURES = [
    "llama3-8b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "deepseek-v3",
    "kimi-k2",
    "llama4-scout",
    "llama4-maverick",
    "gpt-oss-120b",
]


def fixture(name: str) -> Path:
    return FIX / name / "config.json"


def fixture_doc(name: str) -> dict:
    return json.loads(fixture(name).read_text())


def write_config(tmp_path: Path, doc: dict | str, folder: str = "model", filename: str = "config.json") -> Path:
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    p = d / filename
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def load_doc(tmp_path: Path, doc: dict | str, **kw) -> ModelSpec:
    return load_model(str(write_config(tmp_path, doc, **kw)))


def arch(m: ModelSpec) -> dict:
    """The architecture fields (everything that decides counts and FLOPs; not seq_len or metadata)."""
    out = {
        "num_layers": m.num_layers,
        "hidden_size": m.hidden_size,
        "vocab_size": m.vocab_size,
        "tied_embeddings": m.tied_embeddings,
        "position_embedding": m.position_embedding,
        "max_position_embeddings": m.max_position_embeddings,
        "norm": m.norm,
        "norms_per_layer": m.norms_per_layer,
        "final_norm": m.final_norm,
        "mtp_layers": m.mtp_layers,
        "attention": m.attention.model_dump(),
        "ffn": m.ffn.model_dump(),
        "moe": None,
        "moe_layers": [m.is_moe_layer(i) for i in range(m.num_layers)],
        "windowed_layers": [m.is_windowed_layer(i) for i in range(m.num_layers)],
    }
    if m.moe:
        moe = m.moe.model_dump()
        moe["shared_intermediate_size"] = m.moe.shared_width if m.moe.shared_experts else 0
        out["moe"] = moe
    return out


_n = iter(range(10**6))


def expect_error(tmp_path: Path, doc: dict | str, field: str, *words: str) -> InputError:
    # a fresh folder per call: load_model caches by path
    with pytest.raises(InputError) as ei:
        load_doc(tmp_path, doc, folder=f"bad{next(_n)}")
    err = ei.value
    msg = str(err)
    assert err.field == field, msg
    assert field in msg and "config.json" in msg, msg
    for w in words:
        assert w in msg, msg
    return err


# ---- loading against the catalog ----------------------------------------------------------------


@pytest.mark.parametrize("mid", CATALOG_FIXTURES)
def test_matches_catalog_architecture(mid):
    if mid not in catalog_ids("models"):
        pytest.skip(f"catalog models/{mid}.toml not written yet")
    hf = load_model(str(fixture(mid)))
    cat = load_model(mid)
    assert hf.id == mid
    assert arch(hf) == arch(cat)
    if param_counts is not None:
        a, b = param_counts(hf), param_counts(cat)
        assert (a.total, a.active, a.n_mm, a.mtp_total) == (b.total, b.active, b.n_mm, b.mtp_total)


def test_llama3_8b_fields():
    m = load_model(str(fixture("llama3-8b")))
    assert (m.num_layers, m.hidden_size, m.vocab_size) == (32, 4096, 128256)
    a = m.attention
    assert (a.kind, a.num_heads, a.num_kv_heads, a.head_dim) == ("gqa", 32, 8, 128)
    assert not (a.qkv_bias or a.o_bias) and a.qk_norm == "none" and a.window == 0
    assert (m.ffn.activation, m.ffn.intermediate_size, m.ffn.bias) == ("swiglu", 14336, False)
    assert m.moe is None and not m.tied_embeddings and m.norm == "rmsnorm"
    assert m.seq_len == 8192  # max_position_embeddings <= 8192: full context
    assert m.name == "llama llama3-8b"
    assert m.sources["num_layers"] == "config.json num_hidden_layers"
    assert m.path == str(fixture("llama3-8b"))
    if "llama3-8b" in catalog_ids("models") and param_counts is not None:
        assert param_counts(m).total == param_counts(load_model("llama3-8b")).total == 8_030_261_248


def test_gpt2_124m():
    m = load_model(str(fixture("gpt2")))
    assert (m.id, m.name) == ("gpt2", "gpt2 gpt2")
    assert (m.num_layers, m.hidden_size, m.vocab_size, m.max_position_embeddings) == (12, 768, 50257, 1024)
    a = m.attention
    assert (a.kind, a.num_heads, a.num_kv_heads, a.head_dim, a.qkv_bias, a.o_bias) == ("mha", 12, 12, 64, True, True)
    assert (m.ffn.activation, m.ffn.intermediate_size, m.ffn.bias) == ("gelu", 3072, True)
    assert m.tied_embeddings and m.position_embedding == "learned" and m.norm == "layernorm"
    assert m.seq_len == 1024
    if param_counts is not None:
        assert param_counts(m).total == 124_439_808
        assert param_counts(m).active == 124_439_808


def test_mixtral_fields():
    m = load_model(str(fixture("mixtral-8x7b")))
    assert m.ffn.intermediate_size == 0 and m.num_moe_layers == 32
    assert (m.moe.num_experts, m.moe.top_k, m.moe.expert_intermediate_size, m.moe.shared_experts) == (8, 2, 14336, 0)
    assert m.attention.window == 0  # sliding_window null
    assert m.seq_len == 4096  # 32768 context, no rope_scaling: assumed 4096
    assert "assumed 4096" in m.sources["seq_len"]


def test_qwen3_moe_fields():
    m = load_model(str(fixture("qwen3-30b-a3b")))
    a = m.attention
    assert (a.num_heads, a.num_kv_heads, a.head_dim, a.qk_norm) == (32, 4, 128, "rmsnorm")
    assert (m.moe.num_experts, m.moe.top_k, m.moe.expert_intermediate_size) == (128, 8, 768)
    assert m.moe.shared_experts == 0 and m.ffn.intermediate_size == 0  # 6144 unused: all layers MoE


def test_deepseek_v3_fields():
    m = load_model(str(fixture("deepseek-v3")))
    a = m.attention
    assert (a.kind, a.num_heads, a.q_lora_rank, a.kv_lora_rank) == ("mla", 128, 1536, 512)
    assert (a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim) == (128, 64, 128)
    e = m.moe
    assert (e.num_experts, e.shared_experts, e.top_k, e.expert_intermediate_size) == (256, 1, 8, 2048)
    assert (e.first_dense_layers, e.interval, e.score_correction_bias) == (3, 1, True)
    assert (e.route_groups, e.route_group_topk) == (8, 4)  # node-limited routing: n_group / topk_group
    assert m.num_moe_layers == 58 and m.ffn.intermediate_size == 18432 and m.mtp_layers == 1
    assert m.seq_len == 4096  # rope_scaling.original_max_position_embeddings
    assert "original_max_position_embeddings" in m.sources["seq_len"]


def test_kimi_k2_uses_deepseek_v3():
    m = load_model(str(fixture("kimi-k2")))
    assert m.name == "kimi_k2 kimi-k2"
    assert (m.attention.num_heads, m.moe.num_experts, m.moe.first_dense_layers, m.mtp_layers) == (64, 384, 1, 0)
    assert m.moe.route_groups == 0  # n_group = 1: routing is unrestricted


def test_llama4_text_config():
    scout = load_model(str(fixture("llama4-scout")))
    a = scout.attention
    assert (a.window, a.window_kind, a.global_every, a.qk_norm) == (8192, "chunked", 4, "l2")
    assert scout.num_windowed_layers == 36 and scout.num_moe_layers == 48
    assert (scout.moe.num_experts, scout.moe.shared_experts, scout.moe.shared_width) == (16, 1, 8192)
    assert scout.seq_len == 8192
    assert scout.sources["num_layers"] == "config.json text_config.num_hidden_layers"
    mav = load_model(str(fixture("llama4-maverick")))
    assert (mav.moe.interval, mav.moe.first_dense_layers, mav.num_moe_layers) == (2, 0, 24)
    assert mav.ffn.intermediate_size == 16384 and mav.attention.qk_norm == "none"


def test_gpt_oss():
    m = load_model(str(fixture("gpt-oss-120b")))
    a = m.attention
    assert (a.window, a.window_kind, a.global_every, a.sinks, a.qkv_bias) == (128, "sliding", 2, True, True)
    assert m.ffn.activation == "clamped_swiglu" and m.moe.router_bias and m.moe.expert_bias
    # YaRN RoPE scaling, as the catalog file has it; none without rope_scaling
    assert m.rope_scaling == load_model("gpt-oss-120b").rope_scaling == "yarn"
    doc = fixture_doc("gpt-oss-120b")
    del doc["rope_scaling"]
    assert from_hf_config(doc, "x/config.json", ModelSpec).rope_scaling == "none"
    # without layer_types: HF default (sliding on even layers)
    doc = fixture_doc("gpt-oss-120b")
    del doc["layer_types"]
    assert from_hf_config(doc, "x/config.json", ModelSpec).attention.global_every == 2


# ---- conversions of HF conventions ---------------------------------------------------------------


def test_defaults_for_optional_keys(tmp_path):
    doc = fixture_doc("llama3-8b")
    for k in ("num_key_value_heads", "tie_word_embeddings", "attention_bias", "hidden_act"):
        del doc[k]
    m = load_doc(tmp_path, doc)
    assert m.attention.kind == "mha" and m.attention.num_kv_heads == 32
    assert not m.tied_embeddings and m.ffn.activation == "swiglu"


def test_head_dim_null_means_default(tmp_path):
    doc = fixture_doc("llama3-8b") | {"head_dim": None}
    assert load_doc(tmp_path, doc).attention.head_dim == 128


def test_architectures_fallback(tmp_path):
    doc = fixture_doc("llama3-8b")
    del doc["model_type"]
    m = load_doc(tmp_path, doc)
    assert m.attention.num_kv_heads == 8 and m.name == "llama model"


def test_id_from_file_stem(tmp_path):
    m = load_doc(tmp_path, fixture_doc("llama3-8b"), filename="my-llama.json")
    assert m.id == "my-llama"


def test_llama31_seq_len_from_rope_scaling(tmp_path):
    doc = fixture_doc("llama3-8b") | {
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
    }
    m = load_doc(tmp_path, doc)
    assert (m.seq_len, m.max_position_embeddings) == (8192, 131072)


def test_mistral_sliding_window_every_layer(tmp_path):
    doc = fixture_doc("llama3-8b") | {
        "model_type": "mistral",
        "sliding_window": 4096,
        "max_position_embeddings": 32768,
        "vocab_size": 32000,
    }
    m = load_doc(tmp_path, doc)
    assert m.attention.window == 4096 and m.num_windowed_layers == 32


def test_qwen2_qkv_bias(tmp_path):
    doc = fixture_doc("llama3-8b") | {"model_type": "qwen2", "tie_word_embeddings": True}
    m = load_doc(tmp_path, doc)
    assert (m.attention.qkv_bias, m.attention.o_bias, m.tied_embeddings) == (True, False, True)


def test_qwen3_moe_mlp_only_leading_layers(tmp_path):
    doc = fixture_doc("qwen3-30b-a3b") | {"mlp_only_layers": [0, 1]}
    m = load_doc(tmp_path, doc)
    assert (m.moe.first_dense_layers, m.num_moe_layers, m.ffn.intermediate_size) == (2, 46, 6144)


def test_qwen3_moe_sparse_step(tmp_path):
    doc = fixture_doc("qwen3-30b-a3b") | {"decoder_sparse_step": 2}
    m = load_doc(tmp_path, doc)
    assert (m.moe.interval, m.num_moe_layers, m.ffn.intermediate_size) == (2, 24, 6144)


def test_deepseek_v2_lite_style(tmp_path):
    doc = fixture_doc("deepseek-v3") | {
        "model_type": "deepseek_v2",
        "q_lora_rank": None,
        "topk_method": "greedy",
        "first_k_dense_replace": 1,
    }
    del doc["num_nextn_predict_layers"]
    m = load_doc(tmp_path, doc)
    assert m.attention.q_lora_rank == 0 and not m.moe.score_correction_bias and m.mtp_layers == 0
    assert m.moe.first_dense_layers == 1


# ---- bad input: one InputError naming the file and the HF key ----------------------------------


def test_missing_hidden_size(tmp_path):
    doc = fixture_doc("llama3-8b")
    del doc["hidden_size"]
    expect_error(tmp_path, doc, "hidden_size", "missing")


def test_missing_text_config_field(tmp_path):
    doc = fixture_doc("llama4-scout")
    del doc["text_config"]["num_local_experts"]
    expect_error(tmp_path, doc, "text_config.num_local_experts", "missing")


def test_negative_value(tmp_path):
    doc = fixture_doc("llama3-8b") | {"num_attention_heads": -32}
    expect_error(tmp_path, doc, "num_attention_heads", "positive", "-32")


def test_gpt2_negative_and_zero(tmp_path):
    expect_error(tmp_path, fixture_doc("gpt2") | {"n_layer": -1}, "n_layer", "-1")
    expect_error(tmp_path, fixture_doc("gpt2") | {"n_embd": 0}, "n_embd", "positive")


@pytest.mark.parametrize("value", ["4096", 4096.5, True, [4096], None])
def test_wrong_type(tmp_path, value):
    doc = fixture_doc("llama3-8b") | {"hidden_size": value}
    expect_error(tmp_path, doc, "hidden_size")


def test_too_large(tmp_path):
    expect_error(tmp_path, fixture_doc("llama3-8b") | {"num_hidden_layers": 10**9}, "num_hidden_layers", "at most")


def test_unknown_model_type(tmp_path):
    doc = fixture_doc("llama3-8b") | {"model_type": "mamba_xl", "architectures": ["MambaXLForCausalLM"]}
    err = expect_error(tmp_path, doc, "model_type", "mamba_xl", "supported")
    for fam in ("gpt2", "llama", "mixtral", "qwen3_moe", "deepseek_v3"):
        assert fam in str(err)


def test_close_model_type_hint(tmp_path):
    doc = fixture_doc("llama3-8b") | {"model_type": "lama", "architectures": []}
    expect_error(tmp_path, doc, "model_type", "did you mean 'llama'")


def test_missing_model_type_and_architectures(tmp_path):
    doc = fixture_doc("llama3-8b")
    del doc["model_type"], doc["architectures"]
    expect_error(tmp_path, doc, "model_type", "missing")


def test_non_json_file(tmp_path):
    p = write_config(tmp_path, "{ this is not json", folder="broken")
    with pytest.raises(InputError) as ei:
        load_model(str(p))
    assert "not valid JSON" in str(ei.value) and str(p) in str(ei.value)


def test_json_not_an_object(tmp_path):
    with pytest.raises(InputError, match="top level"):
        load_doc(tmp_path, "[1, 2, 3]", folder="list")
    with pytest.raises(InputError, match="top level"):
        from_hf_config([1, 2], "x/config.json", ModelSpec)  # type: ignore[arg-type]


def test_text_config_not_an_object(tmp_path):
    expect_error(tmp_path, fixture_doc("llama4-scout") | {"text_config": 5}, "text_config", "object")


def test_kv_heads_not_divisor(tmp_path):
    doc = fixture_doc("llama3-8b") | {"num_key_value_heads": 5}
    expect_error(tmp_path, doc, "num_key_value_heads", "multiple")


def test_head_dim_not_derivable(tmp_path):
    doc = fixture_doc("llama3-8b") | {"num_attention_heads": 24, "num_key_value_heads": 8}
    expect_error(tmp_path, doc, "head_dim", "not a multiple")


def test_top_k_above_experts(tmp_path):
    expect_error(tmp_path, fixture_doc("mixtral-8x7b") | {"num_experts_per_tok": 9}, "num_experts_per_tok", "exceeds")


def test_mlp_only_layers_not_expressible(tmp_path):
    doc = fixture_doc("qwen3-30b-a3b") | {"mlp_only_layers": [5, 17]}
    expect_error(tmp_path, doc, "mlp_only_layers", "cannot be expressed")


def test_mlp_only_layers_out_of_range(tmp_path):
    doc = fixture_doc("qwen3-30b-a3b") | {"mlp_only_layers": [48]}
    expect_error(tmp_path, doc, "mlp_only_layers", "out of range")


def test_deepseek_moe_layer_freq_not_expressible(tmp_path):
    # HF: MoE when i % moe_layer_freq == 0 -> layers 4, 6, 8, ...; ModelSpec needs (i+1) % interval == 0
    doc = fixture_doc("deepseek-v3") | {"moe_layer_freq": 2}
    expect_error(tmp_path, doc, "moe_layer_freq", "cannot be expressed")


def test_first_k_dense_too_large(tmp_path):
    expect_error(tmp_path, fixture_doc("deepseek-v3") | {"first_k_dense_replace": 61}, "first_k_dense_replace")


def test_unsupported_activation(tmp_path):
    expect_error(tmp_path, fixture_doc("llama3-8b") | {"hidden_act": "relu2"}, "hidden_act", "relu2")


def test_mla_zero_rank(tmp_path):
    expect_error(tmp_path, fixture_doc("deepseek-v3") | {"kv_lora_rank": 0}, "kv_lora_rank", "positive")


def test_schema_error_names_hf_key(monkeypatch):
    """A ModelSpec schema error is reported under the HF key that fed the field."""
    import perfmodel.specs.hf_config as hf

    def failing(model, doc, where):
        raise InputError(where, "attention.num_kv_heads", "boom")

    monkeypatch.setattr(hf, "validate", failing)
    with pytest.raises(InputError) as ei:
        hf.from_hf_config(fixture_doc("llama3-8b"), "m/config.json", ModelSpec)
    assert ei.value.field == "num_key_value_heads" and "boom" in str(ei.value)
