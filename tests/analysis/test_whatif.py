"""What-if hardware: `base =` spec files, --set overrides, and `perfmodel sensitivity` (elasticities, sweeps).
Properties only: inheritance changes exactly the overridden fields, more bandwidth / a larger NVLink domain is
never slower, latency never helps, and the CLI answers bad keys with one line naming a close match."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_err, run_json

from perfmodel.analysis.sensitivity import knobs, sensitivity, sweep
from perfmodel.api import load_model
from perfmodel.cli import cli, main
from perfmodel.core.calibration import constants
from perfmodel.core.predict import Options, predict_grid
from perfmodel.errors import InputError
from perfmodel.specs.hardware import HardwareSpec, apply_overrides, load_hardware, resolve_hardware, split_hardware_sets
from perfmodel.specs.layout import Layout, LayoutGrid

# DeepSeek-V3 with an EP group of 128: wider than one NVL72 rack, so the all-to-all crosses the NICs
MOE = Layout(gpus=1024, gbs=2048, seq=4096, pp=8, ep=128, recompute="full")
MOE_ARGS = [
    "--model",
    "deepseek-v3",
    "--gpus",
    "1024",
    "--pp",
    "8",
    "--ep",
    "128",
    "--gbs",
    "2048",
    "--seq",
    "4096",
    "--recompute",
    "full",
    "--precision",
    "fp8",
]
# a dense model across HGX nodes: TP in the node, PP and DP over the network
DENSE = Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=2, recompute="selective")
_SKIP = {"id", "name", "notes", "path", "sources", "overridden", "base", "notes_of"}


def flat(hw: HardwareSpec) -> dict[str, object]:
    out: dict[str, object] = {}

    def walk(obj: object, prefix: str) -> None:
        if isinstance(obj, dict) and prefix.split(".")[0] != "measured":
            for k, v in obj.items():
                walk(v, f"{prefix}.{k}" if prefix else k)
        else:
            out[prefix] = obj

    walk({k: v for k, v in hw.model_dump().items() if k not in _SKIP}, "")
    return out


def step(model: str, hw: HardwareSpec, lay: Layout, precision: str = "fp8") -> float:
    return float(predict_grid(load_model(model), hw, LayoutGrid.of(lay), Options(precision)).step_time_s[0])


# ---- base = inheritance ------------------------------------------------------------------------


def test_base_file_differs_only_in_overridden_fields(tmp_path: Path):
    f = tmp_path / "nvl144-hbm.toml"
    f.write_text(
        'base = "gb200-nvl72"\n[scale_up]\ndomain_size = 144\n'
        '[memory]\nhbm_bytes = { value = 288e9, source = "hypothetical 12-high HBM3e" }\n'
    )
    base, hw = load_hardware("gb200-nvl72"), load_hardware(str(f))
    assert hw.id == "nvl144-hbm" and hw.display_name() != base.display_name() == base.name
    assert set(hw.overridden) == {"scale_up.domain_size", "memory.hbm_bytes"}
    a, b = flat(base), flat(hw)
    assert a.keys() == b.keys()
    # besides the overrides, only the device-reported capacity, which keeps the base's usable share
    assert {k for k in a if a[k] != b[k]} == set(hw.overridden) | {"memory.device_bytes"}
    assert hw.scale_up.domain_size == 144 and hw.memory.hbm_bytes == 288e9
    share = base.memory.device_bytes / base.memory.hbm_bytes
    assert (
        hw.memory.capacity == pytest.approx(288e9 * share, rel=1e-12) and "share" in hw.sources["memory.device_bytes"]
    )
    assert hw.sources["memory.hbm_bytes"] == "hypothetical 12-high HBM3e"
    assert "nvl144-hbm.toml" in hw.sources["scale_up.domain_size"]
    assert hw.sources["scale_up.bandwidth"] == base.sources["scale_up.bandwidth"]  # inherited source


def test_base_chain_relative_path_and_own_id(tmp_path: Path):
    (tmp_path / "a.toml").write_text('base = "h100-sxm"\n[scale_out]\nbandwidth = 100e9\n')
    (tmp_path / "b.toml").write_text('base = "a.toml"\nid = "my-h100"\n[memory]\nhbm_bytes = 141e9\n')
    hw = load_hardware(str(tmp_path / "b.toml"))
    assert hw.id == "my-h100"
    assert set(hw.overridden) == {"scale_out.bandwidth", "memory.hbm_bytes"}
    assert "a.toml" in hw.sources["scale_out.bandwidth"] and "b.toml" in hw.sources["memory.hbm_bytes"]


def test_whatif_names_and_notes_say_they_are_the_base_s(tmp_path: Path, capsys):
    """A 144-GPU what-if of GB200 NVL72 printed the base's name and notes ("One NVLink domain of 72 GPUs") as
    its own: its name now says what-if of which system and what changed, and the inherited notes are shown as
    the base system's. Catalog specs print as before."""
    f = tmp_path / "nvl144.toml"
    f.write_text('base = "gb200-nvl72"\n[scale_up]\ndomain_size = 144\n')
    base, hw = load_hardware("gb200-nvl72"), load_hardware(str(f))
    assert hw.display_name() == f"{base.name} — what-if of gb200-nvl72: scale_up.domain_size=144"
    assert hw.display_name(changes=False) == f"{base.name} — what-if of gb200-nvl72"
    assert (hw.base, hw.notes_of, hw.notes) == ("gb200-nvl72", "gb200-nvl72", base.notes)
    assert (base.display_name(), base.base, base.notes_of) == (base.name, "", "")
    d = run_json(capsys, ["show", "hardware", str(f)])
    assert d["name"] == hw.display_name() and (d["base"], d["notes_of"]) == ("gb200-nvl72", "gb200-nvl72")
    assert next(r for r in d["fields"] if r["field"] == "name")["value"] == hw.display_name()
    cat = run_json(capsys, ["show", "hardware", "gb200-nvl72"])
    assert cat["name"] == base.name and "base" not in cat and "notes_of" not in cat
    assert main(["show", "hardware", str(f)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # unwrap the console's line breaks
    assert "what-if of gb200-nvl72" in out and "in this what-if of gb200-nvl72: scale_up.domain_size=144" in out
    assert "notes of the base system gb200-nvl72" in out and "notes: " not in out
    assert main(["show", "hardware", "gb200-nvl72"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert out.startswith(f"{base.name}: gb200-nvl72 (") and "notes: Dense peaks" in out and "what-if" not in out
    assert main(["predict", *MOE_ARGS, "--hardware", str(f)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"on 1024 x {base.name} — what-if of gb200-nvl72, fp8" in out and "scale_up.domain_size = 144" in out


def test_whatif_names_through_set_chains_and_own_text(tmp_path: Path):
    h100 = load_hardware("h100-sxm")
    hw = apply_overrides(h100, ["nic_gbit_s=800", "hbm_gb=141"])
    assert hw.display_name() == (
        f"{h100.name} — what-if of h100-sxm: scale_out.bandwidth=100 GB/s, memory.hbm_bytes=141 GB"
    )
    assert (hw.base, hw.notes_of) == ("h100-sxm", "h100-sxm")
    (tmp_path / "a.toml").write_text('base = "h100-sxm"\n[scale_out]\nbandwidth = 100e9\n')
    (tmp_path / "b.toml").write_text(
        'base = "a.toml"\nname = "H100, 800G NICs, 141 GB"\nnotes = "my own words"\n[memory]\nhbm_bytes = 141e9\n'
    )
    b = load_hardware(str(tmp_path / "b.toml"))
    assert (b.base, b.notes_of, b.notes) == ("h100-sxm", "", "my own words")  # own notes: shown as they are
    assert b.display_name().startswith("H100, 800G NICs, 141 GB — what-if of h100-sxm: scale_out.bandwidth=100 GB/s")
    more = apply_overrides(b, ["nvlink_domain=16"])  # --set on top: same root
    assert more.base == "h100-sxm" and more.notes_of == "b" and more.overridden[-1] == "scale_up.domain_size"
    (tmp_path / "c.toml").write_text('base = "gb200-nvl72"\nnotes_of = "x"\n')
    with pytest.raises(InputError, match="notes_of"):
        load_hardware(str(tmp_path / "c.toml"))


@pytest.mark.parametrize(
    "text, field, hint",
    [
        ('base = "gb200-nvl27"\n', "gb200-nvl27", "gb200-nvl72"),
        ('base = "gb200-nvl72"\n[scale_up]\ndomian_size = 144\n', "scale_up.domian_size", "domain_size"),
        ('base = "gb200-nvl72"\n[scale_up]\ndomain_size = 7\n', "", "divide"),
        ('base = "loop.toml"\n', "base", "base"),
    ],
)
def test_base_file_errors(tmp_path: Path, text: str, field: str, hint: str):
    f = tmp_path / "loop.toml"
    f.write_text(text)
    with pytest.raises(InputError) as exc:
        load_hardware(str(f))
    assert field in str(exc.value) and hint in str(exc.value)


# ---- --set -------------------------------------------------------------------------------------


def test_set_aliases_convert_units_and_record_overrides():
    base = load_hardware("gb200-nvl72")
    hw = apply_overrides(
        base,
        [
            "nvlink_domain=144",
            "nic_gbit_s=800",
            "nvlink_gbyte_s=1800",
            "hbm_gb=288",
            "hbm_tbyte_s=10",
            "peak_flops.bf16=3e15",
        ],
    )
    assert hw.scale_up.domain_size == 144 and hw.scale_out.bandwidth == 100e9 and hw.scale_up.bandwidth == 1.8e12
    assert hw.memory.hbm_bytes == 288e9 and hw.memory.hbm_bandwidth == 10e12 and hw.peak_flops.bf16 == 3e15
    assert set(hw.overridden) == {
        "scale_up.domain_size",
        "scale_out.bandwidth",
        "scale_up.bandwidth",
        "memory.hbm_bytes",
        "memory.hbm_bandwidth",
        "peak_flops.bf16",
    }
    a, b = flat(base), flat(hw)
    assert {k for k in a if a[k] != b[k]} == set(hw.overridden) | {"memory.device_bytes"}
    assert hw.memory.capacity == pytest.approx(288e9 * base.memory.device_bytes / base.memory.hbm_bytes, rel=1e-12)
    assert all(hw.sources[f].startswith("--set ") for f in hw.overridden)
    assert apply_overrides(base, []) is base
    assert resolve_hardware("gb200-nvl72", ("nvlink_domain=144",)).scale_up.domain_size == 144


@pytest.mark.parametrize(
    "item, hint",
    [
        ("nvlink_domian=144", "nvlink_domain"),
        ("scale_up.bandwith=1e12", "scale_up.bandwidth"),
        ("domain_size=144", "scale_up.domain_size"),
    ],
)
def test_set_unknown_key_suggests(item: str, hint: str):
    with pytest.raises(InputError) as exc:
        apply_overrides(load_hardware("h100-sxm"), [item])
    assert f"did you mean '{hint}'" in str(exc.value)


@pytest.mark.parametrize(
    "item",
    [
        "nvlink_domain=0",
        "hbm_gb=lots",
        "scale_out.bandwidth=-1",
        "nic_gbit_s",
        "nic_gbit_s=nan",
        "scale_up.nvls=maybe",
        "scale_up.latency_s=1e9",
        "hbm_gb=1e30",
        "nvlink_domain=1e30",
    ],
)
def test_set_bad_values_are_input_errors(item: str):
    with pytest.raises(InputError):
        apply_overrides(load_hardware("h100-sxm"), [item])


def test_set_on_the_cli(capsys):
    line = run_err(capsys, ["predict", *MOE_ARGS, "--hardware", "gb200-nvl72", "--set", "nvlink_domian=144"])
    assert "did you mean 'nvlink_domain'" in line
    d = run_json(capsys, ["show", "hardware", "gb200-nvl72", "--set", "nvlink_domain=144"])
    marked = {f["field"] for f in d["fields"] if f["overridden"]}
    assert marked == {"scale_up.domain_size"} == set(d["overridden"])
    base = run_json(capsys, ["predict", *MOE_ARGS, "--hardware", "gb200-nvl72"])
    big = run_json(capsys, ["predict", *MOE_ARGS, "--hardware", "gb200-nvl72", "--set", "nvlink_domain=144"])
    assert big["hardware_overridden"] == ["scale_up.domain_size"] and base["hardware_overridden"] == []
    assert big["step_time_s"] <= base["step_time_s"]


def test_one_set_option_per_command():
    for cmd in cli.commands.values():
        assert sum("--set" in p.opts for p in cmd.params) <= 1, cmd.name


def test_split_hardware_sets():
    hw, rest = split_hardware_sets(["nic_gbit_s=800", "electricity_usd_per_kwh=0.1", "memory.hbm_bytes=1e11"])
    assert hw == ["nic_gbit_s=800", "memory.hbm_bytes=1e11"] and rest == ["electricity_usd_per_kwh=0.1"]


# ---- monotonicity and elasticities --------------------------------------------------------------


def test_larger_nvlink_domain_never_slower_for_wide_ep():
    base = load_hardware("gb200-nvl72")
    steps = [step("deepseek-v3", apply_overrides(base, [f"nvlink_domain={d}"]), MOE) for d in (8, 16, 36, 72, 144, 288)]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(steps, steps[1:])), steps
    assert steps[-2] <= step("deepseek-v3", base, MOE)


@pytest.mark.parametrize(
    "model, hw_id, lay, precision",
    [
        ("deepseek-v3", "gb200-nvl72", MOE, "fp8"),
        ("llama3-70b", "h100-sxm", DENSE, "bf16"),
    ],
)
def test_elasticity_signs(model: str, hw_id: str, lay: Layout, precision: str):
    s = sensitivity(load_model(model), load_hardware(hw_id), lay, Options(precision, consts=constants()))
    mags = [abs(e.elasticity) for e in s.ranked]
    assert mags == sorted(mags, reverse=True)
    fields = {e.field for e in s.ranked}
    assert fields == {k.field for k in knobs(precision)} | {"scale_up.domain_size"}
    for e in s.ranked:
        if "latency" in e.field:
            assert e.elasticity >= -1e-9, e  # more latency never faster
        else:
            assert e.elasticity <= 1e-9, e  # more FLOP/s, bandwidth or domain never slower
            assert e.step_high_s <= e.step_low_s * (1 + 1e-12)


def test_more_bandwidth_never_slower_sweep():
    sw = sweep(
        load_model("deepseek-v3"),
        load_hardware("gb200-nvl72"),
        MOE,
        Options("fp8"),
        ["nic_gbit_s=200,400,800,1600", "nvlink_gbyte_s=450,900"],
    )
    m = sw.matrix()
    for col in range(2):
        assert all(m[i + 1][col] >= m[i][col] for i in range(3))
    assert all(r[1] >= r[0] for r in m)


# ---- the command -------------------------------------------------------------------------------


def test_sensitivity_json(capsys):
    d = run_json(capsys, ["sensitivity", *MOE_ARGS, "--hardware", "gb200-nvl72"])
    assert {
        "model",
        "hardware",
        "base",
        "rel_step",
        "elasticities",
        "hbm_capacity",
        "cost_elasticities",
        "usd_per_gpu_hour",
    } <= d.keys()
    assert {
        "field",
        "label",
        "value",
        "elasticity",
        "step_low_s",
        "step_high_s",
        "change_high",
        "arc",
        "method",
        "cost_elasticity",
    } <= d["elasticities"][0].keys()
    assert {"field", "label", "cost_elasticity", "method"} <= d["cost_elasticities"][0].keys()
    assert {"fits", "fits_minus", "fits_plus", "memory_bytes_per_gpu"} <= d["hbm_capacity"].keys()
    assert main(["sensitivity", *MOE_ARGS, "--hardware", "gb200-nvl72"]) == 0
    assert "step time" in capsys.readouterr().out


def test_sensitivity_sweep_json_and_plot(capsys, tmp_path: Path):
    png = tmp_path / "heat.png"
    d = run_json(
        capsys,
        [
            "sensitivity",
            *MOE_ARGS,
            "--hardware",
            "gb200-nvl72",
            "--sweep",
            "nvlink_domain=36,72,144",
            "--sweep",
            "nic_gbit_s=400,800",
            "--plot",
            str(png),
        ],
    )
    assert [a["field"] for a in d["axes"]] == ["nvlink_domain", "nic_gbit_s"]
    assert len(d["cells"]) == 6 and [len(r) for r in d["tokens_per_s_per_gpu"]] == [2, 2, 2]
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert main(["sensitivity", *MOE_ARGS, "--hardware", "gb200-nvl72", "--sweep", "hbm_gb=80,186"]) == 0
    assert "hbm_gb=80" in capsys.readouterr().out


def test_effect_percent_keeps_its_sign():
    from perfmodel.render.sensitivity import signed_percent

    assert [signed_percent(c) for c in (-0.0668, -0.0085, 0.000989, -0.000316, -0.0000499, 0.0000178, 0.0, 0.012)] == [
        "-6.7%",
        "-0.9%",
        "+0.10%",
        "-0.03%",
        "-<0.01%",
        "+<0.01%",
        "0.0%",
        "+1.2%",
    ]


def test_sensitivity_table_never_prints_a_negative_effect_as_plus(capsys, monkeypatch):
    """A -0.03% step-time change (NIC bandwidth, elasticity -0.003) read '+0.0%' when the effect was rounded
    to 0.1%; the text now carries the sign of the JSON change_high, which the fix left as it was."""
    args = [
        "sensitivity",
        "--model",
        "llama3-70b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "64",
        "--tp",
        "8",
        "--pp",
        "4",
        "--vp",
        "5",
        "--gbs",
        "128",
        "--seq",
        "8192",
    ]
    d = run_json(capsys, args)
    from perfmodel.render import console

    monkeypatch.setattr(console, "_width", 120)  # one table row per knob
    assert main([*args]) == 0
    out = capsys.readouterr().out
    nic = next(e for e in d["elasticities"] if e["field"] == "scale_out.bandwidth")
    assert -0.0005 < nic["change_high"] < 0
    assert "+10% NIC bandwidth -> -0.03% step time" in out
    assert "+0.0%" not in out and "-0.0%" not in out
    from perfmodel.render.sensitivity import signed_percent

    for e in d["elasticities"]:
        shown = signed_percent(e["change_high"])
        assert shown[0] == ("-" if e["change_high"] < 0 else "+") and f"-> {shown} step time" in out, e


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--sweep", "nvlnk_domain=8,16"], "did you mean 'nvlink_domain'"),
        (["--sweep", "nic_gbit_s"], "FIELD=V1,V2"),
        (["--sweep", "a=1", "--sweep", "b=2", "--sweep", "c=3"], "one or two"),
        (["--plot", "x.png"], "needs --sweep"),
    ],
)
def test_sensitivity_bad_input(capsys, extra: list[str], needle: str):
    assert needle in run_err(capsys, ["sensitivity", *MOE_ARGS, "--hardware", "gb200-nvl72", *extra])


# ---- --set on every command that takes --hardware ----------------------------------------------------

SMALL = ["--model", "llama3-8b", "--gpus", "8", "--gbs", "8", "--seq", "4096"]
WITH_HARDWARE = {  # command -> arguments before --hardware; JSON path to the list of overridden fields
    "predict": (["predict", *SMALL], lambda d: d["hardware_overridden"]),
    "search": (["search", *SMALL, "--top", "1"], lambda d: d["hardware_overridden"]),
    "sensitivity": (["sensitivity", *SMALL], lambda d: d["hardware_overridden"]),
    "scaling": (["scaling", *SMALL, "--gpus", "8,16", "--no-measured"], lambda d: d["hardware_overridden"]),
    "tco": (["tco"], lambda d: d["hardware_overridden"]),
    "cost": (["cost", *SMALL, "--tokens", "1e12"], lambda d: d["hardware_overridden"]),
    "compare": (["compare", *SMALL, "--no-planner"], lambda d: d["systems"][0]["hardware_overridden"]),
    "size": (
        ["size", "--model", "llama3-8b", "--tokens", "1e12", "--gpus", "8"],
        lambda d: d[0]["hardware_overridden"],
    ),
    "show": (["show", "hardware"], lambda d: d["overridden"]),
    "report": (["report", "--out", "unused"], None),  # ~2 s to build: only the bad key is run here
    "check": (
        ["check", str(Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "megatron-llama3-70b-h100.log")],
        lambda d: d["hardware_overridden"],
    ),
}
NOT_A_SPEC = {"releases"}  # --hardware filters measured rows by catalog id there; no spec to change


def test_every_command_with_hardware_takes_set():
    for name, cmd in cli.commands.items():
        opts = {o for p in cmd.params for o in p.opts}
        if "--hardware" in opts and name not in NOT_A_SPEC:
            assert "--set" in opts and name in WITH_HARDWARE, name


@pytest.mark.parametrize("name", list(WITH_HARDWARE))
def test_set_works_on_every_command(capsys, name):
    args, overridden = WITH_HARDWARE[name]
    hw = ["h100-sxm"] if name == "show" else ["--hardware", "h100-sxm"]
    line = run_err(capsys, [*args, *hw, "--set", "nic_gbs=800"])
    assert "did you mean 'nic_gbit_s'" in line
    if overridden is not None:
        d = run_json(capsys, [*args, *hw, "--set", "nic_gbit_s=800", "--set", "hbm_gb=141"])
        assert set(overridden(d)) == {"scale_out.bandwidth", "memory.hbm_bytes"}


def test_report_set_is_validated_before_building(capsys, tmp_path: Path):
    """The report's main system takes --set (ReportConfig.hardware_sets, shown in report.json and the page
    header); a bad value is one line before any figure is drawn."""
    from perfmodel.report import ReportConfig

    assert "hardware_sets" in ReportConfig.__dataclass_fields__
    bad = run_err(capsys, ["report", "--out", str(tmp_path), "--hardware", "h100-sxm", "--set", "hbm_gb=-1"])
    assert "hbm_gb: must be at least 0.1 (GB per GPU; got -1)" in bad


# ---- how elasticities are obtained; cost per token ----------------------------------------------------


def test_local_derivative_and_kink_detection():
    from perfmodel.analysis.sensitivity import _local

    e, smooth = _local(lambda v: 3.0 / v + 1.0, 2.0, 2.5)  # s = 3/x + 1: d ln s / d ln x = -1.5 / 2.5
    assert smooth and e == pytest.approx(-0.6, abs=1e-9)
    _, smooth = _local(lambda v: max(1.0 / v, 0.5), 2.0, 0.5)  # a kink exactly at x = 2
    assert not smooth


def test_elasticity_is_the_derivative_where_the_model_is_smooth():
    import math

    m, hw = load_model("llama3-70b"), load_hardware("h100-sxm")
    s = sensitivity(m, hw, DENSE, Options("bf16", consts=constants()))
    grid = LayoutGrid.of(DENSE)
    for e in s.ranked:
        if e.method != "derivative" or e.value == 0:
            continue
        h = 1e-4  # an independent central difference, 100x the step
        up = predict_grid(
            m, apply_overrides(hw, [f"{e.field}={e.value * (1 + h)!r}"]), grid, Options("bf16")
        ).step_time_s[0]
        dn = predict_grid(
            m, apply_overrides(hw, [f"{e.field}={e.value * (1 - h)!r}"]), grid, Options("bf16")
        ).step_time_s[0]
        assert e.elasticity == pytest.approx(math.log(up / dn) / (math.log1p(h) - math.log1p(-h)), abs=1e-6), e
    assert {e.method for e in s.ranked} <= {"derivative", "finite difference", "discrete step"}


def test_cost_elasticities_price_power_and_performance():
    import math

    from perfmodel.economics.tco import tco_for

    hw = load_hardware("h100-sxm")
    s = sensitivity(load_model("llama3-70b"), hw, DENSE, Options("bf16", consts=constants()))
    by = {c["field"]: c["cost_elasticity"] for c in s.cost}
    for e in s.ranked:  # $/GPU-h does not move with performance: cost/token moves as the step
        assert by[e.field] == e.elasticity == e.cost_elasticity
    price, power = by["cost.allin_capex_usd"], by["power.allin_w_per_gpu"]
    assert 0 < power < price < 1 and price + power < 1
    mags = [abs(c["cost_elasticity"]) for c in s.cost]
    assert mags == sorted(mags, reverse=True)
    t0, h = tco_for(hw).usd_per_gpu_hour, 1e-6  # exact: $/GPU-h is linear in the price and in the power
    assert hw.cost is not None
    for field, value, share in (
        ("cost.allin_capex_usd", hw.cost.allin_capex_usd, price),
        ("power.allin_w_per_gpu", hw.power.allin_w_per_gpu, power),
    ):
        t1 = tco_for(apply_overrides(hw, [f"{field}={value * (1 + h)!r}"])).usd_per_gpu_hour
        assert math.log(t1 / t0) / math.log1p(h) == pytest.approx(share, rel=1e-5)
    unpriced = sensitivity(
        load_model("llama3-8b"), load_hardware("b200"), Layout(gpus=8, gbs=8, seq=4096), Options("bf16")
    )
    assert unpriced.cost == [] and all(e.cost_elasticity is None for e in unpriced.ranked)
