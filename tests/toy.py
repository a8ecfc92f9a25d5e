"""A toy GPU, toy constants and a toy model with round numbers, so the cost formulas' worked cases in
tests/core/ and tests/core/parallel/ can be computed by hand. Nothing here is a real product: every efficiency
differs from every other, so a formula reading the wrong field gives a different number."""

from __future__ import annotations

from perfmodel.core.calibration import Constants
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.model import ModelSpec

EFF = dict(
    gemm_bf16=0.5,
    gemm_fp8=0.4,
    gemm_fp4=0.25,
    attention_fwd=0.5,
    attention_bwd=0.4,
    memory_bound=0.8,
    scale_up_allreduce=0.75,
    scale_up_collective=0.5,
    scale_up_all_to_all=0.25,
    scale_out_collective=0.8,
    scale_out_all_to_all=0.5,
    gemm_k_half=1000.0,  # the GEMM shape of the toy GPU (in place of its generation's measured table)
    gemm_mn_half=100.0,
    collective_half_bytes=0.0,  # NVLink collectives at their plateau from the first byte (no measured ramp)
)


def toy_hw(domain: int = 8, **eff) -> HardwareSpec:
    """1 PFLOP/s BF16 (2 FP8, 4 FP4), 1 TB/s HBM, NVLink 400 GB/s in domains of `domain` GPUs (NVLS), NIC
    50 GB/s; latencies 10 us (NVLink) and 20 us (NIC)."""
    return HardwareSpec(
        id="toy",
        name="toy GPU",
        generation="hopper",
        gpus_per_node=min(domain, 8) if (domain % 8 == 0 or 8 % domain == 0) else domain,
        peak_flops=dict(fp32=1e13, tf32=1e14, bf16=1e15, fp16=1e15, fp8=2e15, mxfp8=2e15, nvfp4=4e15),
        memory=dict(hbm_bytes=1e11, hbm_bandwidth=1e12),
        scale_up=dict(domain_size=domain, bandwidth=4e11, nvls=True, latency_s=1e-5),
        scale_out=dict(bandwidth=5e10, latency_s=2e-5),
        power=dict(gpu_tdp_w=700, allin_w_per_gpu=1000),
        efficiency={**EFF, **eff},
    )


def toy_consts(**kw) -> Constants:
    base = dict(
        tensor_sustained=0.8,
        kernel_fixed_s=1e-5,
        graphed_kernel_s=4e-6,
        attention_keys_half=1000.0,
        step_host_s=0.01,
        tp_overlap=0.5,
        ep_overlap=0.75,
        cp_overlap=0.25,
        dp_overlap=0.5,
        pp_overlap=0.5,
        moe_layer_overhead_s=1e-3,
        moe_permute_bytes=20.0,
        fp8_cast_bytes=4.0,
        reserved_bytes=1e9,
    )
    return Constants(**{**base, **kw})


def toy_dense(**kw) -> ModelSpec:
    """4 layers, h = 1024, 8 heads of 128 (GQA, 2 KV heads), SwiGLU FFN 4096, vocab 32000, untied."""
    spec = dict(
        id="toy-dense",
        name="toy dense",
        num_layers=4,
        hidden_size=1024,
        vocab_size=32000,
        attention=dict(kind="gqa", num_heads=8, num_kv_heads=2, head_dim=128),
        ffn=dict(activation="swiglu", intermediate_size=4096),
    )
    spec.update(kw)
    return ModelSpec(**spec)


def toy_moe(**kw) -> ModelSpec:
    """4 layers (the first dense), h = 1024, 8 heads of 128 (MHA), SwiGLU; 16 experts of 512, top-2, one
    shared expert of 1024; dense FFN 4096; vocab 32000."""
    spec = dict(
        id="toy-moe",
        name="toy MoE",
        num_layers=4,
        hidden_size=1024,
        vocab_size=32000,
        attention=dict(kind="mha", num_heads=8, num_kv_heads=8, head_dim=128),
        ffn=dict(activation="swiglu", intermediate_size=4096),
        moe=dict(
            num_experts=16,
            top_k=2,
            expert_intermediate_size=512,
            shared_experts=1,
            shared_intermediate_size=1024,
            first_dense_layers=1,
        ),
    )
    spec.update(kw)
    return ModelSpec(**spec)


def toy_mla(**kw) -> ModelSpec:
    """2 MLA layers (DeepSeek-V3 shaped, shrunk): h = 1024, 8 heads, q rank 256, kv rank 128, nope 64,
    rope 32, v 64; SwiGLU FFN 2048."""
    spec = dict(
        id="toy-mla",
        name="toy MLA",
        num_layers=2,
        hidden_size=1024,
        vocab_size=32000,
        attention=dict(
            kind="mla",
            num_heads=8,
            num_kv_heads=8,
            head_dim=128,
            q_lora_rank=256,
            kv_lora_rank=128,
            qk_nope_head_dim=64,
            qk_rope_head_dim=32,
            v_head_dim=64,
        ),
        ffn=dict(activation="swiglu", intermediate_size=2048),
    )
    spec.update(kw)
    return ModelSpec(**spec)


def toy_sw(
    m: ModelSpec,
    hw: HardwareSpec | None = None,
    c: Constants | None = None,
    precision: str = "bf16",
    stack_set: tuple[str, ...] = (),
):
    """The default software stack's view of the toy system (perfmodel/core/software.py)."""
    from perfmodel.core.software import resolve

    return resolve(None, tuple(stack_set), m.id, m.is_moe, hw or toy_hw(), precision, c or toy_consts())


def named_stream(streams, name):
    """The one memory-bound stream record of `streams` called `name`."""
    (s,) = [s for s in streams if s.name == name]
    return s
