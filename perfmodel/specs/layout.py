"""Parallel layouts: one `Layout` (ints) or a `LayoutGrid` (struct of numpy arrays).

Semantics follow Megatron-Core: world = tp * cp * pp * dp for the dense parts; MoE layers fold the same
GPUs as etp * ep * edp (Liu et al. 2025, "MoE Parallel Folding"); default rank order tp-cp-ep-dp-pp with
tp innermost, which decides which groups stay inside an NVLink domain (see topology.py).
The cost model is written over LayoutGrid arrays, so one layout and a million share the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from perfmodel.errors import InputError

RECOMPUTE = {"none": 0, "selective": 1, "full": 2}
Recompute = Literal["none", "selective", "full"]


@dataclass(frozen=True)
class Layout:
    gpus: int
    gbs: int  # global batch, sequences
    seq: int  # sequence length, tokens
    tp: int = 1
    pp: int = 1
    vp: int = 1  # virtual (interleaved) stages per pipeline rank
    cp: int = 1
    ep: int = 1
    etp: int = 1
    mbs: int = 1
    fsdp: bool = False  # parameters + grads + optimizer sharded over dp (ZeRO-3 / Megatron-FSDP)
    recompute: Recompute = "none"

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)


_INT_FIELDS = ("gpus", "gbs", "seq", "tp", "pp", "vp", "cp", "ep", "etp", "mbs")


def layout_text(L: "Layout | dict | None", mbs: bool = False) -> str:
    """One layout as the command line shows it: 'tp4 pp8 vp5 cp2 dp4 mbs2 fsdp rc-selective'. tp, pp and dp
    always, other axes when not 1; mbs=True shows the micro-batch even when it is 1 (where the planner
    chose it). Takes a Layout or a prediction row's layout dict; None -> '-'."""
    if L is None:
        return "-"
    d = {**L.__dict__, "dp": L.dp} if isinstance(L, Layout) else L
    parts = [f"{k}{d[k]}" for k in ("tp", "pp", "vp", "cp", "ep", "etp", "dp") if d[k] != 1 or k in ("tp", "pp", "dp")]
    if mbs or d["mbs"] != 1:
        parts.append(f"mbs{d['mbs']}")
    if d["fsdp"]:
        parts.append("fsdp")
    if d["recompute"] != "none":
        parts.append(f"rc-{d['recompute']}")
    return " ".join(parts)


@dataclass(frozen=True)
class LayoutGrid:
    """Many layouts as parallel int64 arrays (same length n)."""

    gpus: np.ndarray
    gbs: np.ndarray
    seq: np.ndarray
    tp: np.ndarray
    pp: np.ndarray
    vp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    etp: np.ndarray
    mbs: np.ndarray
    fsdp: np.ndarray  # bool
    recompute: np.ndarray  # 0 none, 1 selective, 2 full

    @property
    def n(self) -> int:
        return int(self.tp.shape[0])

    @property
    def dp(self) -> np.ndarray:
        return self.gpus // (self.tp * self.pp * self.cp)

    @property
    def edp(self) -> np.ndarray:
        """Expert data-parallel size: ep * etp * edp = tp * cp * dp (parallel folding)."""
        return (self.tp * self.cp * self.dp) // (self.ep * self.etp)

    @property
    def microbatches(self) -> np.ndarray:
        return self.gbs // (self.dp * self.mbs)

    @classmethod
    def from_layouts(cls, layouts: list[Layout]) -> "LayoutGrid":
        cols = {f: np.array([getattr(l, f) for l in layouts], dtype=np.int64) for f in _INT_FIELDS}
        cols["fsdp"] = np.array([l.fsdp for l in layouts], dtype=bool)
        cols["recompute"] = np.array([RECOMPUTE[l.recompute] for l in layouts], dtype=np.int64)
        return cls(**cols)

    @classmethod
    def of(cls, layout: Layout) -> "LayoutGrid":
        return cls.from_layouts([layout])

    @classmethod
    def concat(cls, grids: "list[LayoutGrid]") -> "LayoutGrid":
        """The layouts of several grids, in order, as one grid."""
        return cls(**{f.name: np.concatenate([getattr(g, f.name) for g in grids]) for f in fields(cls)})

    def take(self, idx) -> "LayoutGrid":
        return LayoutGrid(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def layout(self, i: int) -> Layout:
        inv = {v: k for k, v in RECOMPUTE.items()}
        kw = {f: int(getattr(self, f)[i]) for f in _INT_FIELDS}
        return Layout(**kw, fsdp=bool(self.fsdp[i]), recompute=inv[int(self.recompute[i])])  # type: ignore[arg-type]


def legality(
    grid: LayoutGrid, num_layers: int, num_heads: int, num_kv_heads: int, num_experts: int | None
) -> dict[str, np.ndarray]:
    """Boolean masks, one per rule (True = rule violated). Used by `check_layout` and the planner."""
    g = grid
    model_par = g.tp * g.pp * g.cp
    bad: dict[str, np.ndarray] = {}
    bad["gpus"] = (g.gpus % model_par) != 0
    dp = np.maximum(g.gpus // np.maximum(model_par, 1), 1)
    bad["tp"] = (num_heads % g.tp) != 0
    bad["pp"] = g.pp > num_layers
    # Megatron may count the embedding and the loss as pipeline layers
    # (account_for_embedding/loss_in_pipeline_split), so pp * vp can reach num_layers + 2
    bad["vp"] = (g.vp > 1) & ((g.pp == 1) | (num_layers + 2 < g.pp * g.vp))
    bad["gbs"] = (g.gbs % (dp * g.mbs)) != 0
    bad["seq_cp"] = (g.seq % (2 * g.cp) != 0) & (g.cp > 1)
    # sequence parallelism shards each CP rank's seq / cp tokens over tp (Korthikanti et al. 2022 §4.2.2)
    bad["seq_tp"] = (g.seq % (g.tp * g.cp) != 0) & (g.tp > 1)
    # Megatron-Core's interleaved schedule runs micro-batches in groups of pp
    bad["interleave"] = (g.vp > 1) & (g.pp > 1) & ((g.gbs // np.maximum(dp * g.mbs, 1)) % g.pp != 0)
    if num_experts:
        bad["ep"] = (num_experts % g.ep) != 0
        bad["etp"] = ((g.tp * g.cp * dp) % (g.ep * g.etp)) != 0
    else:
        bad["ep"] = g.ep != 1
        bad["etp"] = g.etp != 1
    return bad


RULE_TEXT = {
    "gpus": "gpus must be a multiple of tp * pp * cp",
    "tp": "tp must divide the number of attention heads",
    "pp": "pp must not exceed the number of layers",
    "vp": "vp > 1 needs pp > 1 and pp * vp <= layers + 2 (embedding and loss may take a stage each)",
    "gbs": "global batch must be divisible by dp * micro-batch",
    "seq_cp": "sequence length must be divisible by 2 * cp (load-balanced context parallelism)",
    "seq_tp": "sequence length must be divisible by tp * cp (sequence parallelism shards each CP rank's tokens over tp)",
    "interleave": "the interleaved schedule (vp > 1) needs the micro-batch count gbs / (dp * mbs) to be a multiple of pp (Megatron-Core)",
    "ep": "ep must divide the number of experts (and be 1 for a dense model)",
    "etp": "ep * etp must divide tp * cp * dp (MoE parallel folding; etp must be 1 for a dense model)",
}


# Largest value of any integer layout field: far above any real cluster, batch or context, and small
# enough that the products the rules and the cost model form (dp * mbs, ep * etp, pp * vp) fit in int64.
MAX_LAYOUT_INT = 2**31 - 1


def check_layout(layout: Layout, num_layers: int, num_heads: int, num_kv_heads: int, num_experts: int | None) -> None:
    """Raise one InputError naming the first rule the layout breaks."""
    for name in _INT_FIELDS:
        val = getattr(layout, name)
        if not isinstance(val, (int, np.integer)) or val < 1:
            raise InputError("layout", name, f"must be a positive integer (got {val!r})")
        if val > MAX_LAYOUT_INT:
            raise InputError("layout", name, f"must be at most {MAX_LAYOUT_INT:,} (got {val:,})")
    if layout.recompute not in RECOMPUTE:
        raise InputError("layout", "recompute", f"must be one of {', '.join(RECOMPUTE)}")
    if not isinstance(layout.fsdp, (bool, np.bool_)):
        raise InputError("layout", "fsdp", f"must be True or False (got {layout.fsdp!r})")
    if num_experts is None and layout.etp != 1:  # as --ep: expert parallel axes need experts
        raise InputError(
            "layout",
            "etp",
            f"etp must be 1 for a dense model (expert tensor parallel splits MoE experts; got etp={layout.etp})",
        )
    # in Python ints, before the int64 arrays of `legality` could wrap around
    model_par = int(layout.tp) * int(layout.pp) * int(layout.cp)
    if model_par > layout.gpus:
        raise InputError("layout", "gpus", f"{RULE_TEXT['gpus']} ({layout.gpus} GPUs with tp*pp*cp = {model_par})")
    bad = legality(LayoutGrid.of(layout), num_layers, num_heads, num_kv_heads, num_experts)
    for rule, mask in bad.items():
        if mask[0]:
            detail = {
                "gpus": f"{layout.gpus} GPUs with tp*pp*cp = {layout.tp * layout.pp * layout.cp}",
                "tp": f"tp={layout.tp}, heads={num_heads}",
                "pp": f"pp={layout.pp}, layers={num_layers}",
                "vp": f"pp={layout.pp}, vp={layout.vp}, layers={num_layers}",
                "gbs": f"gbs={layout.gbs}, dp={layout.dp}, mbs={layout.mbs}",
                "seq_cp": f"seq={layout.seq}, cp={layout.cp}",
                "seq_tp": f"seq={layout.seq}, tp={layout.tp}, cp={layout.cp}",
                "interleave": f"micro-batches={layout.gbs // max(layout.dp * layout.mbs, 1)}, pp={layout.pp}, vp={layout.vp}",
                "ep": f"ep={layout.ep}, experts={num_experts or 0}",
                "etp": (
                    f"ep*etp={layout.ep * layout.etp}, tp*cp*dp={layout.tp * layout.cp * layout.dp}"
                    if num_experts
                    else f"etp={layout.etp}, dense model"
                ),
            }[rule]
            raise InputError("layout", rule, f"{RULE_TEXT[rule]} ({detail})")


def default_etp(is_moe: bool, tp: int, cp: int, dp: int, ep: int) -> int:
    """Expert tensor parallel size when none is given: tp, as Megatron-Core defaults
    (`expert_tensor_parallel_size` None -> tensor_model_parallel_size, megatron/training/arguments.py), or 1
    where ep * tp does not divide tp * cp * dp (the folding rule) or the model is dense."""
    if not is_moe or (tp * cp * dp) % (ep * tp):
        return 1
    return tp
