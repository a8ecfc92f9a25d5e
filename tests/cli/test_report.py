"""perfmodel report: the page references only files it wrote, loads nothing external, and renders in headless
Chromium with every image decoded (skipped cleanly where no browser is installed)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from cli_helpers import run_err

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


class Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.imgs = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "img":
            self.imgs += 1
        for key in ("src", "href"):
            if a.get(key):
                self.refs.append((tag, a[key]))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    import contextlib
    import io
    import json

    from perfmodel.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["report", "--out", str(out), "--json"])
    assert rc == 0
    return out, json.loads(buf.getvalue())


def test_files_and_references(report):
    out, d = report
    assert d["files"][0] == "index.html"
    for f in d["files"]:
        assert (out / f).is_file() and (out / f).stat().st_size > 0
    html = (out / "index.html").read_text(encoding="utf-8")
    p = Refs()
    p.feed(html)
    assert p.imgs >= 5  # breakdown, roofline, scaling, validation, compare
    for tag, ref in p.refs:
        assert not re.match(r"^(https?:)?//", ref), f"external resource {ref}"
        assert (out / ref).is_file(), f"<{tag}> references missing file {ref}"
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<style>" in html and "<link" not in html  # inline CSS only
    for needle in (
        "Where the step goes",
        "Roofline",
        "Top layouts",
        "Weak scaling",
        "Predicted vs measured",
        "gb200-nvl72",
    ):
        assert needle in html


def test_seconds_and_bad_out(report, tmp_path, capsys):
    _, d = report
    # the time taken is reported, never asserted (no timed tests: a cold matplotlib font cache or a loaded
    # machine takes what it takes; figures live in benchmarks/)
    assert isinstance(d["seconds"], float) and d["seconds"] > 0
    f = tmp_path / "a_file"
    f.write_text("x")
    run_err(capsys, ["report", "--out", str(f / "sub")])
    run_err(capsys, ["report", "--out", str(tmp_path / "r"), "--model", "nope-70b"])


def _browser() -> str | None:
    for b in BROWSERS:
        if shutil.which(b):
            return shutil.which(b)
    return None


def _run(browser: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage", *args],
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_renders_in_headless_chromium(report, tmp_path):
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium / google-chrome installed (CI installs Debian's chromium in .ci/run)")
    out, _ = report
    url = (out / "index.html").resolve().as_uri()
    # every <img> decoded: the page's own script counts them into <body data-images-ok="ok/total">
    dom = _run(browser, "--virtual-time-budget=5000", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'data-images-ok="(\d+)/(\d+)"', dom.stdout)
    assert m, dom.stdout[:500]
    assert m.group(1) == m.group(2) and int(m.group(2)) >= 5
    assert not re.search(r'\sdata-failed="', dom.stdout)
    widths = re.findall(r'data-loaded="(\d+)"', dom.stdout)
    assert len(widths) == int(m.group(2)) and all(int(w) > 0 for w in widths)
    # screenshot: written and not blank
    shot = tmp_path / "shot.png"
    r = _run(browser, f"--screenshot={shot}", "--window-size=1200,3000", url)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    from PIL import Image  # pillow comes with matplotlib

    with Image.open(shot) as im:
        im = im.convert("RGB")
        assert im.size == (1200, 3000)
        colors = im.resize((300, 750)).getcolors(maxcolors=1 << 20)
        assert colors is not None and len(colors) > 50  # text, figures, tables: far from one flat colour
        lo, hi = zip(*im.getextrema())
        assert min(lo) < 60 and max(hi) > 200


def _figure_texts(draw) -> dict:
    """Run `draw` (which saves one matplotlib figure) and return that figure's titles, labels and texts."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    seen: dict = {}
    orig = plt.Figure.savefig

    def grab(fig, *a, **k):
        seen["suptitle"] = fig._suptitle.get_text() if fig._suptitle else ""
        seen["axes"] = [
            {
                "title": ax.get_title(),
                "xlabel": ax.get_xlabel(),
                "ylabel": ax.get_ylabel(),
                "xscale": ax.get_xscale(),
                "yscale": ax.get_yscale(),
                "texts": [t.get_text() for t in ax.texts],
                "legend": [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [],
            }
            for ax in fig.axes
        ]
        return orig(fig, *a, **k)

    plt.Figure.savefig = grab
    try:
        draw()
    finally:
        plt.Figure.savefig = orig
    return seen


def test_roofline_places_ops_and_ridges(tmp_path):
    """fp8 on H100: both ridge points (fp8 GEMMs, bf16 attention) marked, every op labelled, log-log axes."""
    from perfmodel.core.predict import Options
    from perfmodel.report import roofline_ops, roofline_png
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import Layout
    from perfmodel.specs.model import load_model

    m, hw = load_model("llama3-70b"), load_hardware("h100-sxm")
    ops = roofline_ops(m, hw, Layout(gpus=64, gbs=128, seq=8192, tp=4, pp=8, vp=5), Options("fp8"))
    names = [o.name.split(" [")[0] for o in ops]
    for want in (
        "qkv proj",
        "out proj",
        "mlp up/gate",
        "mlp down",
        "lm head",
        "flash attention fwd",
        "RMSNorm",
        "SwiGLU",
        "residual add",
    ):
        assert want in names
    assert all(o.intensity > 0 and 0 < o.achieved <= hw.peak("fp8") for o in ops)
    f = _figure_texts(lambda: roofline_png(ops, hw, "fp8", tmp_path / "r.png", "t"))
    whole, zoom = f["axes"]
    assert (whole["xscale"], whole["yscale"]) == ("log", "log") and "FLOPs per HBM byte" in whole["xlabel"]
    ridges = [t for t in whole["texts"] if t.startswith("ridge")]
    bw = hw.memory.hbm_bandwidth
    assert ridges == [
        f"ridge {hw.peak('fp8') / bw:,.0f} FLOP/B (fp8)",
        f"ridge {hw.peak('bf16') / bw:,.0f} FLOP/B (bf16)",
    ]
    labelled = " ".join(whole["texts"] + zoom["texts"])
    assert all(n in labelled for n in names)
    assert any("GEMMs" in t for t in whole["legend"]) and any("memory-bound" in t for t in whole["legend"])


def test_scaling_and_compare_figures_read_well(report):
    out, _ = report
    import json

    data = json.loads((out / "report.json").read_text())
    pts = data["scaling"]["points"]
    assert pts[0]["gpus"] == 64 and pts[-1]["gpus"] == 16384 and all(p["ok"] for p in pts)
    cmp = {c["hardware"]: c for c in data["compare"]}
    assert set(cmp) == {"h100-sxm", "gb200-nvl72"}
    assert (
        cmp["h100-sxm"]["perf_per_tco_vs_first_nominal"] == 1.0
        and cmp["gb200-nvl72"]["perf_per_tco_vs_first_nominal"] > 1
    )
    assert all(c["joules_per_token_nominal"] > 0 and c["usd_per_million_tokens_nominal"] > 0 for c in cmp.values())
    # 64 GPUs is under one NVL72 rack: the spare rack doubles what is paid, and the page says so
    assert cmp["gb200-nvl72"]["units"] == 1 and cmp["gb200-nvl72"]["cost_factor"] > 1.5
    assert "spare units are a large share" in (out / "index.html").read_text()
    from perfmodel.report import compare_png

    f = _figure_texts(lambda: compare_png(data["compare"], out / "c2.png", "t"))
    # the chart plots what the table concludes: after-reliability $/token and perf per TCO beside the nominal ones
    assert [a["title"] for a in f["axes"]] == [
        "tokens/s per GPU",
        "$ per GPU-hour",
        "$ per 1M tokens, nominal",
        "$ per 1M tokens,\nafter reliability",
        "utility J per token,\nnominal, rated",
        "utility J per token,\nnominal, drawn",
        "perf per TCO vs h100-sxm,\nnominal",
        "perf per TCO vs h100-sxm,\nafter reliability",
    ]
    # issue 28: both energy methods side by side, the drawn one below the rating
    assert all(0 < c["joules_per_token_drawn_nominal"] < c["joules_per_token_nominal"] for c in cmp.values())


def test_power_over_the_step_section(report):
    """Section 7: the cluster's power through three steps and a checkpoint write, below the rated power."""
    out, _ = report
    import json

    from perfmodel.report import power_segments

    data = json.loads((out / "report.json").read_text())
    p = data["power"]["power"]
    assert (out / "power.png").is_file() and "7. Power over the step" in (out / "index.html").read_text()
    segs = power_segments(p)
    names = [s[2] for s in segs]
    assert names.count("pipeline") == 4 and names.count("step end") == 3 and "checkpoint write" in names
    assert max(s[1] for s in segs) == pytest.approx(p["cluster_peak_w"])
    assert all(s[1] <= p["cluster_rated_w"] for s in segs)


def test_stack_changes_predictions_not_the_validation_scatter(report, tmp_path):
    """--stack / --stack-set is a what-if for the model's sections; the predicted-vs-measured scatter keeps
    each row's own stack (the accuracy figure never takes the command's stack)."""
    import json

    from perfmodel.report import ReportConfig, build

    out, _ = report
    base = json.loads((out / "report.json").read_text())
    build(
        ReportConfig(
            stack="nemo-25.11", stack_set=("attention_kernel=fa2",), scaling_max_gpus=64, compare=("h100-sxm",)
        ),
        tmp_path / "r",
    )
    other = json.loads((tmp_path / "r" / "report.json").read_text())
    assert other["config"]["stack"] == "nemo-25.11" and other["config"]["stack_set"] == ["attention_kernel=fa2"]
    assert other["top"][0]["tokens_per_s_per_gpu"] < base["top"][0]["tokens_per_s_per_gpu"]  # FA2 on H100
    assert other["validation"] == base["validation"]
    assert (
        "software stack <code>nemo-25.11 + --stack-set attention_kernel=fa2</code>"
        in (tmp_path / "r" / "index.html").read_text()
    )
