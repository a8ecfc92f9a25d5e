"""predict --ops: the priced op records are the ones the step was built from (issue 24 item 5)."""

from __future__ import annotations

import pytest
from cli_helpers import run_json


def test_op_records_add_up_to_the_step_breakdown(capsys):
    # pp 1, no recompute: the step's GEMM term is every layer's GEMMs (forward + backward) and its host syncs
    # (`fixed`, on the GEMM stream), times the layers of each kind, times the micro-batches
    args = [
        "predict",
        "--model",
        "mixtral-8x7b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "64",
        "--tp",
        "2",
        "--ep",
        "8",
        "--gbs",
        "128",
        "--seq",
        "4096",
        "--ops",
    ]
    d = run_json(capsys, args)
    ops, nmb = d["ops"], 128 / (d["layout"]["dp"] * d["layout"]["mbs"])
    gemm = sum(
        L["count"]
        * (
            sum(g["forward_s"] + g["backward_s"] for g in L["gemms"])
            + sum(x["forward_s"] + x["backward_s"] for x in L["fixed"])
        )
        for L in ops["layers"]
    )
    assert gemm * nmb == pytest.approx(d["breakdown_s"]["gemm"], rel=1e-9)
    moe = next(L for L in ops["layers"] if L["kind"] == "moe")
    ep = [c for c in moe["collectives"] if c["overlap"] == "ep"]
    assert len(ep) == 1 and ep[0]["group"] == 8 and ep[0]["kind"] in ("all_to_all", "moe_dispatch", "all_gather")
    assert all(c["bytes"] >= 0 and c["group"] >= 1 for c in moe["collectives"])
    # saved tensors: the selective / full recompute modules' bytes are named, and the layer input is kept
    assert any(s["module"] == "input" for s in moe["saved"]) and all(s["bytes"] > 0 for s in moe["saved"])
    # without --ops the document has no op records
    assert "ops" not in run_json(capsys, args[:-1])
