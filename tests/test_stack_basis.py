"""Issue 25 item 4: every stack statement carries its basis (read / secondary / inferred), `show stack` and
`validate --json` show it, and validate scores the rows with and without the secondary / inferred statements."""

from __future__ import annotations

import json

import pytest

from perfmodel.analysis.validate import read_csv, shipped_sets, validate_rows
from perfmodel.cli import main
from perfmodel.errors import InputError
from perfmodel.specs.stack import BASES, load_stack, stack_ids

FAMILY = "llm-foundry-2023"


def _preset(tmp_path, body: str, name: str = "p") -> str:
    p = tmp_path / f"{name}.toml"
    p.write_text(
        f'name = "test"\nfamily = "{FAMILY}"\nbase = "{FAMILY}"\nbase_source = "test"\n' + body, encoding="utf-8"
    )
    return str(p)


def test_every_shipped_statement_has_a_known_basis():
    for sid in stack_ids():
        s = load_stack(sid)
        assert set(s.basis.values()) <= set(BASES) - {"read"}, sid
        assert all(set(r.basis.values()) <= set(BASES) for r in s.per_model), sid


def test_basis_follows_the_sources_words_and_the_marks():
    s = load_stack("nemo-26.06")
    q30 = s.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert q30.basis_of("cuda_graphs") == "secondary"  # a third-party reproduction guide (⚑ secondary)
    q235 = s.for_model("qwen3-235b-a22b", True, "gb300-nvl72", "mxfp8")
    assert q235.basis_of("cuda_graphs") == "inferred"  # ⚑ by layout
    # 26.06 assumes the 26.04 presets (its own name says so): what it inherits is inferred, not read
    assert s.base_basis == "inferred" and s.basis_of("tp_overlap") == "inferred"
    assert load_stack("nemo-26.04").basis_of("tp_overlap") == "read"
    # 26.02 copies 26.04's gpt-oss / DeepSeek-V3 rules: marked inferred in the file
    g = load_stack("nemo-26.02").for_model("gpt-oss-120b", True, "gb200-nvl72", "bf16")
    assert g.basis_of("moe_a2a_overlap") == "inferred"
    # the llm-foundry 2024 table's attention kernel is read from the sweep.py committed with it
    lf = load_stack("llm-foundry-2024")
    assert lf.value("attention_kernel") == "fa2" and lf.basis_of("attention_kernel") == "read"
    assert lf.for_model("repos-mpt-13b-s2048", False, "h100-sxm", "bf16").value("attention_kernel") == "triton"
    groups = q30.not_read()
    assert {"origin": "per_model:model=qwen3-30b,precision=mxfp8", "basis": "secondary"}.items() <= groups[1].items()


def test_read_only_switches_the_marked_statements_off():
    full = load_stack("nemo-26.06").for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    ro = load_stack("nemo-26.06#read")
    assert ro.read_only and ro.id == "nemo-26.06" and not ro.basis
    r = ro.for_model("qwen3-30b-a3b", True, "gb200-nvl72", "mxfp8")
    assert full.value("cuda_graphs") == "full_iteration" and r.value("cuda_graphs") != "full_iteration"
    # without the assumed 26.04 base the release falls back to its family's defaults
    fam = load_stack("megatron-core")
    assert ro.value("tp_overlap") == fam.value("tp_overlap") and ro.origin["tp_overlap"] == "unstated:megatron-core"
    # a preset whose statements are all read is unchanged
    a, b = load_stack("nemo-26.04"), load_stack("nemo-26.04#read")
    assert a.features == b.features
    # a family preset's own inferred feature has nothing beneath it: kept, still marked
    assert load_stack("torchtitan-2025#read").basis_of("tp_bwd_async") == "inferred"


def test_bad_basis_is_one_error_naming_the_field(tmp_path):
    bad = _preset(tmp_path, '[features]\nfsdp = { value = "zero1", source = "x", basis = "maybe" }\n')
    with pytest.raises(InputError) as e:
        load_stack(bad)
    assert e.value.field == "features.fsdp.basis" and "read, secondary, inferred" in e.value.reason
    # an explicit read that the source's own words contradict
    liar = _preset(
        tmp_path, '[features]\nfsdp = { value = "zero1", source = "⚑ by layout: x", basis = "read" }\n', "liar"
    )
    with pytest.raises(InputError) as e:
        load_stack(liar)
    assert e.value.field == "features.fsdp.basis" and "inferred" in e.value.reason
    rule = _preset(
        tmp_path,
        '[[per_model]]\nmatch = { model = "x" }\nbasis = "guess"\nfsdp = { value = "zero1", source = "x" }\n',
        "r",
    )
    with pytest.raises(InputError) as e:
        load_stack(rule)
    assert e.value.field == "basis" and "per_model[0]" in e.value.where
    orphan = tmp_path / "o.toml"
    orphan.write_text(f'name = "o"\nfamily = "{FAMILY}"\nbase_basis = "inferred"\n', encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_stack(str(orphan))
    assert e.value.field == "base_basis"


def test_bad_basis_on_the_command_line_exits_2_without_traceback(tmp_path, capsys):
    bad = _preset(tmp_path, '[features]\nfsdp = { value = "zero1", source = "x", basis = "maybe" }\n')
    assert main(["show", "stack", bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "features.fsdp.basis" in err[0] and "Traceback" not in err[0]


def test_show_stack_prints_the_basis(capsys):
    assert main(["show", "stack", "nemo-26.06", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["base_basis"] == "inferred" and d["read_only"] is False
    assert {r["basis"] for r in d["features"]} <= set(BASES)
    q = [r for r in d["per_model"] if r["match"] == {"model": "qwen3-30b", "precision": "mxfp8"}]
    assert q and set(q[0]["basis"].values()) == {"secondary"}
    assert main(["show", "stack", "nemo-26.06#read", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["read_only"] is True


def test_validate_scores_with_and_without_the_marked_statements():
    path = shipped_sets()[0]
    rows = [r for r in read_csv(path) if r["run_id"].startswith("mb2606-q3-") or r["run_id"].startswith("mb2511-l")]
    rep = validate_rows(rows, path.parent)
    q = {r.run_id: r for r in rep.results if r.run_id.startswith("mb2606-q3-30b-gb200")}
    r = next(iter(q.values()))
    assert any(g["basis"] == "secondary" for g in r.not_read)
    assert r.error_read_only is not None and r.error_read_only < r.error - 0.1  # the secondary rule carries it
    st = rep.read_only_stats()
    assert st["rows_marked"] == sum(bool(x.not_read) for x in rep.results) and st["rows_moved"] >= 1
    assert st["with"]["rows"] == st["without"]["rows"] == len(rep.results)
    assert st["with"]["mape"] == pytest.approx(rep.stats()["mape"])


def test_validate_json_reports_read_only(capsys):
    assert main(["validate", str(shipped_sets()[-1]), "--json"]) == 0  # zero-bubble: every statement read
    d = json.loads(capsys.readouterr().out)
    assert d["read_only"]["rows_marked"] == 0 and d["read_only"]["without"] == d["read_only"]["with"]
    assert all(r["not_read"] == [] and r["error_read_only"] is None for r in d["per_row"])
