"""`perfmodel profiles` and `perfmodel releases`: software profiles (perfmodel/profiles.toml) and the
release series of the measured runs; `profile_option` gives any command a --profile NAME flag."""
from __future__ import annotations

from typing import Any, Callable

import click
from rich import box
from rich.markup import escape

from ..calibration import constants
from ..profiles import load_profiles, release_series
from .common import console, emit_json, print_table, table


def profile_option(f: Callable) -> Callable:
    """--profile NAME: swap the calibrated constants for a software profile's (default: unchanged)."""
    return click.option("--profile", "profile", default="default", show_default=True, metavar="NAME",
                        help="software profile: overrides of the calibrated constants "
                             "(`perfmodel profiles` lists them; e.g. nemo-25.11, cuda-graphs)")(f)


def _fmt(v: float) -> str:
    return f"{v:.4g}"


@click.command("profiles")
@click.option("--series", is_flag=True, help="also print the release series (same as `perfmodel releases`)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def profiles_cmd(series: bool, as_json: bool) -> None:
    """List the software profiles: their overrides of the calibrated constants and the evidence."""
    from ..scaling import default_runs_csv, load_runs     # here: `--profile` on other commands needs none of it
    profs = load_profiles()
    if as_json:
        out: dict[str, Any] = {"profiles": [p.to_dict() for p in profs.values()]}
        if series:
            out["series"] = release_series(load_runs(), default_runs_csv().parent)
        return emit_json(out)
    base = constants()
    rows = []
    for p in profs.values():
        over = ", ".join(f"{k} {_fmt(getattr(base, k))} -> {_fmt(v)}" for k, v in p.overrides.items()) or "(none)"
        ev = p.evidence
        if p.kind == "release":
            evid = (f"{ev.get('rows')} rows of {p.release}; MAPE {ev.get('mape_default', 0):.1%} default, "
                    f"{ev.get('mape_own', 0):.1%} own")
        else:
            evid = str(ev.get("summary") or ev.get("source") or ev.get("rows") or "")
        name = p.name + (f" ({', '.join(p.aliases)})" if p.aliases else "")
        rows.append([escape(name), p.kind, escape(over), escape(evid)])
    t = table("Software profiles (perfmodel/profiles.toml); use with --profile NAME",
              ["profile (aliases)", "kind", "overrides (calibrated -> profile)", "evidence (--json: sources)"], rows, 99)
    t.box = box.SIMPLE_HEAD
    console.print(t)
    console.print("release profiles: tensor_sustained fitted on that release's rows of validation/runs.csv "
                  "(validation/fit_profiles.py, in-sample); `default` is what validate and the accuracy figure use")
    if series:
        _print_series(release_series(load_runs(), default_runs_csv().parent), show_rows=False)
    return None


def _hw_short(h: str) -> str:
    return h.replace("-nvl72", "").replace("-sxm", "").replace("-80gb", "")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _print_series(s: dict, show_rows: bool) -> None:
    f = {k: v for k, v in s["filters"].items() if v}
    title = "Release series" + (f" ({', '.join(f'{k}={v}' for k, v in f.items())})" if f else "")
    rows = []
    for r in s["releases"]:
        fitted = ", ".join(f"{v:.4g}" for v in r["fitted"].values()) or "(none)"
        like = (f"{r['like_for_like_speedup']:.3f}x ({r['like_for_like_pairs']})"
                if r["like_for_like_speedup"] is not None else "-")
        rows.append([r["release"], r["date"], r["rows"], " ".join(_hw_short(h) for h in r["hardware"]),
                     f"{r['measured_over_default']:.3f}", _pct(r["mape_default"]), fitted, _pct(r["mape_own"]), like])
    print_table(title + ": measured vs predicted tokens/s/GPU per software release",
                ["release", "date", "rows", "hardware", "meas/pred", "MAPE", "fitted TS", "MAPE own", "vs prev (pairs)"],
                rows, 2, wrap=(3,), left=(3,))
    console.print(f"meas/pred: geometric mean of measured / default-predicted tokens/s/GPU; MAPE with the default. "
                  f"fitted TS: tensor_sustained of the release's profile (`--profile dgxc-24.11.1`, `nemo-25.11`, ...; "
                  f"calibrated {constants().tensor_sustained:.4g}); MAPE own: with it, in-sample. vs prev: measured "
                  "speedup over the previous release of the series that ran the same configuration.")
    if show_rows:
        one_model = len({r["model"] for r in s["rows"]}) == 1
        one_hw = len({r["hardware"] for r in s["rows"]}) == 1
        # measured rows, and the report's figures without a row (what-if profiles, evidence.target), by date
        dated = [(r["date"], [r["release"]] + ([] if one_model else [r["model"]])
                  + ([] if one_hw else [_hw_short(r["hardware"])])
                  + [r["gpus"], r["precision"], r["layout"], f"{r['measured']:,.0f}", _pct(r["measured_mfu_full"]),
                     _pct(r["source_mfu"]), f"{r['predicted_default']:,.0f}", _pct(r["mfu_full_default"]),
                     f"{r['predicted_own']:,.0f}" if r["predicted_own"] else "-", _pct(r["mfu_full_own"])])
                 for r in s["rows"]]
        dated += [(r["date"], [escape(r["label"])] + ([] if one_model else [r["model"]])
                   + ([] if one_hw else [_hw_short(r["hardware"])])
                   + [r["gpus"], r["precision"], r["layout"], "-", _pct(r["measured_mfu_full"]),
                      _pct(r["measured_mfu_full"]), f"{r['predicted_default']:,.0f}", _pct(r["mfu_full_default"]),
                      f"{r['predicted_own']:,.0f}", _pct(r["mfu_full_own"])])
                  for r in s.get("report_points", [])]
        rr = [row for _, row in sorted(dated, key=lambda d: d[0])]
        cols = (["release"] + ([] if one_model else ["model"]) + ([] if one_hw else ["hardware"])
                + ["gpus", "prec", "layout", "measured", "MFU", "source MFU", "default", "MFU", "profile", "MFU"])
        what = ", ".join(([s["rows"][0]["model"]] if one_model else []) + ([s["rows"][0]["hardware"]] if one_hw else []))
        print_table("Rows" + (f" ({what})" if what else "") + ": tokens/s/GPU, and MFU with full attention as the "
                    "DGXC recipes count it", cols, rr, 3 - one_model - one_hw)
        story = software_story(s)
        if story:
            console.print(story)


def software_story(s: dict) -> str | None:
    """One configuration (model, hardware, GPUs, precision) across time: the report's figure(s) and every
    release's measured MFU (full attention), oldest first; None when the rows span several configurations."""
    pts = [(r["date"], r["label"], r["measured_mfu_full"]) for r in s.get("report_points", [])]
    pts += [(r["date"], r["release"], r["measured_mfu_full"]) for r in s["rows"]]
    cfgs = {(r["model"], r["hardware"], r["gpus"], r["precision"]) for r in s["rows"] + s.get("report_points", [])}
    if len(pts) < 2 or len(cfgs) != 1:
        return None
    pts.sort()
    model, hw, gpus, prec = next(iter(cfgs))
    return (f"Software over time, {model} on {gpus} {hw}, {prec}: MFU (full attention) "
            + " -> ".join(f"{100 * m:.1f}% ({escape(lab)})" for _, lab, m in pts)
            + f": x{pts[-1][2] / pts[0][2]:.2f} on the same hardware")


@click.command("releases")
@click.option("--series", "series_name", type=click.Choice(["dgxc", "nemo"]), default=None,
              help="one series: DGXC benchmarking recipes or NeMo / Megatron-Bridge containers")
@click.option("--model", "model", default=None, help="only rows of this catalog model id")
@click.option("--hardware", "hardware", default=None, help="only rows of this catalog hardware id")
@click.option("--precision", default=None, help="only rows of this precision")
@click.option("--gpus", type=int, default=None, help="only rows with this GPU count")
@click.option("--rows/--no-rows", "show_rows", default=None,
              help="print every row [default: when a --model or --gpus filter is given]")
@click.option("--csv", "csv_path", default=None, type=click.Path(dir_okay=False),
              help="measured runs [default: validation/runs.csv]")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def releases_cmd(series_name: str | None, model: str | None, hardware: str | None, precision: str | None,
                 gpus: int | None, show_rows: bool | None, csv_path: str | None, as_json: bool) -> None:
    """The release series: per software release, its measured rows vs the default prediction and its own profile."""
    from pathlib import Path
    from ..hardware import load_hardware
    from ..scaling import default_runs_csv, load_runs
    from ..model import load_model
    if model:
        model = load_model(model).id          # unknown id -> InputError with a suggestion
    if hardware:
        hardware = load_hardware(hardware).id
    path = Path(csv_path) if csv_path else default_runs_csv()
    s = release_series(load_runs(path), path.resolve().parent, series_name, model, hardware, precision, gpus)
    if as_json:
        return emit_json(s)
    if not s["releases"]:
        console.print("no release rows match these filters")
        return None
    _print_series(s, show_rows if show_rows is not None else bool(model or gpus))
    return None


COMMANDS = [profiles_cmd, releases_cmd]
