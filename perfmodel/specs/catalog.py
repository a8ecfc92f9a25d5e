"""The catalog as documents (`perfmodel list / show / explain`): each spec's fields with their units and sources,
key figures per hardware, model and stack, counted against published parameters, and how a FLOP count is derived.
Values stay SI; a field's display unit is specs/hardware.py hardware_unit's."""

from __future__ import annotations

from typing import Any

import sympy as sp

from perfmodel.specs.counts import (
    Convention,
    S,
    flops_per_token,
    flops_per_token_expr,
    mean_keys,
    param_counts,
    symbolic_flops_formula,
)
from perfmodel.specs.hardware import HardwareSpec, hardware_unit
from perfmodel.specs.model import ModelSpec
from perfmodel.specs.stack import StackSpec

_SKIP = {"sources", "path", "notes", "overridden", "base", "notes_of"}


def _flatten(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dict -> [(dotted.field, leaf value)] in declaration order."""
    if isinstance(obj, dict):
        out: list[tuple[str, Any]] = []
        for k, v in obj.items():
            if not prefix and k in _SKIP:
                continue
            out += _flatten(v, f"{prefix}.{k}" if prefix else k)
        return out
    return [(prefix, obj)]


def model_unit(field: str) -> str:
    """The unit of a model spec field (tokens, params, relative; '' for counts)."""
    leaf = field.rsplit(".", 1)[-1]
    if leaf in ("seq_len", "max_position_embeddings", "window"):
        return "tokens"
    if leaf.endswith("_params"):
        return "params"
    if leaf.endswith("tolerance"):
        return "relative"
    return ""


def fmt(v: Any) -> str:
    """A field value as `show` prints it (floats to 4 significant digits)."""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def hardware_row(hw: HardwareSpec) -> dict[str, Any]:
    """The key figures of `list hardware` (SI units)."""
    p = hw.peak_flops
    return {
        "id": hw.id,
        "name": hw.name,
        "bf16_flops": p.bf16,
        "fp8_flops": p.fp8,
        "hbm_bytes": hw.memory.hbm_bytes,
        "hbm_bandwidth": hw.memory.hbm_bandwidth,
        "nvlink_domain": hw.scale_up.domain_size,
        "nvlink_bandwidth": hw.scale_up.bandwidth,
        "nic_bandwidth": hw.scale_out.bandwidth,
        "tdp_w": hw.power.gpu_tdp_w,
    }


def model_row(m: ModelSpec) -> dict[str, Any]:
    """The key figures of `list models`: size, parameters counted (perfmodel.specs.counts), MoE, context."""
    pc = param_counts(m)
    return {
        "id": m.id,
        "name": m.name,
        "layers": m.num_layers,
        "hidden": m.hidden_size,
        "total_params": pc.total,
        "active_params": pc.active,
        "moe": m.is_moe,
        "seq_len": m.seq_len,
    }


_FROM_TABLES = {
    "efficiency.gemm_k_half": "the generation's measured GEMM sweep, fitted (show hardware ID --kernels)",
    "efficiency.gemm_mn_half": "the generation's measured GEMM sweep, fitted (show hardware ID --kernels)",
    "efficiency.collective_half_bytes": "the part's measured collective table, fitted (show hardware ID --kernels)",
}


def hardware_fields(hw: HardwareSpec) -> list[dict[str, Any]]:
    out = []
    for field, val in _flatten(hw.model_dump()):
        if field == "name":
            val = hw.display_name()  # a what-if says so, and what changed
        div, unit, si_unit = hardware_unit(field)
        shown = val / div if isinstance(val, (int, float)) and not isinstance(val, bool) and val is not None else val
        # an unset what-if field of a measured shape: the generation's table fit applies (show hardware --kernels)
        unset = val is None and field in _FROM_TABLES
        out.append(
            {
                "field": field,
                "value": val,
                "unit": si_unit,
                "display": "from the tables" if unset else fmt(shown),
                "display_unit": "" if unset else unit,
                "source": hw.sources.get(field, "") or (_FROM_TABLES[field] if unset else ""),
                "overridden": field in hw.overridden,
            }
        )
    return out


def model_fields(m: ModelSpec) -> list[dict[str, Any]]:
    return [
        {"field": f, "value": v, "unit": model_unit(f), "source": m.sources.get(f, "")}
        for f, v in _flatten(m.model_dump())
    ]


def model_summary(m: ModelSpec, seq: int) -> dict[str, Any]:
    """Counted vs published parameters and model FLOPs per token at `seq` (both conventions, +/- MTP)."""
    pc = param_counts(m)
    pub = m.published
    params: dict[str, Any] = {"total": pc.total, "active": pc.active, "mtp_total": pc.mtp_total}
    if pub:
        params["published_total"] = pub.total_params
        params["total_gap"] = (pc.total - pub.total_params) / pub.total_params
        params["total_tolerance"] = pub.tolerance
        if pub.active_params:
            params["published_active"] = pub.active_params
            params["active_gap"] = (pc.active - pub.active_params) / pub.active_params
            params["active_tolerance"] = pub.active_tolerance
    flops: dict[str, float] = {}
    for conv in ("causal", "full"):
        flops[conv] = float(flops_per_token(m, seq, conv, mtp=True))
        if m.mtp_layers:
            flops[f"{conv}_without_mtp"] = float(flops_per_token(m, seq, conv, mtp=False))
    return {"params": params, "seq": seq, "flops_per_token": flops}


def hardware_doc(hw: HardwareSpec) -> dict[str, Any]:
    """`show hardware --json`: every field with its unit and source, and what a what-if changed of which base."""
    whatif = {"base": hw.base, "notes_of": hw.notes_of} if hw.base or hw.notes_of else {}
    return {
        "id": hw.id,
        "name": hw.display_name(),
        "path": hw.path,
        "notes": hw.notes,
        "overridden": list(hw.overridden),
        **whatif,
        "fields": hardware_fields(hw),
    }


def model_doc(m: ModelSpec, seq: int) -> dict[str, Any]:
    """`show model --json`: every field with its unit and source, and model_summary at `seq`."""
    return {
        "id": m.id,
        "name": m.name,
        "path": m.path,
        "notes": m.notes,
        "fields": model_fields(m),
        **model_summary(m, seq),
    }


def flops_explanation(m: ModelSpec, seq: int, convention: Convention) -> dict[str, Any]:
    pc = param_counts(m)
    a = m.attention
    general = symbolic_flops_formula(m, convention)
    expr = flops_per_token_expr(m, convention, mtp=True)
    out: dict[str, Any] = {
        "model": m.id,
        "convention": convention,
        "seq": seq,
        "general_formula": str(general),
        "general_formula_pretty": sp.pretty(general, use_unicode=True),
        "symbols": {
            "n_mm": pc.n_mm + pc.mtp_n_mm,
            "L": m.num_layers + m.mtp_layers,
            "n_heads": a.num_heads,
            "d_qk": a.qk_dim,
            "d_v": a.v_dim,
            "S_eff(global layers)": float(mean_keys("global", 0, convention).subs(S, seq)),
        },
        "model_expression": str(expr),
        "model_expression_pretty": sp.pretty(expr, use_unicode=True),
        "flops_per_token": float(flops_per_token(m, seq, convention, mtp=True)),
    }
    if m.mtp_layers:
        out["flops_per_token_without_mtp"] = float(flops_per_token(m, seq, convention, mtp=False))
    if m.num_windowed_layers:
        out["windowed_layers"] = m.num_windowed_layers
    return out


# features shown in the `list stacks` overview (all of them are in `show stack` and in --json)
KEY_FEATURES = (
    "attention_kernel",
    "sequence_parallel",
    "tp_overlap",
    "dp_grad_reduce_overlap",
    "cuda_graphs",
    "fsdp",
    "grad_reduce_precision",
    "fp8_recipe",
    "moe_dispatcher",
    "moe_a2a_overlap",
    "recompute",
    "pipeline_schedule",
)


def stack_row(s: StackSpec) -> dict[str, Any]:
    unstated = [f for f, o in s.origin.items() if o.startswith("unstated")]
    return {
        "id": s.id,
        "name": s.name,
        "family": s.family,
        "base": s.base,
        "date": s.date,
        "software": list(s.software),
        "features": {f: _cell_json(s.value(f)) for f in KEY_FEATURES},
        "unstated": unstated,
        "per_model_rules": len(s.per_model),
    }


def _cell_json(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def stack_doc(s: StackSpec) -> dict[str, Any]:
    """Every feature of a stack with its value, origin and source, and its per-model rules (`show stack --json`)."""
    return {
        "id": s.id,
        "name": s.name,
        "family": s.family,
        "base": s.base,
        "base_source": s.base_source,
        "base_basis": s.base_basis,
        "read_only": s.read_only,
        "date": s.date,
        "software": list(s.software),
        "frameworks": list(s.frameworks),
        "path": s.path,
        "notes": s.notes,
        "features": s.rows(),
        "per_model": [
            {
                "match": r.match.model_dump(exclude_none=True),
                "values": {k: _cell_json(v) for k, v in r.values.items()},
                "sources": r.sources,
                "basis": {k: r.basis.get(k, "read") for k in r.values},
            }
            for r in s.per_model
        ],
    }
