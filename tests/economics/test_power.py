"""The drawn-power model (issue 28, economics/power.py): worked cases on the toy GPU computed by hand in the
comments, the cap by the cost model's own clock rule, and properties of every catalog system."""

from __future__ import annotations

import pytest
from toy import toy_consts, toy_hw

from perfmodel.core.predict import BREAKDOWN
from perfmodel.core.software import resolve
from perfmodel.economics import power as pw
from perfmodel.economics.job import Step, job
from perfmodel.errors import InputError
from perfmodel.specs.hardware import Power, apply_overrides, load_hardware
from perfmodel.specs.specfile import data_dir

CATALOG = sorted(p.stem for p in data_dir("hardware").glob("*.toml"))


def toy_power(**kw):
    """The toy GPU (TDP 700 W) with round drawn-power levels: idle 50, wait 100, memory-bound 400 W; host 200
    and cooling 50 W per GPU; 80% AC to DC; rated 1,500 W per GPU all-in."""
    p = dict(
        gpu_tdp_w=700,
        allin_w_per_gpu=1500,
        idle_w=50,
        wait_w=100,
        memory_bound_w=400,
        host_w_per_gpu=200,
        cooling_w_per_gpu=50,
        conversion_efficiency=0.8,
    )
    return toy_hw().model_copy(update={"power": Power(**{**p, **kw})})


# a 10 s step: 7 s tensor work, 1 s memory-bound, 0.5 s exposed TP, 0.5 s bubble | 0.5 s DP, 0.25 s optimizer,
# 0.25 s overhead
STEP = {
    "gemm": 6.0,
    "attention": 1.0,
    "memory_bound": 1.0,
    "tp_comm": 0.5,
    "pipeline_bubble": 0.5,
    "dp_comm": 0.5,
    "optimizer": 0.25,
    "step_overhead": 0.25,
}


def test_every_breakdown_term_has_a_phase():
    assert set(pw.TERM_PHASE) == set(BREAKDOWN)
    assert set(ph for ph, _ in pw.TERM_PHASE.values()) == set(pw.PHASES)


def test_step_power_worked_case():
    """Energy per GPU: 7 x 700 + 1 x 400 + 0.5 x 100 + 0.5 x 100 + 0.5 x 100 + 0.25 x 400 + 0.25 x 100 = 5,575 J
    over 10 s = 557.5 W. Body 5,400 J / 9 s = 600 W; tail (DP, optimizer, overhead) 175 J / 1 s = 175 W."""
    sp = pw.step_power(pw.levels(toy_power()), STEP)
    assert sp.step_s == pytest.approx(10.0)
    assert sp.gpu_avg_w == pytest.approx(557.5)
    assert (sp.body_w, sp.tail_w, sp.gpu_peak_w) == pytest.approx((600.0, 175.0, 700.0))
    assert sp.seconds("compute") == 7.0 and sp.seconds("bubble") == 0.5


def test_node_cluster_site_worked_case():
    """Per GPU at the wall: (557.5 + 200 + 50) / 0.8 = 1,009.375 W; node of 8 = 8,075 W (rated 8 x 1,500 =
    12,000: 0.673); node peak 8 x (700 + 250) / 0.8 = 9,500 W. 64 GPUs + 100 W network each: 64 x 1,109.375 =
    71,000 W; body 64 x ((600 + 250) / 0.8 + 100) = 74,400 W, tail 64 x ((175 + 250) / 0.8 + 100) = 40,400 W:
    swing 34,000 W; checkpoint write 64 x ((100 + 250) / 0.8 + 100) = 34,400 W: swing 40,000 W. Site x 1.25 =
    88,750 W."""
    hw = toy_power()
    lv = pw.levels(hw)
    d = pw.draw(pw.step_power(lv, STEP), lv, hw, 64, 100.0, 1.25, checkpoint_s=5.0, checkpoint_interval_s=600.0)
    assert d.node_avg_w == pytest.approx(8075.0)
    assert d.node_peak_w == pytest.approx(9500.0)
    assert d.share_of_rating == pytest.approx(8075.0 / 12000.0)
    assert d.cluster_avg_w == pytest.approx(71000.0)
    assert (d.cluster_peak_w, d.cluster_trough_w, d.swing_w) == pytest.approx((74400.0, 40400.0, 34000.0))
    assert (d.checkpoint_w, d.checkpoint_swing_w) == pytest.approx((34400.0, 40000.0))
    assert (d.site_avg_w, d.site_swing_w) == pytest.approx((88750.0, 42500.0))
    assert d.cluster_rated_w == pytest.approx(64 * 1600.0)
    ck = d.timeline[-1]
    assert ck["phase"] == "checkpoint_write" and ck["seconds"] == 5.0 and ck["gpu_w"] == 100.0


def test_power_cap_by_the_cost_models_clock_rule():
    """A 350 W limit on a 700 W part: clock (350 / 700)^(1/3) = 0.794 (core/software.py), power 700 x 0.794^3 =
    350 W; memory-bound 400 W is capped at 350 W too, waiting 100 W is not."""
    hw = toy_power()
    assert pw.clock_factor(700, 350) == pytest.approx(0.5 ** (1 / 3))
    capped = apply_overrides(hw, ["power_limit_w=350"])  # a site fact: the hardware's power.power_limit_w
    sw = resolve(None, (), "toy-dense", False, capped, "bf16", toy_consts())
    assert sw.power_factor == pytest.approx(pw.clock_factor(700, 350))
    lv = pw.levels(hw, 350)
    assert (lv.tensor_w, lv.memory_w, lv.wait_w) == pytest.approx((350.0, 350.0, 100.0))
    assert pw.levels(hw, 2000).tensor_w == 700  # a limit above the TDP changes nothing
    assert pw.levels(hw, 2000).limit_w is None


def test_drawn_energy_of_a_job_worked_case():
    """tokens/s/GPU 1,000 on 64 toy GPUs: drawn site W per GPU = ((557.5 + 250) / 0.8 + network 100) x PUE."""
    hw = toy_power().model_copy(update={"cost": None})
    j = job(hw, 1e9, 1000.0, 1e12, 64, require_price=False, step=Step(STEP))
    pue, net = j.tco.inputs.pue, j.tco.inputs.network_storage_w_per_gpu
    site = ((557.5 + 250) / 0.8 + net) * pue
    assert j.energy_drawn.nominal["joules_per_token"] == pytest.approx(site / 1000.0)
    assert j.energy_drawn.nominal["mwh"] == pytest.approx(site / 1000.0 * 1e12 / 3.6e9)
    assert j.energy_rated.nominal["joules_per_token"] == pytest.approx(j.nominal.joules_per_token)
    assert j.energy_rated.after_reliability["energy_j"] == pytest.approx(j.after_reliability.energy_j)
    price = j.tco.inputs.electricity_usd_per_kwh
    assert j.energy_drawn.nominal["electricity_usd"] == pytest.approx(
        j.energy_drawn.nominal["energy_j"] / 3.6e6 * price
    )
    d = j.to_dict()
    assert d["power"]["method"] == "drawn" and d["energy"]["drawn"]["method"] == "drawn"
    # no step: rated only, said so
    r = job(hw, 1e9, 1000.0, 1e12, 64, require_price=False).to_dict()
    assert r["power"]["method"] == "rated" and r["energy"]["drawn"] is None and "predicted step" in r["power"]["note"]


def test_bad_power_input(tmp_path):
    h100 = load_hardware("h100-sxm")
    with pytest.raises(InputError, match="wait_w"):
        apply_overrides(h100, ["power.wait_w=900"])  # above memory_bound_w 560 W
    with pytest.raises(InputError, match="conversion_efficiency"):
        apply_overrides(h100, ["power.conversion_efficiency=1.5"])
    text = (data_dir("hardware") / "h100-sxm.toml").read_text()
    f = tmp_path / "partial.toml"
    f.write_text("\n".join(line for line in text.splitlines() if not line.startswith("idle_w")))
    with pytest.raises(InputError, match="all given or none: missing idle_w"):
        load_hardware(str(f))
    with pytest.raises(InputError, match="drawn-power fields"):
        pw.levels(toy_hw())
    with pytest.raises(InputError, match="gemm_time"):
        pw.step_power(pw.levels(toy_power()), {"gemm_time": 1.0})
    with pytest.raises(InputError, match="gemm"):
        pw.step_power(pw.levels(toy_power()), {"gemm": -1.0})
    with pytest.raises(InputError, match="power_limit_w"):
        pw.levels(toy_power(), 0.0)


@pytest.mark.parametrize("hid", CATALOG)
def test_every_catalog_gpu_has_sourced_drawn_power_below_its_rating(hid):
    """Every catalog system carries the drawn fields with their sources, and its node at the cap (every GPU at
    its TDP) draws at most its rating: the rated method bounds the drawn one."""
    hw = load_hardware(hid)
    assert hw.power.drawn
    for k in ("idle_w", "wait_w", "memory_bound_w", "host_w_per_gpu", "cooling_w_per_gpu", "conversion_efficiency"):
        assert len(hw.sources.get(f"power.{k}", "")) > 20, k
    lv = pw.levels(hw)
    assert lv.node_w(hw.power.gpu_tdp_w) <= hw.power.allin_w_per_gpu


# ---- the commands' JSON ------------------------------------------------------------------------------------

POWER_KEYS = ("gpu_avg_w", "node_avg_w", "node_peak_w", "cluster_avg_w", "method")
ENERGY_KEYS = ("joules_per_token", "mwh", "household_years", "electricity_usd")
L8 = ["--model", "llama3-8b", "--gpus", "16", "--gbs", "32", "--seq", "8192"]


def _check(d: dict) -> None:
    p, e = d["power"], d["energy"]
    for k in POWER_KEYS:
        assert k in p, k
    assert p["method"] == "drawn"
    assert 0 < p["gpu_avg_w"] <= p["gpu_peak_w"] and p["node_avg_w"] <= p["node_peak_w"] <= p["node_rated_w"]
    assert p["cluster_trough_w"] <= p["cluster_avg_w"] * (1 + 1e-9) and p["swing_w"] >= 0
    for method in ("drawn", "rated"):
        for k in ENERGY_KEYS:
            for when in ("_nominal", "_after_reliability"):
                assert e[method][k + when] > 0, (method, k, when)
    # the rated method (all-in rating) bounds the drawn one
    assert e["drawn"]["joules_per_token_nominal"] < e["rated"]["joules_per_token_nominal"]


def test_predict_json_power_and_timeline(capsys):
    import cli_helpers

    d = cli_helpers.run_json(capsys, ["predict", *L8, "--hardware", "h100-sxm", "--tp", "2"])
    _check(d)
    phases = [t["phase"] for t in d["power"]["timeline"]]
    assert phases == [*pw.PHASES, "checkpoint_write"]
    assert sum(t["seconds"] for t in d["power"]["timeline"][:-1]) == pytest.approx(d["step_time_s"])
    assert d["energy"]["tokens"] == 1e12


def test_cost_compare_size_json_power(capsys):
    import cli_helpers

    c = cli_helpers.run_json(capsys, ["cost", *L8, "--hardware", "h100-sxm", "--tp", "2", "--tokens", "1e11"])
    _check(c)
    # the rated figures are the run cost's own (the report's method)
    assert c["energy"]["rated"]["mwh_after_reliability"] == pytest.approx(c["mwh_after_reliability"])
    cmp = cli_helpers.run_json(
        capsys, ["compare", *L8, "--hardware", "h100-sxm", "--hardware", "gb200-nvl72", "--no-planner", "--tp", "2"]
    )
    for o in cmp["systems"]:
        _check(o)
    s = cli_helpers.run_json(
        capsys, ["size", "--model", "llama3-8b", "--tokens", "1e11", "--gpus", "16", "--hardware", "h100-sxm"]
    )
    _check(s[0])


def test_nvl72_hot_spares_draw_idle_power():
    """GB200 NVL72 (tensor 1,200, memory-bound 842, wait 243 W; host 200 W; 0.978; network 100 W, PUE 1.20) on
    the 10 s STEP: 7 x 1,200 + 842 + 1.5 x 243 + 0.25 x 842 + 0.25 x 243 = 9,877.75 J -> 987.775 W; site
    ((987.775 + 200) / 0.978 + 100) x 1.2 = 1,577.39 W per GPU. The 8 hot spares of 64 training GPUs are powered
    at idle: ((170 + 200) / 0.978 + 100) x 1.2 = 573.99 W each, so after reliability the drawn energy grows by
    1 + 0.125 x 573.99 / 1,577.39 = 1.0455 (then / goodput), the rated by 72 / 64."""
    gb = load_hardware("gb200-nvl72")
    j = job(gb, 400e9, 1000.0, 1e12, 512, step=Step(STEP))
    d = j.energy_drawn
    assert d.site_w_per_gpu == pytest.approx(1577.39, abs=0.01)
    g = j.reliability.goodput_fraction
    ratio = d.after_reliability["joules_per_token"] / d.nominal["joules_per_token"]
    assert ratio * g == pytest.approx(1 + 0.125 * 573.99 / 1577.39, rel=1e-5)
    r = j.energy_rated
    assert r.after_reliability["joules_per_token"] / r.nominal["joules_per_token"] * g == pytest.approx(72 / 64)
    none = job(gb, 400e9, 1000.0, 1e12, 512, rel_over={"count_hot_spares": False}, step=Step(STEP)).energy_drawn
    assert none.after_reliability["joules_per_token"] * g == pytest.approx(none.nominal["joules_per_token"], rel=1e-3)


def test_power_bad_input_cli(capsys):
    from cli_helpers import run_err

    args = ["predict", *L8, "--hardware", "h100-sxm", "--tp", "2"]
    assert "--tokens" in run_err(capsys, [*args, "--tokens", "-1"])
    assert "power.conversion_efficiency" in run_err(capsys, [*args, "--set", "power.conversion_efficiency=0.3"])
    assert "wait_w" in run_err(capsys, [*args, "--set", "power.wait_w=650"])
    assert "power_limit_w: must be more than 0" in run_err(capsys, [*args, "--set", "power_limit_w=0"])
    # no longer a stack feature: the message says where a cap belongs
    assert "--set power_limit_w" in run_err(capsys, [*args, "--stack-set", "power_limit_w=500"])
    cost = ["cost", *L8, "--hardware", "h100-sxm", "--tp", "2", "--tokens", "1e12"]
    assert "restart_s_low" in run_err(capsys, [*cost, "--set", "restart_s_low=900"])
