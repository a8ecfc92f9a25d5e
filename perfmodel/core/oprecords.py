"""One layout's op records, priced: every GEMM, attention core, memory-bound stream and collective of each layer
kind per micro-batch, with its seconds, and every saved activation tensor with its bytes (`perfmodel predict
--ops --json`). The same records and the same pricing functions as predict_grid (workload.build, price.py,
comm.collective_time), so a figure here is the one that went into the step."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perfmodel.core import workload
from perfmodel.core.compute import memory_time
from perfmodel.core.predict import Options, software_of
from perfmodel.core.price import attention_fwd_bwd, gemm_fwd_bwd
from perfmodel.specs.hardware import HardwareSpec
from perfmodel.specs.layout import LayoutGrid
from perfmodel.specs.model import ModelSpec

_f = lambda x: float(np.asarray(x, dtype=float).reshape(-1)[0])


def op_records(model: ModelSpec, hw: HardwareSpec, grid: LayoutGrid, opts: Options = Options()) -> dict:
    """The priced op records of the first layout of `grid`, per layer kind (`layers`) and for the head, as JSON."""
    c, prec = opts.consts, opts.precision
    sw = software_of(model, hw, opts)
    g1 = grid.take(np.array([0]))
    imb = "real" if opts.routing == "real" else 1.0  # real: per layout, parallel/ep.py
    ws = workload.build(model, g1, prec not in ("bf16", "fp16"), imb, c, sw)
    hw_k = hw.at_clock(sw.power_factor)
    c_layer = replace(c, kernel_fixed_s=sw.layer_kernel_s)
    layers = []
    for layer in ws.layers:
        gemms = []
        for gm in layer.gemms:
            f, b = gemm_fwd_bwd(gm, hw_k, prec, c_layer)
            gemms.append(
                {
                    "name": gm.name,
                    "M": _f(gm.M),
                    "N": _f(gm.N),
                    "K": _f(gm.K),
                    "count": _f(gm.count),
                    "low_precision": gm.low_precision,
                    "module": gm.module,
                    "forward_s": _f(f),
                    "backward_s": _f(b),
                }
            )
        cores = []
        for a in layer.attention:
            f, b = attention_fwd_bwd((a,), hw_k, c_layer, sw.attn_fwd_factor, sw.attn_bwd_factor)
            cores.append(
                {
                    "name": a.name,
                    "flops_fwd": _f(a.flops_fwd),
                    "mean_keys": _f(a.mean_keys),
                    "share": a.share,
                    "forward_s": _f(f),
                    "backward_s": _f(b),
                }
            )
        streams = [
            {
                "name": s.name,
                "bytes_fwd": _f(s.bytes_fwd),
                "bytes_bwd": _f(s.bytes_bwd),
                "kernels_fwd": s.kernels_fwd,
                "kernels_bwd": s.kernels_bwd,
                "module": s.module,
                "forward_s": _f(memory_time(s.bytes_fwd, hw_k, s.kernels_fwd, c_layer)),
                "backward_s": _f(memory_time(s.bytes_bwd, hw_k, s.kernels_bwd, c_layer)),
            }
            for s in layer.streams
        ]
        comms = [
            {
                "name": x.name,
                "kind": x.kind,
                "overlap": x.overlap,
                "bytes": _f(x.nbytes),
                "group": _f(x.size),
                "stride": _f(x.stride),
                "calls_fwd": x.calls_fwd,
                "calls_bwd": x.calls_bwd,
                "module": x.module,
                "seconds_per_call_raw": _f(x.price(hw)),
            }
            for x in layer.comms
        ]
        saved = [{"name": s.name, "bytes": _f(s.nbytes), "module": s.module} for s in layer.saved]
        fixed = [
            {"name": x.name, "forward_s": x.seconds_fwd, "backward_s": x.seconds_bwd, "module": x.module}
            for x in layer.fixed
        ]
        layers.append(
            {
                "kind": layer.kind,
                "count": layer.count,
                "gemms": gemms,
                "attention": cores,
                "streams": streams,
                "collectives": comms,
                "fixed": fixed,
                "saved": saved,
            }
        )
    return {"per_micro_batch": True, "tokens_per_micro_batch": _f(ws.T), "layers": layers}
