"""perfmodel scaling: weak keeps the per-GPU batch, strong keeps the global batch, strong scaling of a fixed
layout never gains tokens/s/GPU, goodput falls with size, the plot is written, 100,000 GPUs work."""

from __future__ import annotations

import pytest
from cli_helpers import run_err, run_json

from perfmodel.analysis.scaling import global_batch, parse_gpu_list, scaling
from perfmodel.core.predict import Options
from perfmodel.errors import InputError
from perfmodel.specs.hardware import load_hardware
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import load_model

L70 = [
    "--model",
    "llama3-70b",
    "--hardware",
    "h100-sxm",
    "--seq",
    "8192",
    "--tp",
    "4",
    "--pp",
    "4",
    "--vp",
    "5",
    "--cp",
    "2",
]


def test_gpu_list_parsing():
    assert parse_gpu_list("64,128,...,1024") == [64, 128, 256, 512, 1024]
    assert parse_gpu_list("8,16,24,...,48") == [8, 16, 24, 32, 40, 48]
    assert parse_gpu_list("2048, 64,128") == [64, 128, 2048]
    assert parse_gpu_list("100000") == [100000]
    for bad in ("", "abc", "0", "64,...", "128,64,...,8", str(10**8)):
        with pytest.raises(InputError):
            parse_gpu_list(bad)


def test_global_batch_rules():
    assert global_batch("weak", 128, 64, 2048) == 4096
    assert global_batch("strong", 128, 64, 2048) == 128
    assert global_batch("weak", 252, 576, 1000) is None  # not a whole number of sequences


def test_weak_keeps_per_gpu_batch_and_layout(capsys):
    d = run_json(capsys, ["scaling", *L70, "--gpus", "64,128,...,2048", "--gbs", "128", "--mode", "weak"])
    pts = d["points"]
    assert [p["gpus"] for p in pts] == [64, 128, 256, 512, 1024, 2048]
    for p in pts:
        assert p["ok"]
        L = p["layout"]
        assert p["gbs"] / p["gpus"] == 128 / 64  # sequences per GPU held
        assert (L["tp"], L["pp"], L["vp"], L["cp"]) == (4, 4, 5, 2)
        assert L["dp"] == p["gpus"] // (4 * 4 * 2)
        assert p["joules_per_token_nominal"] > 0 and p["usd_per_million_tokens_nominal"] > 0
    # failures grow with the job: goodput falls as GPUs are added
    good = [p["goodput_fraction"] for p in pts]
    assert all(a > b for a, b in zip(good, good[1:]))
    assert all(p["goodput_tokens_per_s_per_gpu"] < p["tokens_per_s_per_gpu"] for p in pts)
    # the report's shape: flat within a few percent from 64 to 2,048 GPUs (BF16 54.5% -> 53.7% measured)
    assert pts[-1]["tokens_per_s_per_gpu"] / pts[0]["tokens_per_s_per_gpu"] > 0.95
    # measured DGXC rows of this very layout are attached
    assert any(m["run_id"].startswith("dgxc241101-l3-70b-h100-64-bf16") for m in pts[0]["measured"])


def test_strong_keeps_gbs_and_never_gains():
    m, hw = load_model("gpt3-175b"), load_hardware("h100-sxm")
    base = Layout(gpus=128, gbs=512, seq=2048, tp=4, pp=8, vp=12)
    res = scaling(m, hw, [128, 256, 512, 1024, 2048], "strong", base, Options("bf16"))
    ok = [p for p in res.points if p.ok]
    assert len(ok) == 5
    assert all(p.gbs == 512 for p in ok)
    tps = [p.tokens_per_s_per_gpu for p in ok]
    assert all(b <= a * (1 + 1e-9) for a, b in zip(tps, tps[1:])), tps
    # fewer micro-batches per replica: the bubble's share of the step grows (Amdahl)
    share = [p.grows_s["pipeline_bubble"] / p.step_time_s for p in ok]
    assert share[-1] > share[0]


def test_strong_scaling_runs_out_of_batch():
    m, hw = load_model("llama3-8b"), load_hardware("h100-sxm")
    res = scaling(m, hw, [8, 16, 32], "strong", Layout(gpus=8, gbs=16, seq=4096, tp=1, pp=1, mbs=1), Options("bf16"))
    assert [p.ok for p in res.points] == [True, True, False]
    assert "global batch" in res.points[-1].reason


def test_plot_written(tmp_path, capsys):
    png = tmp_path / "scaling.png"
    run_json(capsys, ["scaling", *L70, "--gpus", "64,256,1024", "--gbs", "128", "--plot", str(png)])
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    run_err(capsys, ["scaling", *L70, "--gpus", "64", "--gbs", "128", "--plot", str(tmp_path / "x.pdf")])


def test_100k_gpus_with_planner_and_unpriced_hardware(capsys):
    d = run_json(
        capsys,
        [
            "scaling",
            "--model",
            "llama3-70b",
            "--hardware",
            "b200",
            "--gpus",
            "1000,10000,100000",
            "--gbs",
            "2000",
            "--seq",
            "8192",
            "--search",
            "--no-measured",
        ],
    )
    pts = d["points"]
    assert all(p["ok"] for p in pts), [p["reason"] for p in pts]
    assert pts[-1]["gpus"] == 100000 and pts[-1]["gbs"] == 200000
    assert all(p["usd_per_million_tokens_nominal"] is None for p in pts)  # b200 has no sourced price
    assert all(p["joules_per_token_nominal"] > 0 for p in pts)  # energy needs only power
    assert pts[-1]["goodput_fraction"] < pts[0]["goodput_fraction"]
    assert pts[-1]["interruptions_per_day"] > 20  # ~1 per hour at 100k GPUs


def test_fixed_layout_that_does_not_divide_is_reported_per_size(capsys):
    d = run_json(capsys, ["scaling", *L70, "--gpus", "64,100", "--gbs", "128", "--mode", "strong", "--no-measured"])
    assert d["points"][0]["ok"] and not d["points"][1]["ok"]
    assert "multiple of tp * pp * cp" in d["points"][1]["reason"]


def test_bad_input(capsys):
    run_err(capsys, ["scaling", *L70, "--gpus", "64,abc", "--gbs", "128"])
    run_err(capsys, ["scaling", *L70, "--gpus", "64", "--gbs", "128", "--profile", "nope"])
    run_err(
        capsys,
        ["scaling", "--model", "llama3-70x", "--hardware", "h100-sxm", "--gpus", "64", "--gbs", "128", "--seq", "8192"],
    )


@pytest.mark.parametrize(
    "model,seq,gpus,gbs0",
    [
        ("llama3-70b", 8192, [64, 128, 256, 512, 1024, 2048], 128),
        ("llama3.1-405b", 8192, [576, 1152, 2304], 252),
        ("gpt3-175b", 2048, [128, 256, 512, 1024, 2048], 256),
    ],
)
def test_report_weak_scaling_shapes_reproduced(model, seq, gpus, gbs0):
    """The README's reproduction tables (validation/scaling_tables.py): every measured DGXC layout is
    predicted flat from the smallest to the largest size, as measured (Llama 3 70B BF16 54.2% -> 53.4%,
    Llama 3.1 405B 55.3% -> 54.0%, GPT-3 175B 50.0% -> 49.4%), and every measured cell within 12%
    (30% for the FSDP layouts, whose recompute the sources do not state: GPT-3 175B FP8 tp1 pp1 FSDP is
    over-predicted by 17-24%, a known miss named in the README)."""
    from perfmodel.analysis.scaling import measured_series

    series = measured_series(load_model(model), load_hardware("h100-sxm"), seq, gpus, gbs0)
    dgxc = [s for s in series if s["release"].startswith("DGXC") and not s["fsdp"]]
    assert len(dgxc) >= 2
    for s in series:
        # a size where the predicted memory exceeds HBM (by the memory model's few-% error on these layouts) has
        # no prediction (scaling never prices a layout that cannot run); the others must be flat and close
        pred = [s["mfu"][n][1] for n in gpus if s["mfu"][n][1] is not None]
        assert len(pred) >= 2, s
        if not s["fsdp"]:
            assert 0.97 < pred[-1] / pred[0] <= 1.01, (s["layout"], s["release"], pred)
        for n in gpus:
            meas, p = s["mfu"][n]
            if meas is not None and p is not None:
                assert abs(p / meas - 1) < (0.30 if s["fsdp"] else 0.12), (s["layout"], s["release"], n, meas, p)
    # measured shapes are flat too: the DGXC BF16 series lose at most 3% from the smallest to the largest size
    for s in (s for s in dgxc if s["precision"] == "bf16"):
        got = [s["mfu"][n][0] for n in gpus if s["mfu"][n][0] is not None]
        assert got[-1] / got[0] > 0.97, (s["layout"], got)


@pytest.mark.parametrize("width", [80, 160])
def test_table_never_drops_columns(capsys, monkeypatch, width):
    """A pipe or an 80-column terminal gets two tables instead of squeezed, cut or ellipsised columns."""
    from perfmodel.cli import main
    from perfmodel.render import console

    monkeypatch.setattr(console, "width", width)
    assert main(["scaling", *L70, "--gpus", "64,128,...,2048", "--gbs", "128", "--attention", "full"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(l) for l in out.splitlines()) <= width
    for head in (
        "layout",
        "tok/s/GPU",
        "MFU",
        "DP",
        "bubble",
        "goodput",
        "$/Mtok",
        "J/tok",
        "tp4 pp4 vp5 cp2 dp64",
        "DGXC v24.11.1",
        "MFU meas.",
    ):
        assert head in out, head
    assert ("what grows, goodput, cost" in out) == (width < 120)


def test_search_with_layout_flags_or_constraints(capsys):
    line = run_err(capsys, ["scaling", *L70, "--gpus", "64,128", "--gbs", "128", "--search"])
    assert "--fix" in line and "--tp" in line
    run_err(
        capsys,
        [
            "scaling",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "64",
            "--gbs",
            "128",
            "--seq",
            "8192",
            "--fix",
            "tp=8",
        ],
    )  # --fix without --search
    d = run_json(
        capsys,
        [
            "scaling",
            "--model",
            "llama3-70b",
            "--hardware",
            "h100-sxm",
            "--gpus",
            "64,128",
            "--gbs",
            "128",
            "--seq",
            "8192",
            "--search",
            "--fix",
            "tp=8",
            "--max",
            "pp=4",
            "--no-measured",
        ],
    )
    assert all(p["ok"] and p["layout"]["tp"] == 8 and p["layout"]["pp"] <= 4 for p in d["points"])


def test_measured_rows_match_the_whole_layout():
    """A measured FSDP or other-micro-batch run is not attached to a fixed layout that differs only there."""
    m, hw = load_model("gpt3-175b"), load_hardware("h100-sxm")
    base = Layout(gpus=128, gbs=256, seq=2048, tp=1, pp=1, mbs=2)  # the DGXC FP8 run is tp1 pp1 mbs2 + FSDP
    res = scaling(m, hw, [128, 512], "weak", base, Options("fp8"), measured=None)
    from perfmodel.analysis.scaling import attach_measured, load_runs

    attach_measured(res.points, load_runs(), m, hw, Options("fp8"), base, "weak", False)
    assert not any(p.measured for p in res.points)
    fsdp = Layout(gpus=128, gbs=256, seq=2048, tp=1, pp=1, mbs=2, fsdp=True)
    attach_measured(res.points, load_runs(), m, hw, Options("fp8"), fsdp, "weak", False)
    assert [len(p.measured) for p in res.points] == [1, 1]


def test_plot_has_what_grows_panel(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    from perfmodel.analysis.scaling import plot

    m, hw = load_model("gpt3-175b"), load_hardware("h100-sxm")
    res = scaling(
        m, hw, [128, 512, 2048], "strong", Layout(gpus=128, gbs=256, seq=2048, tp=4, pp=8, vp=12), Options("bf16")
    )
    seen = {}
    orig = plt.Figure.savefig

    def grab(fig, *a, **k):
        seen["axes"] = [
            (
                ax.get_title(),
                ax.get_xlabel(),
                ax.get_ylabel(),
                ax.get_xscale(),
                [t.get_text() for t in ax.get_legend().get_texts()],
            )
            for ax in fig.axes
        ]
        seen["title"] = fig._suptitle.get_text()
        return orig(fig, *a, **k)

    plt.Figure.savefig = grab
    try:
        plot(res, tmp_path / "s.png")
    finally:
        plt.Figure.savefig = orig
    titles = [a[0] for a in seen["axes"]]
    assert titles == ["Throughput per GPU", "Model FLOPs utilisation", "What grows with the GPU count"]
    assert all(a[3] == "log" and "GPUs" in a[1] and a[2] for a in seen["axes"])
    assert "exposed DP communication" in seen["axes"][2][4] and "exposed pipeline bubble" in seen["axes"][2][4]
    assert "strong scaling" in seen["title"] and "tp4 pp8 vp12" in seen["title"]


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    """--search draws a progress bar per size on stderr when it is a terminal, and nothing otherwise."""
    import io

    from perfmodel.cli import main
    from perfmodel.commands import common

    args = [
        "scaling",
        "--model",
        "llama3-8b",
        "--hardware",
        "h100-sxm",
        "--gpus",
        "8,16",
        "--gbs",
        "64",
        "--seq",
        "4096",
        "--search",
        "--no-measured",
    ]
    assert main(args) == 0
    assert capsys.readouterr().err == ""  # a pipe: no bar
    tty = io.StringIO()
    real = common.Console
    monkeypatch.setattr(common, "Console", lambda **k: real(file=tty, force_terminal=True, width=100))
    assert main(args) == 0
    assert "16 GPUs" in tty.getvalue() and "chunks" in tty.getvalue()
    capsys.readouterr()
    drawn = len(tty.getvalue())
    assert main([*args, "--json"]) == 0 and capsys.readouterr().out.startswith("{")
    assert len(tty.getvalue()) == drawn  # --json: no bar even on a terminal
