"""Software-stack presets (perfmodel/specs/stack.py, stacks/*.toml): schema, sources, overrides, row mapping,
and `validate` over every shipped set."""

from __future__ import annotations

import csv
import json
import re
import tomllib
from pathlib import Path

import pytest

from perfmodel import api
from perfmodel.analysis.validate import read_csv, shipped_sets, validate_rows
from perfmodel.cli import main
from perfmodel.errors import InputError
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import (
    BASES,
    FEATURES,
    OPTIONAL,
    Features,
    apply_overrides,
    infer_stack,
    load_stack,
    stack_for_row,
    stack_ids,
)

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = {"megatron-core", "llm-foundry-2023", "maxtext-gpu-2024", "torchtitan-2025"}
REQUIRED_PRESETS = {
    "nemo-24.07",
    "dgxc-24.11",
    "nemo-25.04",
    "dgxc-25.05",
    "nemo-25.09",
    "nemo-25.11",
    "nemo-26.02",
    "nemo-26.04",
    "megatron-lm-2021",
    "megatron-lm-2022",
    "megatron-deepspeed-2023",
    "megatron-deepspeed-2021",
    "megatron-deepspeed-bloom-2022",
    "llm-foundry-2023",
    "maxtext-gpu-2024",
    "torchtitan-2025",
    "torchtitan-2025-compile",
    "zero-bubble-2024",
    "fp8-lm-2023",
    "simumax-b200-2025",
    "default",
}


def _write(tmp_path: Path, text: str, name: str = "s.toml") -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def _full_features() -> str:
    """A [features] table stating every feature with the megatron-core values (a valid family preset)."""
    mc = load_stack("megatron-core")
    lines = ["[features]"]
    for f in FEATURES:
        v = mc.value(f)
        tv = '"none"' if v is None else json.dumps(list(v) if isinstance(v, tuple) else v)
        lines.append(f'{f} = {{ value = {tv}, source = "test" }}')
    return "\n".join(lines) + "\n"


# ---- every shipped preset ------------------------------------------------------------------------


def test_required_presets_ship():
    assert REQUIRED_PRESETS <= set(stack_ids())


@pytest.mark.parametrize("sid", stack_ids())
def test_every_preset_loads_and_every_feature_has_a_source(sid):
    s = load_stack(sid)
    assert s.id == sid
    for f in FEATURES:
        assert s.sources[f].strip(), f"{sid}: {f} has no source"
        assert s.origin[f].split(":")[0] in ("stated", "inherited", "unstated", "per_model")
    for rule in s.per_model:
        assert set(rule.values) == set(rule.sources) and all(v.strip() for v in rule.sources.values())
    if s.family != sid:  # a release preset names an existing family preset
        assert s.family in FAMILIES
    else:  # a family preset states every feature itself, but the optional ones (stack.OPTIONAL: the schema default)
        assert {o for f, o in s.origin.items() if f not in OPTIONAL} == {"stated"}
        assert all(s.origin[f] in ("stated", "unstated:schema") for f in OPTIONAL)


def test_unstated_takes_the_family_default_and_says_so():
    rel, fam = load_stack("nemo-25.09"), load_stack("megatron-core")
    assert rel.origin["attention_kernel"] == "unstated:megatron-core"
    assert rel.value("attention_kernel") == fam.value("attention_kernel")
    assert rel.sources["attention_kernel"].startswith("not published for this release")
    # still unstated two releases on (inherited through base), not relabelled "inherited"
    assert load_stack("nemo-26.04").origin["attention_kernel"] == "unstated:megatron-core"
    # the family default keeps its per-hardware rule: Transformer Engine prefers cuDNN only on sm90+
    a100 = rel.for_model("gpt3-175b", False, "a100-sxm-80gb")
    assert (
        a100.value("attention_kernel") == "fa2" and "family rule of megatron-core" in a100.sources["attention_kernel"]
    )
    assert rel.for_model("gpt3-175b", False, "h100-sxm").value("attention_kernel") == "cudnn"
    # a preset that states the feature is not touched by the family's rule
    assert (
        load_stack("megatron-lm-2021").for_model("gpt3-175b", False, "a100-sxm-80gb").value("attention_kernel")
        == "unfused"
    )


def test_base_inheritance_records_the_base():
    s = load_stack("nemo-25.11")
    assert s.base == "nemo-25.09"
    assert s.origin["tp_overlap"] == "inherited:nemo-25.09" and s.value("tp_overlap") == "userbuffers"
    assert s.sources["tp_overlap"].startswith("as nemo-25.09 (")


def test_per_model_rules_apply_by_model_hardware_and_precision():
    s = load_stack("nemo-25.09")
    h100 = s.for_model("deepseek-v3", True, "h100-sxm")
    assert (h100.value("moe_dispatcher"), h100.value("moe_a2a_overlap")) == ("deepep", True)
    assert h100.value("recompute_modules") == ("mla_up_proj", "mlp")
    assert h100.origin["moe_dispatcher"] == "per_model:model=deepseek-v3,hardware=h100"
    b200 = s.for_model("deepseek-v3", True, "b200")
    assert (b200.value("moe_dispatcher"), b200.value("moe_a2a_overlap")) == ("alltoall", False)
    # Megatron-Bridge v0.1.0rc3 (NeMo 25.09) run_script.py:88-91 sets no B200 recompute_modules: Megatron-Core's
    # ['core_attn'] (inferred: the B200 rows' TP1 is not the tag's TP2); GB200 ['mla_up_proj', 'mlp', 'moe_act']
    assert b200.value("recompute_modules") == ("core_attn",) and b200.basis_of("recompute_modules") == "inferred"
    gb200 = s.for_model("deepseek-v3", True, "gb200-nvl72", "fp8")
    assert gb200.value("recompute_modules") == ("mla_up_proj", "mlp", "moe_act")
    assert gb200.basis_of("recompute_modules") == "inferred" and h100.basis_of("recompute_modules") == "read"
    assert s.for_model("llama3-70b", False, "h100-sxm") is s  # no rule matches: the preset itself
    n = load_stack("nemo-26.04")
    # a later release's rule replaces the base's: 25.09 ran DeepEP with the A2A overlapped on H100, 26.04 HybridEP without
    assert (
        n.for_model("deepseek-v3", True, "h100-sxm", "bf16").value("moe_dispatcher"),
        n.for_model("deepseek-v3", True, "h100-sxm", "bf16").value("moe_a2a_overlap"),
    ) == ("hybridep", False)
    assert n.for_model("qwen3-235b-a22b", True, "h100-sxm", "bf16").value("moe_a2a_overlap") is True
    assert n.for_model("qwen3-235b-a22b", True, "b300", "bf16").value("moe_dispatcher") == "alltoall"
    # 26.04 (deepseek_workload_base_configs.py at v0.4.0, 0fbfe7d3): no expert all-to-all overlap for DeepSeek-V3; the
    # GB300 / GB200 FP8-MX overlap, CuTe-DSL grouped MLP and full-iteration graphs are 26.06's (v0.5.0, fcbb6031)
    assert n.for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8").value("moe_a2a_overlap") is False
    assert n.for_model("deepseek-v3", True, "gb200-nvl72", "bf16").value("moe_a2a_overlap") is False
    s6 = load_stack("nemo-26.06")
    g6 = s6.for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8")
    assert (g6.value("moe_a2a_overlap"), g6.value("grouped_gemm"), g6.value("cuda_graphs")) == (
        True,
        "cutedsl",
        "full_iteration",
    )
    # v0.5.0: B300 FP8_MX V2 = B300 BF16 V2 (TE graphs, no overlap; 04264182 on main had full-iteration graphs), and
    # B200 FP8_MX V2 is its own DeepEP preset with the all-to-all overlapped (was V1's "no overlap")
    b36 = s6.for_model("deepseek-v3", True, "b300", "mxfp8")
    assert (b36.value("moe_a2a_overlap"), b36.value("grouped_gemm"), b36.value("cuda_graphs")) == (
        False,
        "te",
        "per_layer",
    )
    b26 = s6.for_model("deepseek-v3", True, "b200", "mxfp8")
    assert (b26.value("moe_dispatcher"), b26.value("moe_a2a_overlap")) == ("deepep", True)
    assert s6.for_model("deepseek-v3", True, "gb300-nvl72", "mxfp8").value("recompute") == "none"
    assert n.for_model("llama3-70b", False, "gb200-nvl72", "bf16").value("fsdp") == "megatron_fsdp"
    assert n.for_model("llama3-70b", False, "gb200-nvl72", "mxfp8").value("fsdp") == "zero1"
    # Megatron-FSDP gathers each unit's parameters before every forward and releases them after its backward
    # (megatron_fsdp.py at the Megatron-LM pin d7288711): per micro-batch, so a rank holds its 1/dp shard, not the
    # gathered 70B (at tp 1, dp 64 on GB200: 141 GB of BF16 weights gathered for the step would not fit)
    for hw_id in ("gb200-nvl72", "gb300-nvl72"):
        r = n.for_model("llama3-70b", False, hw_id, "bf16")
        assert (r.value("fsdp_gather"), r.value("reshard_after_forward")) == ("per_microbatch", True)
    lay = api.Layout(gpus=64, gbs=128, seq=8192)
    p = api.predict("llama3-70b", "gb200-nvl72", lay, "bf16", stack="nemo-26.04")
    assert bool(p.fits[0]) and float(p.memory_parts["weights"][0]) < 0.05 * 70e9 * 2


def test_moe_release_facts_gpt_oss_26_04_and_qwen3_30b_26_06():
    n = load_stack("nemo-26.04")
    # GPT_OSS_120B V2 at v0.4.0 (0fbfe7d3): GB200 BF16 overlaps the expert all-to-all, GB200 / B300 / B200 BF16 run
    # HybridEP (07eea52d on main, cited before, had dropped it on GB200 / B200)
    assert n.for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16").value("moe_a2a_overlap") is True
    assert n.for_model("gpt-oss-120b", True, "b200", "bf16").value("moe_a2a_overlap") is False
    assert n.for_model("gpt-oss-120b", True, "b300", "bf16").value("moe_dispatcher") == "hybridep"
    assert n.for_model("gpt-oss-120b", True, "b200", "bf16").value("moe_dispatcher") == "hybridep"
    assert n.for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16").value("moe_dispatcher") == "hybridep"
    # v0.4.0: every GPT_OSS_120B FP8_MX V2 preset is its BF16 V2 preset (no full-iteration / CuTe-DSL path yet)
    mx = n.for_model("gpt-oss-120b", True, "gb300-nvl72", "mxfp8")
    assert (mx.value("cuda_graphs"), mx.value("grouped_gemm"), mx.value("recompute")) == ("per_layer", "te", "none")
    assert n.for_model("gpt-oss-120b", True, "b300", "mxfp8").value("moe_a2a_overlap") is False
    # 26.04.01 = Megatron-Bridge v0.4.2: GB200 / B200 BF16 V2 back on all-to-all; 26.06 (v0.5.0): B300 FP8_MX V2 =
    # BF16 V2 (HybridEP, TE graphs, no overlap), GB300 / GB200 FP8_MX V2 overlapped full-iteration CuTe-DSL
    p1 = load_stack("nemo-26.04.01")
    assert p1.for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16").value("moe_dispatcher") == "alltoall"
    assert p1.for_model("qwen3-235b-a22b", True, "b300", "mxfp8").value("moe_dispatcher") == "hybridep"
    g36 = load_stack("nemo-26.06").for_model("gpt-oss-120b", True, "b300", "mxfp8")
    assert (g36.value("moe_dispatcher"), g36.value("moe_a2a_overlap"), g36.value("grouped_gemm")) == (
        "hybridep",
        False,
        "te",
    )
    assert g36.basis_of("moe_a2a_overlap") == "read"
    g6mx = load_stack("nemo-26.06").for_model("gpt-oss-120b", True, "gb300-nvl72", "mxfp8")
    assert (g6mx.value("cuda_graphs"), g6mx.value("grouped_gemm")) == ("full_iteration", "cutedsl")
    q = load_stack("nemo-26.06")
    g = q.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert (g.value("cuda_graphs"), g.value("moe_a2a_overlap"), g.value("grouped_gemm")) == (
        "full_iteration",
        True,
        "cutedsl",
    )
    # the rule is the 26.06 release's: 26.04 keeps the partial TE graphs, and 26.06 H100 FP8 is untouched
    assert n.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8").value("cuda_graphs") == "per_layer"
    assert q.for_model("qwen3-30b-a3b", True, "h100-sxm", "fp8").value("moe_a2a_overlap") is False
    # 26.02 (qwen3_workload_base_configs.py at v0.3.0, 21b02e0c): HybridEP + partial TE graphs on GB, the B300 235B
    # preset overlaps the all-to-all (PP8 VP4), B200 does not; B-series keeps the provider's all-to-all dispatcher
    f = load_stack("nemo-26.02")
    g2 = f.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "mxfp8")
    assert (g2.value("moe_dispatcher"), g2.value("cuda_graphs")) == ("hybridep", "per_layer")
    assert f.for_model("qwen3-235b-a22b", True, "b300", "mxfp8").value("moe_a2a_overlap") is True
    assert f.for_model("qwen3-235b-a22b", True, "b200", "mxfp8").value("moe_a2a_overlap") is False
    b3 = f.for_model("qwen3-235b-a22b", True, "b300", "mxfp8")
    assert (b3.value("moe_dispatcher"), b3.basis_of("moe_dispatcher")) == ("alltoall", "read")
    assert (b3.value("fp8_param_gather"), b3.value("recompute"), b3.basis_of("recompute")) == (True, "none", "read")
    # fp8_param_gather is now stated for the whole release (Megatron-Bridge v0.3.0 mixed_precision.py:251, 289: True in
    # the MXFP8 and current-scaling recipes; it only acts with FP8 on)
    assert f.for_model("qwen3-235b-a22b", True, "b300", "bf16").value("fp8_param_gather") is True
    assert f.for_model("qwen3-30b-a3b", True, "b200", "mxfp8").value("moe_dispatcher") == "alltoall"
    # 26.02 gpt-oss at v0.3.0 (21b02e0c): GB200 BF16 V2 without the all-to-all overlap (07eea52d's), the B300 / B200
    # rules inferred (the tag's presets are EP64, the rows EP8)
    assert f.for_model("gpt-oss-120b", True, "b200", "bf16").value("recompute_modules") == ("layernorm", "moe_act")
    assert f.for_model("gpt-oss-120b", True, "gb300-nvl72", "bf16").value("cuda_graphs") == "per_layer"
    assert f.for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16").value("moe_a2a_overlap") is False
    assert f.for_model("gpt-oss-120b", True, "b300", "bf16").basis_of("moe_dispatcher") == "inferred"
    e = load_stack("nemo-25.11")
    # Megatron-Bridge v0.2.0 qwen3/workload_base_configs.py:193-200 QWEN3_30B_A3B GB200 FP8_MX: HybridEP, TE graphs
    assert e.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8").value("moe_dispatcher") == "hybridep"
    # 25.11 Qwen3-235B, assigned by layout to the V1/V2 presets: HybridEP + partial graphs on GB, overlap on H100
    assert e.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "bf16").value("moe_dispatcher") == "hybridep"
    assert e.for_model("qwen3-235b-a22b", True, "h100-sxm", "fp8").value("moe_a2a_overlap") is True
    assert e.for_model("qwen3-235b-a22b", True, "b200", "fp8").value("moe_a2a_overlap") is False


def test_distinct_stacks_differ_where_their_sources_differ():
    # the independent SimuMax launches switch every overlap off; NVIDIA's recipes switch them on
    smx, nemo = load_stack("simumax-b200-2025"), load_stack("nemo-25.09")
    assert (smx.value("tp_overlap"), smx.value("dp_grad_reduce_overlap"), smx.value("grad_reduce_precision")) == (
        "none",
        False,
        "fp32",
    )
    assert (nemo.value("tp_overlap"), nemo.value("dp_grad_reduce_overlap"), nemo.value("grad_reduce_precision")) == (
        "userbuffers",
        True,
        "bf16",
    )
    assert load_stack("megatron-lm-2021").value("sequence_parallel") is False
    assert load_stack("megatron-lm-2022").value("sequence_parallel") is True
    assert load_stack("torchtitan-2025-compile").value("fusions") == "torch_compile"
    assert load_stack("torchtitan-2025").value("fusions") == "none"


# ---- schema errors name the field ----------------------------------------------------------------


@pytest.mark.parametrize(
    "edit, field, reason",
    [
        (
            lambda t: t.replace('tp_overlap = { value = "none"', 'tp_overlap = { value = "sometimes"'),
            "features.tp_overlap",
            "must be one of 'none', 'bulk'",
        ),
        (
            lambda t: t.replace(
                'sequence_parallel = { value = false, source = "test" }', "sequence_parallel = { value = false }"
            ),
            "features.sequence_parallel.source",
            "every feature names its source",
        ),
        (
            lambda t: t.replace(
                'sequence_parallel = { value = false, source = "test" }',
                'sequence_parallel = { value = false, source = " " }',
            ),
            "features.sequence_parallel.source",
            "every feature names its source",
        ),
        (lambda t: t.replace("tp_overlap =", "tp_overlapp ="), "features.tp_overlapp", "did you mean 'tp_overlap'"),
        (
            lambda t: "\n".join(ln for ln in t.splitlines() if not ln.startswith("cuda_graphs")),
            "features.cuda_graphs",
            "required field is missing",
        ),
        (
            lambda t: t.replace(
                'cuda_graphs = { value = "none", source = "test" }', "cuda_graphs = { unstated = true }"
            ),
            "features.cuda_graphs",
            "its own family",
        ),
        (
            lambda t: t + 'power_limit_w = { value = 500, source = "site" }\n',  # moved: a cap is a hardware fact
            "features.power_limit_w",
            "hardware power.power_limit_w",
        ),
        (
            lambda t: re.sub(
                r"recompute_modules = \{ value = \[[^\]]*\]", 'recompute_modules = { value = ["attn_everything"]', t, 1
            ),
            "features.recompute_modules.0",
            "must be one of 'core_attn'",
        ),
    ],
)
def test_schema_errors_name_the_field(tmp_path, edit, field, reason):
    text = 'name = "t"\nfamily = "s"\n' + _full_features()
    assert load_stack(_write(tmp_path, text)).id == "s"  # the unedited file is valid
    with pytest.raises(InputError) as e:
        load_stack(_write(tmp_path, edit(text)))
    assert e.value.field == field and reason in e.value.reason


def test_release_file_errors(tmp_path):
    with pytest.raises(InputError) as e:
        load_stack(_write(tmp_path, 'name = "t"\nfamily = "megatron-core"\nbase = "nemo-25.09"\n'))
    assert e.value.field == "base_source"
    with pytest.raises(InputError) as e:
        load_stack(_write(tmp_path, 'name = "t"\nfamily = "megatron-corr"\n'))
    assert e.value.field == "family" and "megatron-core" in e.value.reason
    with pytest.raises(InputError) as e:
        load_stack(
            _write(
                tmp_path,
                'name = "t"\nfamily = "megatron-core"\nbase = "nemo-25.09"\nbase_source = "x"\n'
                '[[per_model]]\nmatch = { vendor = "x" }\nfsdp = { value = "zero1", source = "y" }\n',
            )
        )
    assert e.value.field == "vendor" and "unknown field" in e.value.reason
    # a release file: base + one stated feature + one unstated feature
    s = load_stack(
        _write(
            tmp_path,
            'name = "t"\nfamily = "megatron-core"\nbase = "nemo-25.09"\nbase_source = "x"\n'
            '[features]\ncuda_graphs = { value = "full_iteration", source = "doc" }\n'
            'tp_overlap = { unstated = true, note = "n/a" }\n',
        )
    )
    assert (s.value("cuda_graphs"), s.origin["cuda_graphs"]) == ("full_iteration", "stated")
    assert (s.value("tp_overlap"), s.origin["tp_overlap"]) == ("none", "unstated:megatron-core")


# ---- --stack-set overrides ------------------------------------------------------------------------


def test_parameter_sharding_over_a_preset_that_shards_none_gathers_per_micro_batch():
    # megatron-deepspeed-2023 runs ZeRO stage 0 (fsdp_gather per_step, "not applicable"); ZeRO-3 or FSDP2 set over it
    # takes the implementation's default, parameters gathered for every micro-batch and freed after the forward
    base = load_stack("megatron-deepspeed-2023")
    for kind in ("zero3", "fsdp2", "megatron_fsdp"):
        s = apply_overrides(base, [f"fsdp={kind}"])
        assert (s.value("fsdp_gather"), s.value("reshard_after_forward")) == ("per_microbatch", True)
        assert s.origin["fsdp_gather"] == "implied" and "implied by --stack-set fsdp=" in s.sources["fsdp_gather"]
    # what the same overrides state wins; a sharding that keeps parameters (ZeRO-1 / 2) implies nothing; a preset
    # that already shards parameters keeps its own gathering
    s = apply_overrides(base, ["fsdp=zero3", "fsdp_gather=per_step"])
    assert (s.value("fsdp_gather"), s.value("reshard_after_forward")) == ("per_step", True)
    assert apply_overrides(base, ["fsdp=zero2"]).value("fsdp_gather") == "per_step"
    tt = load_stack("torchtitan-2025")
    assert apply_overrides(tt, ["fsdp=fsdp1"]).value("fsdp_gather") == tt.value("fsdp_gather")
    # in the cost model: the ZeRO-3 rank holds its 1/dp shard of the weights, ZeRO-1's all of them
    lay = api.Layout(gpus=64, gbs=256, seq=4096, tp=8, pp=2)
    z1, z3 = (
        api.predict(
            "llama2-70b", "a100-sxm-80gb", lay, "bf16", stack="megatron-deepspeed-2023", stack_set=(f"fsdp={k}",)
        )
        for k in ("zero1", "zero3")
    )
    assert float(z3.memory_parts["weights"][0]) == pytest.approx(float(z1.memory_parts["weights"][0]) / 4, rel=1e-6)


def test_every_rule_that_turns_on_parameter_sharding_states_how_it_gathers():
    # a preset without parameter sharding says its gathering is "not applicable"; a per-model rule that shards
    # parameters over it must state its own (nemo-26.04's Megatron-FSDP rules once inherited per_step: 442.8 GB)
    from perfmodel.specs.stack import PARAM_SHARDING, stack_ids

    rules = 0
    for sid in stack_ids():
        spec = load_stack(sid)
        for rule in spec.per_model:
            if rule.values.get("fsdp") in PARAM_SHARDING and spec.value("fsdp") not in PARAM_SHARDING:
                rules += 1
                assert "fsdp_gather" in rule.values and "reshard_after_forward" in rule.values, (sid, rule.match)
    assert rules >= 2  # nemo-26.04's GB200 / GB300 rules and their heirs


def test_overrides_set_values_and_record_their_origin():
    base = load_stack("nemo-25.09")
    s = apply_overrides(
        base,
        [
            "tp_overlap=none",
            "dp_grad_reduce_overlap=false",
            "recompute_modules=core_attn,mlp",
            "hybrid_shard_group=8",
        ],
    )
    assert (s.value("tp_overlap"), s.value("dp_grad_reduce_overlap")) == ("none", False)
    assert s.value("recompute_modules") == ("core_attn", "mlp")
    assert s.value("hybrid_shard_group") == 8
    assert s.origin["tp_overlap"] == "--stack-set" and s.sources["tp_overlap"] == "--stack-set tp_overlap=none"
    assert (
        s.value("fsdp") == base.value("fsdp") and base.value("tp_overlap") == "userbuffers"
    )  # others, and the original, unchanged
    assert apply_overrides(base, []) is base


@pytest.mark.parametrize(
    "item, field, reason",
    [
        ("tp_overlap=maybe", "tp_overlap", "must be one of 'none', 'bulk'"),
        ("tp_overlapp=none", "tp_overlapp", "did you mean 'tp_overlap'"),
        ("sequence_parallel=perhaps", "sequence_parallel", "true or false"),
        ("hybrid_shard_group=2.5", "hybrid_shard_group", "integer"),
        ("hybrid_shard_group=inf", "hybrid_shard_group", "finite"),
        ("power_limit_w=500", "power_limit_w", "hardware power.power_limit_w"),  # moved to the hardware
        (
            "cpu_offload_layers=\u00b2",
            "cpu_offload_layers",
            "non-negative integer",
        ),  # str.isdigit accepts a superscript
        ("tp_overlap", "tp_overlap", "FEATURE=VALUE"),
    ],
)
def test_bad_overrides_name_the_field(item, field, reason):
    with pytest.raises(InputError) as e:
        apply_overrides(load_stack("nemo-25.09"), [item])
    assert e.value.field == field and reason in e.value.reason


# ---- rows -> presets --------------------------------------------------------------------------------


def test_stack_for_row_maps_every_shipped_row_to_an_existing_preset():
    ids = set(stack_ids())
    seen = set()
    for path in shipped_sets():
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                sid = stack_for_row(row["framework"], row["software"])
                assert sid in ids, (path.name, row["software"])
                seen.add((path.name, sid))
    # each independent set maps to its own preset, never to the NVIDIA default
    assert {s for f, s in seen if f != "runs.csv"} == {
        "llm-foundry-2023-05",  # the 2023-05 tables (README commit 300cc5c5): torch 1.13.1, FSDP flat parameters
        "llm-foundry-2023",
        "llm-foundry-2024",  # the H100 Large Scale table (README commit 5e85bd62): FA2 per its sweep.py
        "maxtext-gpu-2024",
        "zero-bubble-2024",
        "fp8-lm-2023",
        "simumax-b200-2025",
    }


@pytest.mark.parametrize(
    "framework, software, sid",
    [
        ("megatron", "NeMo 26.04.01", "nemo-26.04.01"),  # its own preset (Megatron-Bridge v0.4.2, docs/fern/docs.yml)
        ("megatron", "NeMo 26.08", "nemo-26.08"),  # its own preset (Megatron-Bridge v0.6.0, docs/versions1.json)
        ("megatron", "DGXC v25.05.04 (NeMo 25.04.01)", "dgxc-25.05"),
        ("megatron", "NeMo 25.04", "nemo-25.04"),
        ("maxtext", "DGXC v24.11.1 (MaxText 2024.12.09)", "dgxc-24.11-maxtext"),
        ("megatron", "my fork 2019", "megatron-core"),  # unknown release: the framework's defaults
        ("other", "something else", "default"),
        ("maxtext", "NeMo 25.09", "maxtext-gpu-2024"),  # a label only counts for its frameworks
    ],
)
def test_stack_for_row_examples(framework, software, sid):
    assert stack_for_row(framework, software) == sid


# ---- validate over every shipped set ----------------------------------------------------------------


def test_validate_without_file_covers_every_shipped_set(capsys):
    assert main(["validate", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    names = {p.name for p in shipped_sets()}
    assert names == {
        "runs.csv",
        "llm-foundry.csv",
        "maxtext-a3.csv",
        "zero-bubble.csv",
        "fp8-lm.csv",
        "simumax-b200-dense.csv",
    }
    assert set(d["sets"]) == names == {r["dataset"] for r in d["per_row"]}
    for name, g in d["sets"].items():
        with (data_dir("validation") / ("" if name == "runs.csv" else "independent") / name).open(
            encoding="utf-8"
        ) as fh:
            given = sum(1 for _ in csv.DictReader(fh))
        assert g["rows"] == sum(r["dataset"] == name for r in d["per_row"]) and 0 < g["rows"] <= given
    assert all(r["stack"] in stack_ids() for r in d["per_row"])
    # memory is scored exactly on the rows that carry a measured peak
    with (data_dir("validation") / "independent" / "simumax-b200-dense.csv").open(encoding="utf-8") as fh:
        with_mem = sum(1 for r in csv.DictReader(fh) if r["peak_mem_allocated_bytes"].strip())
    assert d["memory"]["rows"] == d["sets"]["simumax-b200-dense.csv"]["memory"]["rows"] == with_mem
    rows = [r for r in d["per_row"] if r["mem_measured"] is not None]
    assert len(rows) == with_mem
    r = rows[0]
    assert r["mem_error"] == pytest.approx((r["mem_predicted"] - r["mem_measured"]) / r["mem_measured"])


def test_stack_cell_overrides_the_mapping_and_bad_ones_are_unsupported(tmp_path, capsys):
    src = data_dir("validation") / "independent" / "zero-bubble.csv"
    with src.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))[:2]
    rows = rows + [dict(rows[0]), dict(rows[0])]
    rows[0]["stack"], rows[1]["stack"] = "megatron-lm-2021", "nemo-99"
    rows[2]["stack_set"], rows[3]["stack_set"] = (
        "tp_overlap=userbuffers; cuda_graphs=full_iteration",
        "tp_overlap=sometimes",
    )
    rows[2]["run_id"], rows[3]["run_id"] = "with-set", "bad-set"
    out = tmp_path / "zb.csv"
    with out.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), restval="")
        w.writeheader()
        w.writerows(rows)
    for f in (src.parent / "models").glob("papers-zbpp-*.json"):
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["validate", str(out), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["stack"]) for r in d["per_row"]] == [
        (rows[0]["run_id"], "megatron-lm-2021"),
        ("with-set", "zero-bubble-2024"),
    ]
    reasons = [u["reason"] for u in d["unsupported"]]
    assert len(reasons) == 2 and "nemo-99" in reasons[0] and "tp_overlap: must be one of" in reasons[1]
    # the resolved stack of a row: preset, its per-model rules, then the row's stack_set
    from perfmodel.analysis.validate import row_stack_spec
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.model import load_model

    m, hw = load_model(str(tmp_path / rows[2]["model"])), load_hardware(rows[2]["hardware"])
    spec = row_stack_spec(rows[2], tmp_path, m, hw, "bf16")
    assert (spec.id, spec.value("tp_overlap"), spec.value("cuda_graphs")) == (
        "zero-bubble-2024",
        "userbuffers",
        "full_iteration",
    )
    assert spec.origin["cuda_graphs"] == "--stack-set" and spec.value("attention_kernel") == "fa2"


# ---- commands ---------------------------------------------------------------------------------------


def test_list_and_show_stack(capsys):
    assert main(["list", "stacks", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == stack_ids()
    assert main(["show", "stack", "nemo-25.09", "--set", "moe_a2a_overlap=true", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    feats = {r["feature"]: r for r in d["features"]}
    assert set(feats) == set(FEATURES)
    assert feats["moe_a2a_overlap"]["value"] is True and feats["moe_a2a_overlap"]["origin"] == "--stack-set"
    assert all(r["meaning"] == Features.model_fields[r["feature"]].description for r in d["features"])
    assert main(["show", "stack", "nemo-25.09"]) == 0
    assert "userbuffers" in capsys.readouterr().out


def test_show_stack_bad_input_is_one_line(capsys):
    assert main(["show", "stack", "nemo-25.09", "--set", "fsdp=zero9"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--stack-set: fsdp: must be one of" in err[0]
    assert main(["show", "stack", "nemo-2509"]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_stacks_ship_with_the_package():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    inc = cfg["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert inc["stacks"] == "perfmodel/_data/stacks"
    assert inc["validation/independent"] == "perfmodel/_data/validation/independent"


def test_default_is_the_newest_release_with_every_published_overlap():
    # `default` bases on the newest NVIDIA release preset (nemo-26.06), so it keeps that release's
    # FP8-MX MoE facts (DeepSeek-V3: full-iteration graphs, CuTe-DSL grouped MLP, overlapped A2A) ...
    d = load_stack("default")
    nvidia = [load_stack(s) for s in ("nemo-25.09", "nemo-25.11", "nemo-26.02", "nemo-26.04", "nemo-26.06")]
    assert d.base == "nemo-26.06" and d.date >= max(s.date for s in nvidia)
    f = d.for_model("deepseek-v3", True, "gb300-nvl72", "mxfp8").features
    assert (f.cuda_graphs, f.grouped_gemm, f.moe_a2a_overlap, f.moe_dispatcher) == (
        "full_iteration",
        "cutedsl",
        True,
        "hybridep",
    )
    # ... which the 26.04 base it replaced did not have
    f4 = load_stack("nemo-26.04").for_model("deepseek-v3", True, "gb300-nvl72", "mxfp8").features
    assert (f4.cuda_graphs, f4.grouped_gemm) != ("full_iteration", "cutedsl")
    # and its own all-to-all overlap stays on for a model no release rule touches
    assert d.for_model("toy-moe", True, "gb200-nvl72", "bf16").features.moe_a2a_overlap is True


def test_nemo_2606_qwen3_235b_mxfp8_on_gb_runs_the_whole_iteration_hybridep_path():
    # the 26.06 rows' layouts (GB200 PP8 VP3 EP32, GB300 PP4 VP12 EP32) are those of Megatron-Bridge's
    # flat recipes that call _enable_hybridep_full_iteration_mxfp8: graphs, overlap, CuTe-DSL, HybridEP
    s = load_stack("nemo-26.06")
    for hw in ("gb200-nvl72", "gb300-nvl72"):
        f = s.for_model("qwen3-235b-a22b", True, hw, "mxfp8").features
        assert (f.cuda_graphs, f.moe_a2a_overlap, f.grouped_gemm, f.moe_dispatcher) == (
            "full_iteration",
            True,
            "cutedsl",
            "hybridep",
        )
    # not BF16, not HGX B300, not the 26.04 release
    assert s.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "bf16").features.cuda_graphs == "per_layer"
    assert s.for_model("qwen3-235b-a22b", True, "b300", "mxfp8").features.cuda_graphs != "full_iteration"
    assert (
        load_stack("nemo-26.04").for_model("qwen3-235b-a22b", True, "gb300-nvl72", "mxfp8").features.cuda_graphs
        == "per_layer"
    )


def test_mla_on_blackwell_in_the_25_04_containers_runs_unfused_attention():
    # TE PR #1797 (2.5.0) / cuDNN 9.11: fused MLA training (head_dim_qk 192 != head_dim_v 128) on sm100 arrived
    # after NeMo 25.04; Hopper has it since cuDNN 9.5. The rule is the DGXC v25.05 preset's (NeMo 25.04
    # containers); nemo-25.07, built on nemo-25.04, does not get it.
    for sid in ("dgxc-25.05",):
        s = load_stack(sid)
        gb = s.for_model("deepseek-v3", True, "gb200-nvl72", "bf16")
        assert (gb.value("attention_kernel"), gb.value("recompute_modules")) == ("te_unfused", ("core_attn",))
        assert s.for_model("deepseek-v3", True, "b200", "bf16").value("attention_kernel") == "te_unfused"
        assert s.for_model("deepseek-v3", True, "h100-sxm", "bf16").value("attention_kernel") not in (
            "unfused",
            "te_unfused",
        )
        # only MLA: other models on GB200 keep the release's kernel
        assert s.for_model("mixtral-8x7b", True, "gb200-nvl72", "fp8").value("attention_kernel") not in (
            "unfused",
            "te_unfused",
        )
    # later releases (TE >= 2.5) are untouched
    assert load_stack("nemo-25.09").for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8").value(
        "attention_kernel"
    ) not in ("unfused", "te_unfused")
    assert load_stack("nemo-25.07").for_model("deepseek-v3", True, "gb200-nvl72", "bf16").value(
        "attention_kernel"
    ) not in ("unfused", "te_unfused")


def test_deepseek_v3_26_02_runs_the_26_04_presets():
    # the 26.02 DeepSeek-V3 rows run v0.3.0's V2 layouts, 26.04's rows v0.4.0's (the same layouts): every feature
    # resolves the same, except GB200 FP8 / MXFP8, whose GB200_V1 recompute v0.4.0 changes ['mla_up_proj'] -> ['mlp']
    a, b = load_stack("nemo-26.02"), load_stack("nemo-26.04")
    for hw, prec in (
        ("gb300-nvl72", "mxfp8"),
        ("gb200-nvl72", "mxfp8"),
        ("b300", "mxfp8"),
        ("b200", "mxfp8"),
        ("h100-sxm", "fp8"),
        ("gb300-nvl72", "bf16"),
    ):
        x, y = a.for_model("deepseek-v3", True, hw, prec), b.for_model("deepseek-v3", True, hw, prec)
        assert all(x.value(f) == y.value(f) for f in FEATURES if f != "recompute_modules"), (hw, prec)
        if hw != "gb200-nvl72":
            assert x.value("recompute_modules") == y.value("recompute_modules"), (hw, prec)
    g2, g4 = (s.for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8") for s in (a, b))
    assert (g2.value("recompute_modules"), g4.value("recompute_modules")) == (("mla_up_proj",), ("mlp",))
    assert g2.basis_of("recompute_modules") == "read"  # read at v0.3.0, no longer assigned by layout
    g = a.for_model("deepseek-v3", True, "gb300-nvl72", "mxfp8")
    assert (g.value("moe_dispatcher"), g.value("recompute_modules")) == ("hybridep", ("mla_up_proj",))
    # 25.11's GB300 rule (Megatron-Bridge v0.2.0, 7af9601c: ['moe_act'] on every GB300 precision) stays 25.11's
    n11 = load_stack("nemo-25.11")
    assert n11.for_model("deepseek-v3", True, "gb300-nvl72", "bf16").value("recompute_modules") == ("moe_act",)


def test_rule_scopes_follow_the_presets_they_cite():
    """Issue 25 item 4: each rule catches only the precisions and systems its source names."""
    n11 = load_stack("nemo-25.11")
    # Megatron-Bridge v0.2.0 (7af9601c, NeMo 25.11) deepseek/workload_base_configs.py: one GB300 preset for every
    # precision, recompute ['moe_act'], HybridEP, TE graphs (attn); the FP8_MX graphs are withheld (nemo-26.x inherit
    # the rule and their tags have none); GB200 (every precision) ['mla_up_proj'] (0fa501ac's FP8_MX ['mla_up_proj', 'mlp']
    # is not the tag's)
    for prec in ("bf16", "fp8"):
        g = n11.for_model("deepseek-v3", True, "gb300-nvl72", prec)
        assert (g.value("recompute_modules"), g.value("cuda_graphs")) == (("moe_act",), "per_layer"), prec
    mx = n11.for_model("deepseek-v3", True, "gb300-nvl72", "mxfp8")
    # Megatron-Bridge v0.2.0 workload_base_configs.py:36-37: GB300 FP8_MX = GB300_BASE_CONFIG, TE graphs; and
    # deepseek_llm_pretrain.py:75-78 fp8_mx parameter-gather overlap off
    assert mx.value("recompute_modules") == ("moe_act",) and mx.value("cuda_graphs") == "per_layer"
    assert mx.value("dp_param_gather_overlap") is False
    assert mx.value("moe_dispatcher") == "hybridep" and mx.basis_of("moe_dispatcher") == "inferred"
    g2 = n11.for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8")
    assert (g2.value("recompute_modules"), g2.value("cuda_graphs")) == (("mla_up_proj",), "per_layer")
    # v0.5.0 (fcbb6031): GB200 FP8_MX V1 recomputes ['mla_up_proj']; FP8_CS / NVFP4 (= GB200_V1) recompute ['mlp']
    n6 = load_stack("nemo-26.06")
    assert n6.for_model("deepseek-v3", True, "gb200-nvl72", "mxfp8").value("recompute_modules") == ("mla_up_proj",)
    assert n6.for_model("deepseek-v3", True, "gb200-nvl72", "bf16").value("recompute_modules") == ("mla_up_proj",)
    assert n6.for_model("deepseek-v3", True, "gb200-nvl72", "fp8").value("recompute_modules") == ("mlp",)
    assert n6.for_model("deepseek-v3", True, "gb200-nvl72", "nvfp4").value("recompute_modules") == ("mlp",)
    # gpt-oss B200 / B300 FP8_MX V2 = their BF16 V2 presets at v0.4.0 and v0.5.0 (no overlap, TE grouped GEMM,
    # recompute kept on B200); B200 runs HybridEP only at v0.4.0 (26.04). v0.3.0 (26.02) has no FP8_MX preset
    for sid, b2_dispatcher in (("nemo-26.02", "alltoall"), ("nemo-26.04", "hybridep"), ("nemo-26.06", "alltoall")):
        s = load_stack(sid)
        b = s.for_model("gpt-oss-120b", True, "b200", "mxfp8")
        bf = s.for_model("gpt-oss-120b", True, "b200", "bf16")
        assert all(b.value(f) == bf.value(f) for f in FEATURES if f != "fp8_recipe"), sid
        assert (b.value("moe_dispatcher"), b.value("moe_a2a_overlap")) == (b2_dispatcher, False), sid
        b3 = s.for_model("gpt-oss-120b", True, "b300", "mxfp8")
        # nemo-26.02: Megatron-Bridge v0.3.0's B300 V2 names no flex backend (all-to-all); 26.04 / 26.06 HybridEP
        assert (b3.value("moe_dispatcher"), b3.value("moe_a2a_overlap"), b3.value("recompute")) == (
            "alltoall" if sid == "nemo-26.02" else "hybridep",
            False,
            "none",
        ), sid


def test_bridge_layout_map_is_a_deepseek_v3_and_kimi_k2_recipe_fact():
    # Megatron-Bridge (25.09+) lays DeepSeek-V3 and Kimi-K2 out by their recipes' maps; other models keep
    # Megatron-Core's split, and so do the NeMo 2.0 releases
    for sid in ("nemo-25.09", "nemo-26.04", "default"):
        s = load_stack(sid)
        for model in ("deepseek-v3", "deepseek-v3-nomtp", "kimi-k2"):
            assert s.for_model(model, True, "b200", "mxfp8").value("pipeline_layout") == "bridge_map"
        assert s.for_model("qwen3-235b-a22b", True, "b200", "mxfp8").value("pipeline_layout") == "module_slots"
        assert s.for_model("gpt-530b", False, "a100-sxm-80gb", "bf16").value("pipeline_layout") == "module_slots"
    assert (
        load_stack("nemo-25.04").for_model("deepseek-v3", True, "gb200-nvl72", "bf16").value("pipeline_layout")
        == "module_slots"
    )
    k = load_stack("nemo-26.04").for_model("kimi-k2", True, "gb300-nvl72", "mxfp8")
    assert (k.value("moe_dispatcher"), k.value("recompute_modules")) == ("hybridep", ("mla_up_proj",))


# ---- the stack found from the run's own words (issue 26) --------------------------------------------------


@pytest.mark.parametrize(
    "framework, software, date, stack, basis",
    [
        # MLPerf Training system descriptions: the NeMo release named, or none (the latest release by the date)
        ("other", "NVIDIA NGC PyTorch 25.04, NVIDIA NeMo 25.09", "", "nemo-25.09", "release"),
        ("other", "NVIDIA NeMo Framework (dgxh100_n64_nemo)", "2024-06-12", "nemo-megatron-24.05", "release by date"),
        ("other", "NVIDIA NeMo Framework (dgxh100_n64_nemo)", "2025-11-12", "nemo-25.11", "release by date"),
        # a release no preset describes: the nearest one that has a preset
        ("megatron", "NVIDIA NeMo Megatron Release 23.04", "", "nemo-megatron-24.05", "nearest release"),
        ("megatron", "NeMo 25.06", "", "nemo-25.07", "nearest release"),
        # container tags
        ("megatron", "nvcr.io/nvidia/nemo:24.07", "", "nemo-24.07", "release"),
        # the framework named inside the software text when the framework cell says `other`
        ("other", "torchtitan 9dec370", "", "torchtitan-2025", "framework named"),
        ("other", "TorchTitan FSDP2, eager", "", "torchtitan-2025", "framework named"),
        ("other", "Megatron-DeepSpeed (BLOOM)", "", "megatron-deepspeed-bloom-2022", "framework named"),
        ("other", "MT-NLG 530B on Selene", "", "megatron-deepspeed-2021", "label"),
        ("other", "Megatron-Turing NLG 530B", "", "megatron-deepspeed-2021", "label"),
        ("other", "DeepSpeed 0.6.1", "", "megatron-deepspeed-2023", "framework named"),
        # a Megatron-Bridge version: the NeMo release that ships it (each preset's software labels, sourced in its
        # notes); a patch release without a preset, its minor version's latest; newer than every preset, the newest
        ("", "Megatron-Bridge 0.2.0", "", "nemo-25.11", "label"),  # nemo-25.11's own software label
        ("megatron", "pip install megatron-bridge==0.1.0rc3", "", "nemo-25.09", "release"),
        ("other", "Megatron Bridge v0.4.1", "", "nemo-26.04", "nearest release"),
        ("", "Megatron-Bridge 0.9.0", "", "nemo-26.08", "nearest release"),
        # the NeMo toolkit's own version: 2.3.x is the 25.04 containers' (nemo-25.04); another minor, the run's date
        ("", "nemo_toolkit 2.3.1", "", "nemo-25.04", "release"),
        ("", "NeMo 2.3.4", "", "nemo-25.04", "nearest release"),
        ("megatron", "NeMo 2.5.0", "2025-10-01", "nemo-25.09", "release by date"),
        # a framework cell in the user's words: NeMo / Megatron-LM by name are the presets' "megatron"; a word no
        # preset lists (pytorch, mlperf) is no evidence against a release the software names
        ("nemo", "NVIDIA NeMo Framework (dgxh100_n64_nemo)", "2024-06-12", "nemo-megatron-24.05", "release by date"),
        ("NeMo", "NVIDIA NeMo Megatron Release 23.04", "", "nemo-megatron-24.05", "nearest release"),
        ("pytorch", "NVIDIA NGC PyTorch 25.04, NeMo 25.09", "", "nemo-25.09", "release"),
        ("mlperf", "nvcr.io/nvidia/nemo:24.07", "", "nemo-24.07", "release"),
        # the toolkit version before the container's release: the container's is the release
        ("other", "NeMo 2.0 container 24.12", "2025-01", "nemo-25.02", "nearest release"),
        ("Megatron-LM", "an in-house fork", "", "megatron-core", "framework named"),
        # a framework cell naming another framework still excludes the NeMo releases
        ("maxtext", "NeMo 25.09", "", "maxtext-gpu-2024", "framework named"),
        # nothing known: the framework's library defaults, or the default stack (flagged)
        ("megatron", "an in-house fork", "", "megatron-core", "framework default"),
        ("xla", "", "", "default", "default"),
        # software no preset describes: the nearest preset running the same kind of code, flagged as a stand-in;
        # Transformer Engine (singular) is not the transformers library
        ("other", "Hugging Face Trainer, transformers 4.44", "", "llm-foundry-2024", "stand-in"),
        ("pytorch", "HF accelerate + FSDP", "", "llm-foundry-2024", "stand-in"),
        ("megatron", "Megatron-LM with Transformer Engine", "", "megatron-core", "framework named"),
    ],
)
def test_the_stack_is_found_from_the_runs_words(framework, software, date, stack, basis):
    c = infer_stack(framework, software, date)
    assert (c.stack, c.basis) == (stack, basis)
    assert c.fallback == (basis in ("framework default", "default", "stand-in"))
    if basis == "nearest release":
        assert "has no preset" in c.why


def test_words_state_torchtitan_features():
    c = infer_stack("other", "torchtitan 9dec370, torch.compile, AsyncTP", "")
    assert c.stack == "torchtitan-2025" and c.sets == ("fusions=torch_compile", "tp_overlap=async_tp")
    assert infer_stack("other", "torchtitan eager", "").sets == ()
    # the same words over a preset found by its label (framework cell torchtitan): the basis does not drop them
    lab = infer_stack("torchtitan", "torchtitan 9dec370, torch.compile, AsyncTP", "")
    assert (lab.basis, lab.sets) == ("label", c.sets) and "from its words" in lab.why


@pytest.mark.parametrize(
    ("software", "fsdp"),
    [
        ("Megatron-DeepSpeed, ZeRO stage 1", "zero1"),
        ("Megatron-DeepSpeed ZeRO-2", "zero2"),
        ("DeepSpeed 0.12 zero3", "zero3"),
        ("Megatron-DeepSpeed ZeRO-Infinity", "zero3"),
        # BLOOM's own words: BF16Optimizer is DeepSpeed's bf16 wrapper (its 'own ZeRO stage 1'), not stage 1
        ("BigScience Megatron-DeepSpeed, BF16Optimizer (ZeRO-1)", "bf16_optimizer"),
        ("Megatron-DeepSpeed", None),
        ("Megatron-DeepSpeed with Zero Bubble", None),
    ],
)
def test_words_state_the_deepspeed_zero_stage(software, fsdp):
    c = infer_stack("other", software, "")
    assert c.stack.startswith("megatron-deepspeed")
    assert c.sets == ((f"fsdp={fsdp}",) if fsdp else ())


def test_validate_states_each_rows_stack_and_flags_the_guesses(tmp_path, capsys):
    from cli_helpers import run_json

    rows = read_csv(data_dir("validation") / "runs.csv")
    row = next(r for r in rows if r["software"] == "NeMo 25.09")
    guess = {**row, "run_id": "guess", "software": "an in-house fork"}
    named = {**row, "run_id": "named", "framework": "other", "software": "NVIDIA NGC PyTorch, NeMo 25.09"}
    p = tmp_path / "r.csv"
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerows([row, guess, named])
    d = run_json(capsys, ["validate", str(p)])
    by = {r["run_id"]: r for r in d["per_row"]}
    assert by["named"]["stack"] == by[row["run_id"]]["stack"] == "nemo-25.09"
    assert by["named"]["predicted"] == by[row["run_id"]]["predicted"]
    assert by["named"]["stack_basis"] == "release" and by[row["run_id"]]["stack_basis"] == "label"
    assert by["guess"]["stack"] == "megatron-core" and "library defaults" in by["guess"]["stack_why"]
    assert d["stack_basis"] == {"label": 1, "framework default": 1, "release": 1}
    assert [f["run_id"] for f in d["stack_fallbacks"]] == ["guess"]


# Issue 25 item 4: every stack statement carries its basis (read / secondary / inferred), `show stack` and
# `validate --json` show it, and validate scores the rows with and without the secondary / inferred statements.
FAMILY = "llm-foundry-2023"


def _preset(tmp_path, body: str, name: str = "p") -> str:
    p = tmp_path / f"{name}.toml"
    p.write_text(
        f'name = "test"\nfamily = "{FAMILY}"\nbase = "{FAMILY}"\nbase_source = "test"\n' + body, encoding="utf-8"
    )
    return str(p)


def test_every_shipped_statement_has_a_known_basis():
    for sid in stack_ids():
        s = load_stack(sid)
        assert set(s.basis.values()) <= set(BASES) - {"read"}, sid
        assert all(set(r.basis.values()) <= set(BASES) for r in s.per_model), sid


def test_basis_follows_the_sources_words_and_the_marks(tmp_path):
    s = load_stack("nemo-26.06")
    q30 = s.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert q30.basis_of("cuda_graphs") == "read"  # read at v0.5.0 (the secondary A4X guide no longer carries it)
    q235 = s.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "mxfp8")
    assert q235.basis_of("cuda_graphs") == "read"  # v0.5.0's FP8_MX V2 presets, no longer by layout
    # a source worded as secondary is secondary
    sec = load_stack(_preset(tmp_path, '[features]\nfsdp = { value = "zero1", source = "⚑ secondary: a blog" }\n'))
    assert sec.basis_of("fsdp") == "secondary"
    # 26.06 assumes the rest of the 26.04 presets: what it inherits is inferred, not read
    assert s.base_basis == "inferred" and s.basis_of("tp_overlap") == "inferred"
    assert load_stack("nemo-26.04").basis_of("tp_overlap") == "read"
    # 26.02's gpt-oss rules are read at v0.3.0 for GB300 / GB200; the B300 / B200 rows ran a layout the tag lacks
    f = load_stack("nemo-26.02")
    assert f.for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16").basis_of("moe_a2a_overlap") == "read"
    b3 = f.for_model("gpt-oss-120b", True, "b300", "bf16")
    assert b3.basis_of("moe_dispatcher") == "inferred"
    # the llm-foundry 2024 table's attention kernel is read from the sweep.py committed with it
    lf = load_stack("llm-foundry-2024")
    assert lf.value("attention_kernel") == "fa2" and lf.basis_of("attention_kernel") == "read"
    assert lf.for_model("repos-mpt-13b-s2048", False, "h100-sxm", "bf16").value("attention_kernel") == "triton"
    groups = b3.not_read()
    assert any(
        {"origin": "per_model:model=gpt-oss,hardware=b300", "basis": "inferred"}.items() <= g.items() for g in groups
    )


def test_read_only_switches_the_marked_statements_off():
    # 26.02.01's Qwen3-235B B300 no-overlap rule is inferred (Megatron-Bridge v0.3.1's B300 FP8_MX V2 is PP8 without VP,
    # the row lists VP 4); #read falls back to 26.02's read v0.3.0 rule (moe_a2a_overlap=True)
    full = load_stack("nemo-26.02.01").for_model("qwen3-235b-a22b", True, "b300", "mxfp8")
    r = load_stack("nemo-26.02.01#read").for_model("qwen3-235b-a22b", True, "b300", "mxfp8")
    assert full.value("moe_a2a_overlap") is False and r.value("moe_a2a_overlap") is True
    ro = load_stack("nemo-26.06#read")
    assert ro.read_only and ro.id == "nemo-26.06" and not ro.basis
    # 26.06's own rules are read at v0.5.0: kept
    q = ro.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert q.value("cuda_graphs") == "full_iteration"
    # without the assumed 26.04 base the release falls back to its family's defaults
    fam = load_stack("megatron-core")
    assert ro.value("tp_overlap") == fam.value("tp_overlap") and ro.origin["tp_overlap"] == "unstated:megatron-core"
    # a preset whose statements are all read is unchanged
    a, b = load_stack("nemo-26.04"), load_stack("nemo-26.04#read")
    assert a.features == b.features
    # a family preset's own inferred feature has nothing beneath it: kept, still marked
    assert load_stack("torchtitan-2025#read").basis_of("tp_bwd_async") == "inferred"


def test_bad_basis_is_one_error_naming_the_field(tmp_path):
    bad = _preset(tmp_path, '[features]\nfsdp = { value = "zero1", source = "x", basis = "maybe" }\n')
    with pytest.raises(InputError) as e:
        load_stack(bad)
    assert e.value.field == "features.fsdp.basis" and "read, secondary, inferred" in e.value.reason
    # an explicit read that the source's own words contradict
    liar = _preset(
        tmp_path, '[features]\nfsdp = { value = "zero1", source = "⚑ by layout: x", basis = "read" }\n', "liar"
    )
    with pytest.raises(InputError) as e:
        load_stack(liar)
    assert e.value.field == "features.fsdp.basis" and "inferred" in e.value.reason
    rule = _preset(
        tmp_path,
        '[[per_model]]\nmatch = { model = "x" }\nbasis = "guess"\nfsdp = { value = "zero1", source = "x" }\n',
        "r",
    )
    with pytest.raises(InputError) as e:
        load_stack(rule)
    assert e.value.field == "basis" and "per_model[0]" in e.value.where
    orphan = tmp_path / "o.toml"
    orphan.write_text(f'name = "o"\nfamily = "{FAMILY}"\nbase_basis = "inferred"\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_stack(str(orphan))
    assert e.value.field == "base_basis"


def test_bad_basis_on_the_command_line_exits_2_without_traceback(tmp_path, capsys):
    bad = _preset(tmp_path, '[features]\nfsdp = { value = "zero1", source = "x", basis = "maybe" }\n')
    assert main(["show", "stack", bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "features.fsdp.basis" in err[0] and "Traceback" not in err[0]


def test_show_stack_prints_the_basis(capsys):
    assert main(["show", "stack", "nemo-26.06", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["base_basis"] == "inferred" and d["read_only"] is False
    assert {r["basis"] for r in d["features"]} <= set(BASES)
    q = [r for r in d["per_model"] if r["match"] == {"model": "qwen3-30b", "precision": "mxfp8"}]
    assert q and set(q[0]["basis"].values()) == {"read"}  # Megatron-Bridge v0.5.0
    k = [r for r in d["per_model"] if r["match"] == {"model": "kimi-k2"}]
    assert k and set(k[0]["basis"].values()) == {"inferred"}  # 26.04's rule, inherited under an assumed base
    assert main(["show", "stack", "nemo-26.06#read", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["read_only"] is True


def test_validate_scores_with_and_without_the_marked_statements():
    path = shipped_sets()[0]
    rows = [r for r in read_csv(path) if r["run_id"].startswith("mb2606-q3-") or r["run_id"].startswith("mb2511-l")]
    rep = validate_rows(rows, path.parent)
    # 26.06's own Qwen3 rules are read at v0.5.0; the H100 row still rests on 26.04's assumed base (inferred)
    q = {r.run_id: r for r in rep.results if r.run_id.startswith("mb2606-q3-30b-h100")}
    r = next(iter(q.values()))
    assert any(g["basis"] == "inferred" and g["origin"] == "inherited:nemo-26.04" for g in r.not_read)
    assert r.error_read_only is not None and r.error_read_only < r.error - 0.1  # the assumed base carries it
    st = rep.read_only_stats()
    assert st["rows_marked"] == sum(bool(x.not_read) for x in rep.results) and st["rows_moved"] >= 1
    assert st["with"]["rows"] == st["without"]["rows"] == len(rep.results)
    assert st["with"]["mape"] == pytest.approx(rep.stats()["mape"])


def test_validate_json_reports_read_only(capsys):
    assert main(["validate", str(shipped_sets()[-1]), "--json"]) == 0  # zero-bubble: every statement read
    d = json.loads(capsys.readouterr().out)
    assert d["read_only"]["rows_marked"] == 0 and d["read_only"]["without"] == d["read_only"]["with"]
    assert all(r["not_read"] == [] and r["error_read_only"] is None for r in d["per_row"])


def test_nemo_25_04_nemotron4_340b_fp8_gb200_runs_per_layer_graphs():
    # NeMo v2.3.0 model_configs_gb200.csv:21 recommends CUDA graphs for the summary's 128-GPU FP8 layout; BF16 and
    # H100 keep the release's default (none)
    s = load_stack("nemo-25.04")
    assert s.for_model("nemotron4-340b", False, "gb200-nvl72", "fp8").value("cuda_graphs") == "per_layer"
    assert s.for_model("nemotron4-340b", False, "gb200-nvl72", "bf16").value("cuda_graphs") != "per_layer"
    assert s.for_model("nemotron4-340b", False, "h100-sxm", "fp8").value("cuda_graphs") != "per_layer"


def test_nemo_26_08_is_megatron_bridge_0_6_0_qwen3_moe_mxfp8_rules():
    # NeMo 26.08 = Megatron-Bridge v0.6.0 (docs/versions1.json at v0.6.0:7 '0.6.0 (latest) · 26.08'): the label
    # resolves to its own preset, no longer to 26.06's (v0.5.0)
    assert stack_for_row("megatron", "NeMo 26.08") == "nemo-26.08"
    assert stack_for_row("megatron", "NeMo 26.06") == "nemo-26.06"
    s = load_stack("nemo-26.08")
    assert s.base == "nemo-26.06" and s.software == ("NeMo 26.08", "Megatron-Bridge 0.6.0")
    # v0.6.0 perf_recipes/qwen/gb300/qwen3_moe.py:461-510 (256-GPU GB300 MXFP8, PP4 VP12 EP32):
    # _enable_hybridep_full_iteration_mxfp8 (qwen/common.py:36-60); recompute off (:466-468)
    q = s.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "mxfp8")
    assert (q.value("cuda_graphs"), q.value("moe_dispatcher"), q.value("moe_a2a_overlap")) == (
        "full_iteration",
        "hybridep",
        True,
    )
    assert q.basis_of("cuda_graphs") == "read" and "v0.6.0" in q.sources["cuda_graphs"]
    # 8-GPU GB200 Qwen3-30B MXFP8 (gb200/qwen3_moe.py:302-351): the H100 base recipe's full recompute switched off
    g = s.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert g.value("recompute") == "none" and g.basis_of("recompute") == "read"
    assert g.value("cross_entropy") == "te" and g.basis_of("cross_entropy") == "read"
