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
    import json
    from perfmodel.cli import main
    import io, contextlib
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
    assert p.imgs >= 5                                    # breakdown, roofline, scaling, validation, compare
    for tag, ref in p.refs:
        assert not re.match(r"^(https?:)?//", ref), f"external resource {ref}"
        assert (out / ref).is_file(), f"<{tag}> references missing file {ref}"
    for png in out.glob("*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<style>" in html and "<link" not in html     # inline CSS only
    for needle in ("Where the step goes", "Roofline", "Top layouts", "Weak scaling", "Predicted vs measured",
                   "gb200-nvl72"):
        assert needle in html


def test_seconds_and_bad_out(report, tmp_path, capsys):
    _, d = report
    assert d["seconds"] < 60
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
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--disable-dev-shm-usage", *args], capture_output=True, text=True, timeout=180)


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
    from PIL import Image                                  # pillow comes with matplotlib
    with Image.open(shot) as im:
        im = im.convert("RGB")
        assert im.size == (1200, 3000)
        colors = im.resize((300, 750)).getcolors(maxcolors=1 << 20)
        assert colors is not None and len(colors) > 50          # text, figures, tables: far from one flat colour
        lo, hi = zip(*im.getextrema())
        assert min(lo) < 60 and max(hi) > 200
