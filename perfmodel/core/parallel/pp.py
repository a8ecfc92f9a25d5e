"""Pipeline parallelism: real stages, schedules, their bubbles and in-flight activations
(Narayanan et al. 2021 §2.2; Megatron-Core pipeline_parallel/schedules.py).

Stages. The L layers are cut into pp*vp chunks, chunk j on rank j % pp (Megatron-Core interleaving). The
first chunk also holds the embedding, the last chunk the final norm, LM head, loss and MTP modules. A split
follows Megatron-Core's rules: an even split when pp*vp divides L; when it divides L + 1 the loss takes
one layer's slot (account_for_loss_in_pipeline_split); when it divides L + 2 the embedding and the loss each
take one (account_for_embedding_in_pipeline_split too: Llama 3.1 405B's 126 layers on pp8 vp8); otherwise
an uneven split with explicit first/last-stage layer counts (decoder_first/last_pipeline_num_layers): every
chunk gets floor(L / (pp vp)) layers and the remainder goes to the middle chunks first, then the first,
then the last, which carry the embedding and the head. A model with MTP modules (DeepSeek-V3) is laid out
with the embedding, each MTP layer and the loss taking one layer slot each when pp*vp divides L + 2 + mtp:
NeMo 2.0 scripts/performance/llm/pretrain_deepseek_v3.py (num_layers_in_first_pipeline_stage = 64 // pp - 1,
num_layers_in_last_pipeline_stage = 64 // pp - 2 for 61 layers + MTP) and Megatron-Bridge's DeepSeek-V3 H100
pipeline layout "Et|(tt|)*30mL" (pp8 vp4: the last chunk holds only the MTP layer and the loss). Megatron-Bridge's
DeepSeek-V3 and Kimi-K2 recipes lay their 61 layers out by an explicit (pp, vp) map instead (stack
pipeline_layout = "bridge_map", `BRIDGE_MAP_KEYS`): the embedding shares the first chunk with a full chunk of
decoder layers and the last chunk holds three fewer, beside the MTP layer (if any) and the loss. Layer kinds
(DeepSeek-V3's 3 dense first layers, Llama 4's alternating MoE) land on the ranks that hold them.

Schedule. With stage times t_r (one micro-batch's forward + backward on rank r) and m micro-batches:
  1F1B:        (m - 1) max_r t_r + sum_r t_r        (= (m + pp - 1) t for equal stages; Narayanan Eq. 1)
  interleaved: m max_r t_r + (sum_r t_r - max_r t_r) / vp + (vp - 1)/vp * max(0, pp - m) * mean_r t_r
The interleaved bubble is (pp - 1) t / vp for m >= pp (Narayanan Eq. 2); with fewer micro-batches than
ranks a micro-batch must still traverse all pp*vp chunks, so the step is pp t + (m - 1) t / vp and
interleaving buys almost nothing. Megatron-Core's interleaved schedule requires m to be a multiple of pp
(schedules.py forward_backward_pipelining_with_interleaving, core v0.7: "number of microbatches is not
divisible by pipeline-model-parallel-size when using interleaved schedule"; later versions keep it for the
default microbatch_group_size_per_vp_stage = pp): `legal_interleaving`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from perfmodel.core import comm
from perfmodel.core import constants as K
from perfmodel.core.elementwise import select
from perfmodel.core.overlap import exposed
from perfmodel.core.topology import _codes

# (pp, vp) entries of Megatron-Bridge's DeepSeek-V3 / Kimi-K2 pipeline layout maps (chunk_layers, bridge_map)
BRIDGE_MAP_KEYS = frozenset({(4, 1), (8, 1), (4, 2), (16, 1), (8, 2), (4, 4), (2, 8)})


def chunk_layers(L: int, pp: int, vp: int, mtp: int = 0, layout: str = "module_slots") -> list[int]:
    """Transformer layers of each of the pp*vp chunks, in model order (`mtp`: the model's MTP layers, which
    the last chunk holds with the loss; `layout`: the stack's pipeline_layout)."""
    C = pp * vp
    slots, extra = divmod(L + 2 + mtp, C)
    if layout == "bridge_map" and (pp, vp) in BRIDGE_MAP_KEYS:
        s, rest = divmod(L + 3, C)
        if rest == 0 and s > 3:
            # Megatron-Bridge recipes/deepseek/deepseek_v3.py set_deepseek_v3_pipeline_model_parallel_layout and
            # recipes/kimi/kimi_k2.py _get_kimi_k2_pipeline_layout: for these (pp, vp) the 61 decoder layers are laid
            # out [embedding + s], (C - 2) x [s], [s - 3 + (mtp) + loss] with s = 64 / C, the MTP layer (if any) and
            # the loss beside the last chunk's decoder layers: 16 chunks 4 | 4 x 14 | 1, 8 chunks 8 | 8 x 6 | 5,
            # 4 chunks 16 | 16 | 16 | 13 (DeepSeek-V3 with or without MTP, Kimi-K2 alike; the DeepSeek-V3 GB300 preset
            # string 'Et*4|(t*4|)*14tmL' the same). Other (pp, vp) have no map entry: the rules below
            return [s] * (C - 1) + [s - 3]
    if mtp and C > 1 and extra == 0 and slots > mtp:
        # embedding, MTP layers and loss take a layer slot each: first chunk slots - 1 decoder layers, the
        # middle ones slots, the last slots - 1 - mtp (module docstring: NeMo 2.0 / Megatron-Bridge layouts)
        return [slots - 1] + [slots] * (C - 2) + [slots - 1 - mtp]
    # floor(L / C) each, the remainder to the middle chunks first, then the first, then the last. This one
    # rule gives each of Megatron-Core's named splits: even when C divides L; the loss taking a slot when C
    # divides L + 1 (remainder C - 1: every chunk but the last gets one more); the embedding and the loss
    # taking one each when C divides L + 2 (remainder C - 2: the middle chunks)
    base, rem = divmod(L, C)
    sizes = [base] * C
    for j in list(range(1, C - 1)) + [0, C - 1]:
        if rem == 0:
            break
        sizes[j] += 1
        rem -= 1
    return sizes


@lru_cache(maxsize=4096)
def rank_table(
    kinds: tuple[int, ...], n_kinds: int, pp: int, vp: int, mtp: int = 0, layout: str = "module_slots"
) -> tuple[tuple[int, ...], ...]:
    """Per rank r: (layers of each kind, ...). `kinds[i]` is layer i's kind index."""
    sizes = chunk_layers(len(kinds), pp, vp, mtp, layout)
    counts = [[0] * n_kinds for _ in range(pp)]
    start = 0
    for j, n in enumerate(sizes):
        for i in range(start, start + n):
            counts[j % pp][kinds[i]] += 1
        start += n
    return tuple(tuple(c) for c in counts)


@lru_cache(maxsize=4096)
def signatures(
    kinds: tuple[int, ...], n_kinds: int, pp: int, vp: int, mtp: int = 0, layout: str = "module_slots"
) -> tuple[tuple, ...]:
    """Distinct ranks as (layers per kind, holds embedding, holds head, how many ranks), for pricing each
    distinct stage once."""
    counts = rank_table(kinds, n_kinds, pp, vp, mtp, layout)
    sig: dict[tuple, int] = {}
    for r, c in enumerate(counts):
        key = (c, r == 0, r == pp - 1)
        sig[key] = sig.get(key, 0) + 1
    return tuple((c, e, h, n) for (c, e, h), n in sig.items())


def _pairs(pp: np.ndarray, vp: np.ndarray):
    """The distinct (pp, vp) pairs and each layout's index into them (one 1-D unique on an integer key)."""
    p, v = np.asarray(pp, dtype=np.int64), np.asarray(vp, dtype=np.int64)
    radix = int(v.max()) + 1 if v.size else 1
    if p.size and int(p.max()) * radix < 1 << 22:  # small keys: a lookup table, not a sort
        u, inv = _codes(p * radix + v)
        return [(int(k // radix), int(k % radix)) for k in u], inv.reshape(-1)
    key = p * (1 << 32) + v
    u, inv = np.unique(key, return_inverse=True)
    return [(int(k >> 32), int(k & 0xFFFFFFFF)) for k in u], inv.reshape(-1)


def signature_table(
    kinds: tuple[int, ...], n_kinds: int, pp: np.ndarray, vp: np.ndarray, mtp: int = 0, layout: str = "module_slots"
):
    """Padded arrays over (distinct (pp, vp) pair, signature): layers per kind [n_kinds][P, S], embedding
    [P, S], head [P, S], multiplicity [P, S] (0 on padding); and each layout's pair index."""
    pairs, inv = _pairs(pp, vp)
    cnt, emb, head, mult = _signature_rows(kinds, n_kinds, tuple(pairs), mtp, layout)
    return list(cnt), emb, head, mult, inv


@lru_cache(maxsize=256)
def _signature_rows(kinds: tuple[int, ...], n_kinds: int, pairs: tuple, mtp: int, layout: str):
    """signature_table's arrays for the distinct pairs `pairs` (read-only: cached for a search's chunks)."""
    tabs = [signatures(kinds, n_kinds, int(p), int(v), mtp, layout) for p, v in pairs]
    S = max(len(t) for t in tabs)
    cnt = np.zeros((n_kinds, len(pairs), S))
    emb, head, mult = (np.zeros((len(pairs), S)) for _ in range(3))
    for u, tab in enumerate(tabs):
        for s, (c, e, h, n) in enumerate(tab):
            cnt[:, u, s] = c
            emb[u, s], head[u, s], mult[u, s] = e, h, n
    for x in (cnt, emb, head, mult):
        x.flags.writeable = False
    return cnt, emb, head, mult


def signature_arrays(
    kinds: tuple[int, ...], n_kinds: int, pp: np.ndarray, vp: np.ndarray, mtp: int = 0, layout: str = "module_slots"
):
    """Padded arrays over (layout, signature): layers per kind [n_kinds][n, S], embedding [n, S], head
    [n, S], multiplicity [n, S] (0 on padding)."""
    cnt, emb, head, mult, inv = signature_table(kinds, n_kinds, pp, vp, mtp, layout)
    return [c[inv] for c in cnt], emb[inv], head[inv], mult[inv]


@lru_cache(maxsize=4096)
def memory_ranks(
    kinds: tuple[int, ...],
    n_kinds: int,
    pp: int,
    vp: int,
    mtp: int = 0,
    layout: str = "module_slots",
    schedule: str = "interleaved",
) -> tuple[int, ...]:
    """The pipeline ranks whose memory can be the largest, ascending: the lowest rank of each distinct (layers per
    kind, first, last) signature. Every memory term of a rank is a function of that signature except the
    micro-batches in flight, which never grow with the rank index (`in_flight`: pp - r in 1F1B, Megatron's
    interleaved warm-up falls with r, GPipe and DualPipe hold the same on every rank), so the lowest rank of a
    signature holds at least what any other rank with it holds. DeepSeek-V3's three dense first layers make rank 1
    (dense) and rank 2 (MoE only) different signatures, and both are checked. DualPipe: a rank also holds its
    mirror stage pp - 1 - r (parallel/dp.dualpipe_params), so the mirror's layers join the signature and the
    candidates' mirrors are kept beside them."""
    counts = rank_table(kinds, n_kinds, pp, vp, mtp, layout)
    first: dict[tuple, int] = {}
    for r, c in enumerate(counts):
        key = (c, r == 0, r == pp - 1) + ((counts[pp - 1 - r],) if schedule == "dualpipe" else ())
        first.setdefault(key, r)
    ranks = set(first.values())
    if schedule == "dualpipe":
        ranks |= {pp - 1 - r for r in ranks}
    return tuple(sorted(ranks))


def memory_rank_table(
    kinds: tuple[int, ...],
    n_kinds: int,
    pp: np.ndarray,
    vp: np.ndarray,
    mtp: int = 0,
    layout: str = "module_slots",
    schedule: str = "interleaved",
):
    """`ranks_for_memory` over the distinct (pp, vp) pairs: layers per kind [n_kinds][P, Q], rank index [P, Q]
    and each layout's pair index. Q is the most candidate ranks (`memory_ranks`) of any pair; a pair with fewer
    repeats its last rank (pp - 1) to fill its row, so column 0 is always the first rank and column Q - 1 the
    last, and a repeated column changes no maximum."""
    pairs, inv = _pairs(pp, vp)
    cnt, rank = _memory_rank_rows(kinds, n_kinds, tuple(pairs), mtp, layout, schedule)
    return list(cnt), rank, inv


@lru_cache(maxsize=256)
def _memory_rank_rows(kinds: tuple[int, ...], n_kinds: int, pairs: tuple, mtp: int, layout: str, schedule: str):
    """memory_rank_table's arrays for the distinct pairs `pairs` (read-only: cached for a search's chunks)."""
    cand = [memory_ranks(kinds, n_kinds, int(p), int(v), mtp, layout, schedule) for p, v in pairs]
    Q = max(len(c) for c in cand)
    cnt = np.zeros((n_kinds, len(pairs), Q))
    rank = np.zeros((len(pairs), Q))
    for u, ((p, v), rs) in enumerate(zip(pairs, cand)):
        counts = rank_table(kinds, n_kinds, int(p), int(v), mtp, layout)
        for s, r in enumerate(rs + (rs[-1],) * (Q - len(rs))):
            cnt[:, u, s] = counts[r]
            rank[u, s] = r
    for x in (cnt, rank):
        x.flags.writeable = False
    return cnt, rank


def ranks_for_memory(
    kinds: tuple[int, ...],
    n_kinds: int,
    pp: np.ndarray,
    vp: np.ndarray,
    mtp: int = 0,
    layout: str = "module_slots",
    schedule: str = "interleaved",
):
    """Layers per kind [n_kinds][n, Q] and rank index [n, Q] of the ranks whose memory can be the largest
    (`memory_ranks`: every distinct pipeline rank, the first of each signature), column 0 the first rank and
    column Q - 1 the last."""
    cnt, rank, inv = memory_rank_table(kinds, n_kinds, pp, vp, mtp, layout, schedule)
    return [c[inv] for c in cnt], rank[inv]


def legal_interleaving(pp, vp, nmb) -> np.ndarray:
    """True where the schedule is legal: vp == 1, or m a multiple of pp (Megatron-Core interleaved)."""
    return (vp <= 1) | (pp <= 1) | (np.mod(nmb, pp) == 0)


def boundary_p2p_time(Ts, h: int, tp, cp, dp, pp, vp, hw):
    """Send activations forward and gradients backward, once per virtual chunk per micro-batch: 2 vp sends
    of one micro-batch's sequence-parallel activation (tokens/tp x hidden, bf16; Megatron-Core
    get_tensor_shapes); neighbours are tp*cp*dp ranks apart (order tp-cp-ep-dp-pp). Where neighbours share a
    domain but the pipelines span pp*tp*cp*dp > domain GPUs, some pipeline's boundary crosses a domain edge
    (GPUs g and g + stride on either side of it); the schedule's steady state runs at the slowest rank's pace
    (t_max; in 1F1B every send/recv is waited), so each rank is priced at that boundary, the larger of the
    two (a mean-rank breakdown overstates pp_comm by the other ranks' difference)."""
    stride = np.asarray(tp * cp * dp, dtype=float)
    nbytes = Ts * h * K.BF16
    one = comm.p2p_time(nbytes, stride, hw)
    # the domain-edge boundary (docstring); at stride >= D it is the neighbours' own, `edge` == `one`
    D = hw.scale_up.domain_size
    edge = comm.p2p_time(nbytes, np.maximum(stride, D), hw)
    one = np.where(pp * stride > D, np.maximum(one, edge), one)
    return np.where(pp > 1, 2 * vp * one, 0.0)


# bubble of other schedules relative to 1F1B's (Qi et al. 2024, Zero Bubble §3: with T_F = T_B = T_W,
# ZB-H1's (p-1)(T_F + T_B - T_W) is 1/3 of 1F1B's (p-1)(T_F + T_B + T_W); DeepSeek-V3 §3.2.1 Table 2:
# DualPipe (p/2 - 1)(F&B + B - 3W) taken with F&B = F + B, at (p/2 - 1)/(p - 1) of ZB-H1's)
ZERO_BUBBLE_SHARE = 1 / 3


SCHEDULE_CODES = {"zero_bubble": 1, "dualpipe": 2}  # every other schedule: the 1F1B / interleaved formula (0)


def pipeline_seconds(t_max, t_sum, pp, vp, nmb, code, zb_share=ZERO_BUBBLE_SHARE):
    """All micro-batches through the schedule, for stage times with max t_max and sum t_sum (module docstring);
    `code` SCHEDULE_CODES' (ZB-H1: ZERO_BUBBLE_SHARE of the 1F1B bubble; DualPipe: (pp/2 - 1)/(pp - 1) of that).
    Elementwise (core/elementwise.py): the step tail's formula for one layout and for the planner's loop."""
    fill = np.maximum(0.0, pp - nmb) * (vp - 1) / vp * t_sum / pp
    bub = (t_sum - t_max) / vp + fill
    dual = bub * zb_share * np.maximum(pp / 2 - 1, 0.0) / np.maximum(pp - 1, 1.0)
    bub = select(code == 1, bub * zb_share, select(code == 2, dual, bub))
    return select(pp > 1, nmb * t_max + bub, nmb * t_max)


def schedule_time(t_max, t_sum, pp, vp, nmb, schedule: str = "interleaved"):
    """(pipeline seconds, bubble seconds) of one step under the stack's schedule (pipeline_seconds)."""
    total = pipeline_seconds(t_max, t_sum, pp, vp, nmb, SCHEDULE_CODES.get(schedule, 0))
    return total, total - nmb * t_max


def stage_compute(layers, has_embedding, embed, has_head, head):
    """One pipeline rank's compute per micro-batch: its layers' seconds, and the embedding / head where it holds them."""
    return layers + has_embedding * embed + has_head * head


def stage_seconds(compute, p2p, share, on):
    """One pipeline rank's time per micro-batch: its compute and the part of its send/recv that compute does not
    hide (overlap.exposed; `share` the schedule's overlappable share); -inf on a padding signature (`on` False),
    which no max picks."""
    return select(on, compute + exposed(p2p, compute, share), -np.inf)


TAIL_FUNCTIONS = (pipeline_seconds, stage_compute, stage_seconds)


def in_flight(pp, vp, nmb, rank=0, schedule: str = "interleaved"):
    """Micro-batches (in units of a rank's whole layer set) whose activations rank `rank` holds at its peak.
    1F1B: pp - rank (Narayanan et al. 2021 §2.2.1). Interleaved: Megatron's warm-up of
    2(pp - rank - 1) + (vp - 1) pp chunks plus the one in flight, each 1/vp of the rank's layers; on the
    first rank pp (1 + (pp-1)/(pp vp)) (Korthikanti et al. 2022 §4.2.3). GPipe: all forwards run before
    any backward, so every rank holds all of them (Huang et al. 2019 §2.3; Narayanan et al. 2021 §2.2.1).
    DualPipe: PP + 1 on every rank (DeepSeek-V3 report §3.2.1, Table 2: the two directions' micro-batches
    together, in units of one stage's activations). At most nmb."""
    chunks = 2 * (pp - rank - 1) + (vp - 1) * pp + 1
    sched = np.where(vp > 1, chunks / vp, pp - rank)
    if schedule == "gpipe":
        sched = np.maximum(nmb, 1) + 0 * sched
    elif schedule == "dualpipe":
        sched = pp + 1 + 0 * sched
    return np.where(pp > 1, np.minimum(sched, np.maximum(nmb, 1)), 1.0)
