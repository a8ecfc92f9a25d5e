"""What limits a predicted run and what would speed it up, read from its step breakdown (core/predict.py
BREAKDOWN, the one vocabulary of the terms): the overlap assumption that hides each communication's raw time
(predict's breakdown table)."""

from __future__ import annotations

from perfmodel.core.software import Software

# the stack switch and calibrated share that hide each communication kind (perfmodel/core/software.py)
HIDDEN_BY = {
    "tp_comm": ("tp_overlap", "tp_share_bwd"),
    "cp_comm": ("cp ring", "cp_share"),
    "ep_comm": ("moe_a2a_overlap", "ep_share"),
    "dp_comm": ("dp overlap", "dp_rs_share"),
    "pp_comm": ("pp p2p", "pp_share"),
}


def hidden_by(term: str, sw: Software | None = None, tp_outside: bool = False) -> str:
    """Which overlap assumption hides a communication term: the stack's switch and the share of the raw time
    it may hide (the stack's feature times the calibrated constant), e.g. 'tp_overlap x0.96'. `tp_outside`:
    the TP group leaves the NVLink domain, where a userbuffers / AsyncTP overlap hides nothing and only the
    NCCL backward launches (tp_bwd_async) hide TP time."""
    if term not in HIDDEN_BY:
        return "-"
    if term == "tp_comm" and tp_outside and sw is not None and sw.tp_overlap_scale_up:
        return "tp_bwd_async (NCCL)" if sw.tp_bwd_async else "-"
    switch, share = HIDDEN_BY[term]
    v = getattr(sw, share, None) if sw is not None else None
    return f"{switch} x{v:.2f}" if v is not None else switch
