"""What `perfmodel predict` reports for one layout: the prediction, MFU in the other attention convention, the
80% band (analysis/uncertainty.py), which groups leave the NVLink domain, the op records priced (--ops), and the
step's drawn power and the run's energy (economics/job.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perfmodel import api
from perfmodel.analysis import uncertainty
from perfmodel.analysis.checks import domain_flags, domain_warning, memory_error
from perfmodel.analysis.energy import step_of
from perfmodel.core import calibration
from perfmodel.core.oprecords import op_records
from perfmodel.core.predict import Options, software_of, stack_info
from perfmodel.core.software import Software
from perfmodel.economics.job import job
from perfmodel.errors import warn
from perfmodel.specs.counts import flops_per_token, param_counts
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import Layout, LayoutGrid
from perfmodel.specs.model import ModelSpec


@dataclass(frozen=True)
class OneLayout:
    """`doc`: predict's --json document; `software`: the stack as the cost model read it; `band`: the 80% band."""

    doc: dict[str, Any]
    software: Software
    band: uncertainty.Band


def other_convention(attention: str) -> str:
    return "full" if attention == "causal" else "causal"


def predict_report(
    m: ModelSpec,
    hw: HardwareSpec,
    lay: Layout,
    opts: Options,
    *,
    tokens: float,
    with_ops: bool = False,
    ignore_memory: bool = False,
) -> OneLayout:
    """Predict `lay` and assemble what predict reports, the energy of training `tokens` tokens included. A layout
    that does not fit in HBM is analysis/checks.py's memory error unless `ignore_memory`; a group that leaves the
    NVLink domain is a warning (errors.warn)."""
    p = api.predict(m, hw, lay, opts.precision, opts.attention, opts.routing, opts.consts, opts.stack, opts.stack_set)
    r = p.row(0)
    mem, hbm = r["memory_bytes_per_gpu"], r["hbm_bytes"]
    if not r["fits"] and not ignore_memory:
        raise memory_error(
            m,
            hw,
            lay,
            r,
            opts.precision,
            opts.attention,
            opts.routing,
            opts.consts,
            stack=opts.stack,
            stack_set=opts.stack_set,
        )
    # MFU in the other attention convention: MFU is proportional to model FLOPs per token
    other = other_convention(opts.attention)
    mfu_other = r["mfu"] * float(flops_per_token(m, lay.seq, other)) / r["model_flops_per_token"]  # type: ignore[arg-type]
    sw = software_of(m, hw, opts)
    warn(domain_warning(hw, r["layout"], sw.tp_overlap_scale_up))
    b = uncertainty.band_for(m, hw, opts.stack, lay.vp)  # 80% band from validation spread
    lows = {
        "tokens_per_s_per_gpu": b.throughput(r["tokens_per_s_per_gpu"]),
        "step_time_s": b.inverse(r["step_time_s"]),
        "mfu": b.throughput(r["mfu"]),
    }
    # the step's power by phase and the run's energy, drawn and rated (economics/power.py, job.py)
    j = job(
        hw,
        float(param_counts(m).total),
        r["tokens_per_s_per_gpu"],
        tokens,
        lay.gpus,
        require_price=False,
        step=step_of(p, 0, m, hw, opts),
    )
    doc = {
        "model": m.id,
        "hardware": hw.id,
        "precision": opts.precision,
        "attention": opts.attention,
        "routing": opts.routing,
        "hardware_overridden": list(hw.overridden),
        **stack_info(opts, m, hw),
        "calibration": str(calibration.active_file()),
        **r,
        f"mfu_{other}": mfu_other,
        "memory_over_bytes": max(0.0, mem - hbm),
        "leaves_nvlink_domain": domain_flags(hw, r["layout"]),
        **{f"{k}_{end}": v[i] for k, v in lows.items() for i, end in enumerate(("low", "high"))},
        "band": b.to_dict(),
        **({"ops": op_records(m, hw, LayoutGrid.of(lay), opts)} if with_ops else {}),
        "power": j.power_dict(),
        "energy": {**j.energy_dict(), "tokens": tokens},
    }
    return OneLayout(doc, sw, b)
