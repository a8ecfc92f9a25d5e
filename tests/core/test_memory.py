"""memory.py: bytes per GPU per pipeline rank for toy models (tests/toy.py), worked by hand from
Rajbhandari et al. 2020 (ZeRO: 2 B weights, 2 or 4 B gradients, 12 B Adam state sharded by the distributed
optimizer over dp x cp), Korthikanti et al. 2022 §4.1 Table 2 (saved activations, here with flash attention
and SwiGLU) and the 1F1B / interleaved in-flight counts (§4.2.3).

Toy dense on 8 GPUs at tp 2, pp 2 (dp 2), 8 sequences of 2048, mbs 1: 4 micro-batches; 2 layers per rank.
Parameters: a layer 15,206,400; embedding = head = 32,768,000; final norm 1,024.
  rank 0: 2 layers + embedding = 63,180,800 -> / tp = 31,590,400 per GPU
  rank 1: 2 layers + final norm + head = 63,181,824 -> 31,590,912 per GPU
Saved per layer (T = 2048, Ts = 1024, h = 1024, tp 2), bytes: layer input 2 Ts h = 2,097,152 ("input"),
qkv input 2,097,152, q/k/v 2 (1024 + 512) / 2 T = 3,145,728, attention output 2 x 1024 / 2 T = 2,097,152,
fp32 LSE 4 x 8/2 x T = 32,768,
MLP norm input 2,097,152, fc1 input 2,097,152, SwiGLU input 2 x 2 x 4096/2 x T = 16,777,216,
SwiGLU output 2 x 4096/2 x T = 8,388,608: 38,830,080 in all; selective recompute (Megatron-Core's default
module core_attn) drops the attention output and the LSE.

The last tests run catalog models: the pipeline schedules' activation memory against hand-derived in-flight
micro-batch counts, Korthikanti's Table 2 per layer, and the capacity a device reports."""

from __future__ import annotations

import numpy as np
import pytest
from toy import toy_consts, toy_dense, toy_hw, toy_moe, toy_sw

from perfmodel.api import predict
from perfmodel.core.memory import layer_activation_bytes, weight_bytes
from perfmodel.core.predict import Options, predict_grid
from perfmodel.core.workload import build
from perfmodel.specs.layout import Layout, LayoutGrid

HW, C = toy_hw(), toy_consts()
REL = 1e-12
LAYER, SELECTIVE, INPUT = 38830080, 38830080 - 2097152 - 32768, 2097152
DUMMY, DUMMY_HEAD = 2 * 7602176, 2 * 16000 * 1024


def _mem(m=None, precision="bf16", grad="bf16", sets=(), **kw):
    lay = dict(gpus=8, gbs=8, seq=2048, tp=2, pp=2)
    lay.update(kw)
    stack_set = (("main_grad_precision=fp32",) if grad == "fp32" else ()) + tuple(sets)
    p = predict_grid(
        m or toy_dense(), HW, LayoutGrid.of(Layout(**lay)), Options(precision=precision, consts=C, stack_set=stack_set)
    )
    return {k: float(v[0]) for k, v in p.memory_parts.items()}, {k: float(v[0]) for k, v in p.memory_stages.items()}


def test_bytes_per_element():
    assert weight_bytes("bf16") == 2.0 and weight_bytes("fp16") == 2.0 and weight_bytes("fp8") == 1.0
    assert weight_bytes("fp8", fp8_param_gather=False) == 2.0


def test_layer_activation_bytes_per_policy():
    (layer,) = build(
        toy_dense(), LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048, tp=2)), False, 1.0, C, toy_sw(toy_dense(), HW, C)
    ).layers
    kept, full = layer_activation_bytes(layer, np.array([0, 1, 2]))
    assert full == pytest.approx(LAYER, rel=REL)
    assert kept == pytest.approx([LAYER, SELECTIVE, INPUT], rel=REL)


def test_layer_activation_bytes_per_layer_sac():
    """torchtitan per-layer SAC (layer_share > 0): that share of the layers is fully checkpointed and keeps only its
    input, the rest keep everything, so selective keeps share x input + (1 - share) x full per layer on average;
    full and none as before. One block in four (share 1/4): 2,097,152 / 4 + 3/4 x 38,830,080."""
    (layer,) = build(
        toy_dense(), LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048, tp=2)), False, 1.0, C, toy_sw(toy_dense(), HW, C)
    ).layers
    kept, full = layer_activation_bytes(layer, np.array([0, 1, 2]), layer_share=0.25)
    assert full == pytest.approx(LAYER, rel=REL)
    assert kept == pytest.approx([LAYER, INPUT / 4 + 3 * LAYER / 4, INPUT], rel=REL)
    kept, _ = layer_activation_bytes(layer, np.array([1]), layer_share=0.5)
    assert kept == pytest.approx([(INPUT + LAYER) / 2], rel=REL)


def test_per_rank_memory_1f1b():
    parts, stages = _mem()
    # rank 0: weights 2 B + grads 2 B of 31,590,400; Adam 12 B of 31,590,400 / dp 2; activations of 2 layers
    # x 2 micro-batches in flight (1F1B: pp - rank) + the embedding output 2 Ts h; reserved 1 GB
    # The default (Megatron-Core + TE) stack also keeps a bf16 dummy wgrad per distinct weight shape (DUMMY)
    first = 2 * 63180800 + 12 * 15795200 + 2 * 2 * LAYER + INPUT + 1e9 + DUMMY
    # rank 1 (last): 1 micro-batch in flight; the logits: the default stack (the newest Megatron-Bridge presets)
    # runs Transformer Engine's fused cross-entropy, bf16 logits with the gradient written into them, 2 B x T x
    # V / tp; the output layer's dummy wgrad [V/tp, h] too
    last = 2 * 63181824 + 12 * 15795456 + 2 * LAYER + 2 * 2048 * 32000 / 2 + 1e9 + DUMMY + DUMMY_HEAD
    assert stages["first"] == pytest.approx(first, rel=REL)
    assert stages["last"] == pytest.approx(last, rel=REL) and stages["fullest"] == pytest.approx(last, rel=REL)
    assert stages["fullest_rank"] == 1
    assert parts == pytest.approx(
        {
            "weights": 63181824,
            "gradients": 63181824,
            "dummy_wgrads": DUMMY + DUMMY_HEAD,
            "optimizer": 12 * 15795456,
            "activations": 2 * LAYER,
            "logits": 65536000,
            "reserved": 1e9,
        },
        rel=REL,
    )


def test_dummy_wgrads():
    # TE get_dummy_wgrad caches one bf16 [N, K] buffer per distinct weight shape: the toy dense layer at tp 2
    # has qkv 768 x 1024, proj 1024 x 512, fc1 4096 x 1024, fc2 1024 x 2048 = 7,602,176 elements (DUMMY / 2);
    # the last rank adds the head 16,000 x 1024
    assert DUMMY == 2 * (768 * 1024 + 1024 * 512 + 4096 * 1024 + 1024 * 2048)
    parts, stages = _mem(pp=1)
    assert parts["dummy_wgrads"] == pytest.approx(DUMMY + DUMMY_HEAD, rel=REL)
    # a stack without Megatron's fused wgrad accumulation returns real gradients: no dummies
    parts, _ = _mem(pp=1, sets=("fusions=none",))
    assert parts["dummy_wgrads"] == 0.0
    # MoE (toy, ep 2, tp 2, pp 1): the 4 local experts share one shape and count once, the attention
    # projections both kinds have count once, the router (a plain parameter) not at all: 11,534,336 elements
    # (test_two_layer_kinds_on_one_rank) + the head 16,000 x 1024
    parts, _ = _mem(toy_moe(), gpus=4, gbs=4, tp=2, pp=1, ep=2)
    assert parts["dummy_wgrads"] == pytest.approx(2 * 11534336 + DUMMY_HEAD, rel=REL)


def test_fp32_grads_and_fp8_weights():
    parts, _ = _mem(grad="fp32")
    assert parts["gradients"] == pytest.approx(4 * 31590912, rel=REL)
    parts, _ = _mem(precision="fp8", sets=("fp8_param_gather=true",))
    assert parts["weights"] == pytest.approx(31590912, rel=REL)  # fp8_param_gather: 1 B
    parts, _ = _mem(precision="fp8", sets=("fp8_param_gather=false",))
    assert parts["weights"] == pytest.approx(2 * 31590912, rel=REL)  # without it: BF16 weights
    parts, _ = _mem(precision="fp8")  # the default stack gathers FP8 parameters (Megatron-Bridge v0.5.0 presets)
    assert parts["weights"] == pytest.approx(31590912, rel=REL)


def test_fsdp_shards_weights_and_grads():
    parts, _ = _mem(fsdp=True)
    assert parts["weights"] == pytest.approx(2 * 15795456, rel=REL)
    assert parts["gradients"] == pytest.approx(2 * 15795456, rel=REL)
    assert parts["optimizer"] == pytest.approx(12 * 15795456, rel=REL)


def test_te_cross_entropy_keeps_only_bf16_logits():
    # last rank: fp32 logits and gradient 2 x 4 B x T x V / tp = 262,144,000 B; Transformer Engine's fused
    # cross-entropy (the default stack's) keeps the bf16 logits and writes the gradient into them: 2 B x 2048 x
    # 16000 = 65,536,000 B
    parts, _ = _mem(sets=("cross_entropy=fp32",))
    assert parts["logits"] == pytest.approx(262144000, rel=REL)
    parts, _ = _mem()
    assert parts["logits"] == pytest.approx(65536000, rel=REL)


def test_cp_all_to_all_saves_the_attention_output_twice():
    # Ulysses CP keeps flash attention's O in the head-scattered layout and W_o's input after the all-to-all:
    # one more attention output per layer than the ring, 2 B x o / tp x T = 2 x 1024 / 2 x 1024 (T = 2048 / cp)
    lay = LayoutGrid.of(Layout(gpus=4, gbs=4, seq=2048, tp=2, cp=2))
    full = {}
    for comm in ("p2p", "a2a"):
        (layer,) = build(
            toy_dense(), lay, False, 1.0, C, toy_sw(toy_dense(), HW, C, stack_set=(f"cp_comm_type={comm}",))
        ).layers
        full[comm] = float(layer_activation_bytes(layer, np.array([0]))[1][0])
    assert full["a2a"] - full["p2p"] == pytest.approx(2 * 1024 / 2 * 1024, rel=REL)
    # ... and it belongs to core_attn, which selective recompute drops; without CP there is no all-to-all
    (layer,) = build(
        toy_dense(),
        LayoutGrid.of(Layout(gpus=2, gbs=2, seq=2048, tp=2)),
        False,
        1.0,
        C,
        toy_sw(toy_dense(), HW, C, stack_set=("cp_comm_type=a2a",)),
    ).layers
    assert float(np.ravel(layer_activation_bytes(layer, np.array([0]))[1])[0]) == pytest.approx(LAYER, rel=REL)


def test_hybrid_sharding_shards_over_its_group():
    # 16 GPUs at tp 2, pp 2: dp 4. FSDP2 over all 4: the last rank's 31,590,912 params per GPU / 4; hybrid
    # sharding with groups of 2 (HSDP: sharded inside the group, replicated across groups): / 2
    fsdp = ("fsdp=fsdp2", "fsdp_gather=per_microbatch")
    parts, _ = _mem(gpus=16, gbs=16, sets=fsdp)
    assert parts["weights"] == pytest.approx(2 * 31590912 / 4, rel=REL)
    parts, _ = _mem(gpus=16, gbs=16, sets=fsdp + ("hybrid_shard_group=2",))
    assert parts["weights"] == pytest.approx(2 * 31590912 / 2, rel=REL)
    assert parts["gradients"] == pytest.approx(2 * 31590912 / 2, rel=REL)
    assert parts["optimizer"] == pytest.approx(12 * 31590912 / 2, rel=REL)


def test_cp_shards_the_optimizer():
    # cp 2 (dp 1): Megatron-Core's distributed optimizer shards over dp x cp = 2; T = 1024 per CP rank
    parts, _ = _mem(cp=2)
    assert parts["optimizer"] == pytest.approx(12 * 31590912 / 2, rel=REL)
    # a stack sharding over dp only (Megatron-LM before CP joined the group): dp 1, no sharding
    parts, _ = _mem(cp=2, sets=("optimizer_shard=dp",))
    assert parts["optimizer"] == pytest.approx(12 * 31590912, rel=REL)
    # ... and experts over edp = tp x cp x dp / ep = 2 (toy MoE, ep 2, cp 2, dp 1): rank 1 holds dense
    # 47,485,952 / tp, experts 50,331,648 / ep
    parts, _ = _mem(toy_moe(), cp=2, ep=2, sets=("optimizer_shard=dp",))
    assert parts["optimizer"] == pytest.approx(12 * (47485952 / 2 + 50331648 / 2 / 2), rel=REL)


def test_recompute_policies():
    _, st = _mem(recompute="full")
    # full: each layer keeps its input (2 layers x 2 in flight) plus one layer's full set while recomputed
    first_fixed = 2 * 63180800 + 12 * 15795200 + INPUT + 1e9 + DUMMY
    assert st["first"] == pytest.approx(first_fixed + 2 * 2 * INPUT + LAYER, rel=REL)
    _, st = _mem(recompute="selective", sets=("recompute_modules=core_attn",))
    assert st["first"] == pytest.approx(first_fixed + 2 * 2 * SELECTIVE, rel=REL)


def test_interleaved_in_flight():
    # vp 2: 4 layers in 4 chunks of 1, 2 per rank. In flight (Megatron warm-up): rank 0 (2 (pp - 1) + (vp - 1) pp
    # + 1) / vp = 5/2, rank 1 3/2 of its 2 layers
    _, st = _mem(vp=2)
    assert st["first"] == pytest.approx(2 * 63180800 + 12 * 15795200 + 2.5 * 2 * LAYER + INPUT + 1e9 + DUMMY, rel=REL)
    assert st["last"] == pytest.approx(
        2 * 63181824 + 12 * 15795456 + 1.5 * 2 * LAYER + 65536000 + 1e9 + DUMMY + DUMMY_HEAD, rel=REL
    )


def test_in_flight_capped_by_microbatches():
    # 2 sequences on dp 2: one micro-batch; rank 0 holds at most 1 in flight, not pp = 2
    _, st = _mem(gbs=2)
    assert st["first"] == pytest.approx(2 * 63180800 + 12 * 15795200 + 2 * LAYER + INPUT + 1e9 + DUMMY, rel=REL)


def _moe_saved(imb: float) -> float:
    """The toy MoE layer's saved activations at tp 2 with `imb` x 2,048 token copies per GPU (1,024 tokens, top-2):
    2,097,152 x 2 + permuted 2 x copies x 1024 + expert act in 2 x copies x 1024 + out 2 x copies x 512 + router
    logits 4 x 1024 x 16 + shared in 4,194,304 + shared out 2,097,152 (23,658,496 at imbalance 1.25)."""
    copies = 2048 * imb
    return 2 * 2097152 + 2 * copies * 1024 + 2 * copies * 1024 + 2 * copies * 512 + 4 * 1024 * 16 + 4194304 + 2097152


def _toy_imbalance() -> float:
    """Real routing's busiest-rank load of the toy MoE at ep 2 under the toy stack (load balancing unstated: none
    priced, parallel/ep.py routing_imbalance): 1."""
    return 1.0


def test_mtp_on_the_last_rank():
    # toy MoE, tp 2, pp 2, ep 2 (edp 2), real routing: one MTP module adds to the last rank its parameters (dense
    # 34,624,512 - 25,165,824 = 9,458,688 / tp; experts 25,165,824 / ep) and one MoE layer's saved activations:
    # attention 2,097,152 x 2 + 2 (1024 + 2048 + 1024)/2 T + 32,768 = 12,615,680; MoE _moe_saved; and the bf16
    # dummy wgrad of its 2h -> h projection, 2 x 1024 x 2048 (test_mtp_projection_has_a_dummy_wgrad)
    imb = _toy_imbalance()
    assert _moe_saved(1.25) == 23658496
    _, base = _mem(toy_moe(), ep=2)
    _, mtp = _mem(toy_moe(mtp_layers=1), ep=2)
    dense, expert = 9458688 / 2, 25165824 / 2
    params = (2 + 2) * (dense + expert) + 12 * (dense / 2 + expert / 2)
    assert mtp["last"] - base["last"] == pytest.approx(params + 12615680 + _moe_saved(imb) + 2 * 1024 * 2048, rel=1e-9)
    assert mtp["first"] == pytest.approx(base["first"], rel=REL)


def test_two_layer_kinds_on_one_rank():
    # toy MoE, tp 2, pp 2, ep 2 (dp 2, edp 2): rank 0 holds layer 0 (dense) and layer 1 (MoE) and the embedding.
    # Saved: dense layer 12,615,680 (attention, MHA) + 29,360,128 (SwiGLU MLP) = 41,975,808; MoE layer 12,615,680 +
    # _moe_saved (test_mtp_on_the_last_rank); 2 in flight + the embedding output 2,097,152.
    # Parameters: dense 16,779,264 + 7,358,464 + 32,768,000 = 56,905,728 / tp; experts 25,165,824 / ep.
    # Dummy wgrads (bf16, one per shape, router none): qkv 1536 x 1024, proj 1024 x 512 (shared by both kinds),
    # MLP 4096 x 1024 + 1024 x 2048, one expert 1024 x 1024 + 1024 x 512, shared expert the same: 11,534,336
    _, st = _mem(toy_moe(), ep=2)
    d, e = 56905728 / 2, 25165824 / 2
    moe = 12615680 + _moe_saved(_toy_imbalance())
    expect = 4 * (d + e) + 12 * (d / 2 + e / 2) + 2 * (41975808 + moe) + INPUT + 1e9 + 2 * 11534336
    assert st["first"] == pytest.approx(expect, rel=REL)


def test_unfused_attention_has_no_dummy_wgrads():
    # The unfused attention's QK^T and PV are batched matmuls of activations, not linear layers: no weight,
    # so no dummy wgrad (TE get_dummy_wgrad serves the weight GEMMs). The cached buffers stay the 4 weight
    # shapes and the head's (pp 1, tp 2: DUMMY + DUMMY_HEAD), whichever attention kernel runs
    fused, _ = _mem(gpus=2, gbs=2, pp=1)
    unfused, _ = _mem(gpus=2, gbs=2, pp=1, sets=("attention_kernel=unfused",))
    assert fused["dummy_wgrads"] == pytest.approx(DUMMY + DUMMY_HEAD, rel=REL)
    assert unfused["dummy_wgrads"] == pytest.approx(DUMMY + DUMMY_HEAD, rel=REL)


def test_mtp_projection_has_a_dummy_wgrad():
    # DeepSeek-V3 §2.2 MTP: each module's 2h -> h projection (Megatron MultiTokenPredictionLayer.eh_proj, a TE
    # linear with gradient-accumulation fusion) is one more weight shape on the last rank: h x 2h = 1024 x 2048
    # elements, a 2 B dummy; the MTP layer's own shapes equal the last kind's, already cached
    from toy import toy_moe

    moe = dict(num_experts=16, top_k=2, expert_intermediate_size=512, shared_experts=1, shared_intermediate_size=1024)
    base, _ = _mem(toy_moe(moe=moe), gpus=1, gbs=2, tp=1, pp=1)
    mtp, _ = _mem(toy_moe(moe=moe, mtp_layers=1), gpus=1, gbs=2, tp=1, pp=1)
    assert mtp["dummy_wgrads"] - base["dummy_wgrads"] == pytest.approx(2 * 1024 * 2048, rel=REL)


def test_dummy_wgrad_groups_count_only_on_ranks_holding_their_kinds():
    """Groups of GEMM shapes by the kinds holding them: kind 0 (dense) only on rank 0, kind 1 (MoE) on both.
    A group counts on a rank with any of its kinds: (0,) on rank 0 only, (1,) and (0, 1) on both."""
    from perfmodel.core.memory import dummy_wgrad_on

    cnt = [np.array([[3, 0]]), np.array([[2, 5]])]  # layers of each kind on ranks 0 and 1
    on = dummy_wgrad_on([(0,), (1,), (0, 1)], cnt)
    assert [o.tolist() for o in on] == [[[True, False]], [[True, True]], [[True, True]]]


def test_fsdp_shards_expert_weights_over_the_expert_data_parallel_group():
    """Mixtral 8x7B on 64 GPUs, tp 1 pp 1 ep 8, FSDP: dense weights over dp = 64, expert weights split by ep = 8
    and sharded over edp = 64 / 8 = 8: bf16 weights per GPU = 2 x (dense / 64 + expert / 8 / 8)."""
    from perfmodel.core.parallel.dp import param_split
    from perfmodel.core.predict import Options, predict_grid
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import Layout, LayoutGrid
    from perfmodel.specs.model import load_model

    m = load_model("mixtral-8x7b")
    dense, expert = param_split(m)
    p = predict_grid(
        m,
        load_hardware("h100-sxm"),
        LayoutGrid.of(Layout(gpus=64, gbs=256, seq=4096, ep=8, fsdp=True)),
        Options("bf16", stack="megatron-core"),
    )
    assert float(p.memory_parts["weights"][0]) == pytest.approx(2 * (dense / 64 + expert / 8 / 8), rel=1e-9)


# Activation memory of the pipeline schedules against hand-derived in-flight micro-batch counts.
def _activations(pp: int, vp: int) -> float:
    # Llama 3 70B: 80 layers; pp=4 and pp=4/vp=2 both hold 20 layers per rank; 64 micro-batches
    lay = Layout(gpus=32, gbs=512, seq=4096, tp=8, pp=pp, vp=vp, mbs=1)
    p = predict("llama3-70b", "h100-sxm", lay)
    # minus the one embedding-output tensor the first rank also keeps
    return p.memory_parts["activations"][0] - 2 * 8192 * 4096 / 8


def test_1f1b_first_rank_holds_pp_microbatches():
    # non-interleaved 1F1B: pp micro-batches in flight on the first rank (Narayanan et al. 2021 §2.2.1)
    one = _activations(pp=1, vp=1)  # pp=1: one micro-batch of all 80 layers
    four = _activations(pp=4, vp=1)  # 4 in flight x 20 layers = 80 layer-micro-batches
    assert four == pytest.approx(one, rel=1e-12)


def test_interleaved_adds_korthikanti_factor():
    # interleaved with vp=2: pp (1 + (pp-1)/(pp vp)) = 4 x 1.375 = 5.5 micro-batches of 20 layers
    assert _activations(pp=4, vp=2) == pytest.approx(_activations(pp=4, vp=1) * 1.375, rel=1e-12)


def test_activations_per_layer_match_korthikanti_table2():
    """Korthikanti et al. 2022 §4.1/Table 2: one GPT layer saves 34 sbh + 5 a s^2 b bytes (no parallelism);
    with tensor + sequence parallelism everything divides by t. Flash attention drops the two s^2 terms
    (softmax output, dropout mask) and keeps an fp32 log-sum-exp per head and query (4 a s b); training
    without dropout drops the two 1-byte dropout masks (sbh each): 32 sbh / t + 4 a s b / t."""
    import numpy as np

    from perfmodel.core.calibration import constants
    from perfmodel.core.memory import layer_activation_bytes
    from perfmodel.core.workload import build
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import LayoutGrid
    from perfmodel.specs.model import load_model

    m = load_model("gpt3-175b")
    s, b, t = 2048, 1, 8
    h, a = m.hidden_size, m.attention.num_heads
    grid = LayoutGrid.of(Layout(gpus=8, gbs=8, seq=s, tp=t, mbs=b))
    from perfmodel.core.software import resolve

    sw = resolve(
        "megatron-lm-2022", ("attention_kernel=fa2",), m.id, False, load_hardware("a100-sxm-80gb"), "bf16", constants()
    )
    assert sw.sequence_parallel
    (layer,) = build(m, grid, False, 1.0, constants(), sw).layers
    kept, full = layer_activation_bytes(layer, np.array(0))
    assert float(full[0]) == pytest.approx(32 * s * b * h / t + 4 * a * s * b / t, rel=1e-12)
    assert float(kept[0]) == float(full[0])


def test_capacity_is_what_the_device_reports_not_the_vendor_gb():
    """Issue 26 item 5: an "80 GB" H100 lets PyTorch allocate 81,090 MiB (total_memory), 85.03e9 B, not 80e9. A
    layout needing 81.3 GB (Llama 3 70B, 64 GPUs, tp 4, pp 4, no recompute) fits it; the same layout on the
    vendor figure alone (device_bytes unset) does not. Every catalog GPU's device total is sourced and lies
    within 10% of its vendor figure."""
    from perfmodel.api import Layout, predict
    from perfmodel.specs.hardware import apply_overrides, load_hardware
    from perfmodel.specs.specfile import data_dir

    h100 = load_hardware("h100-sxm")
    assert h100.memory.capacity == 81090 * 2**20
    lay = Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=4)
    p = predict("llama3-70b", h100, lay)
    need = float(p.memory_bytes_per_gpu[0])
    assert 80e9 < need < h100.memory.capacity and bool(p.fits[0]) and float(p.hbm_bytes) == h100.memory.capacity
    vendor_only = h100.model_copy(update={"memory": h100.memory.model_copy(update={"device_bytes": None})})
    q = predict("llama3-70b", vendor_only, lay)
    assert float(q.memory_bytes_per_gpu[0]) == need and not bool(q.fits[0])
    # a what-if capacity keeps the usable share: hbm_gb=96 -> 96e9 x 85.03/80
    w = apply_overrides(h100, ["hbm_gb=96"])
    assert w.memory.capacity == pytest.approx(96e9 * 81090 * 2**20 / 80e9, rel=1e-12)
    for f in sorted((data_dir("hardware")).glob("*.toml")):
        hw = load_hardware(f.stem)
        if hw.memory.device_bytes is not None:
            assert 0.9 < hw.memory.device_bytes / hw.memory.hbm_bytes < 1.1, hw.id
            assert len(hw.sources["memory.device_bytes"]) > 40, hw.id
