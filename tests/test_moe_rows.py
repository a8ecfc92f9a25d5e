"""MoE rows of validation/runs.csv: the model variants and stack facts they are predicted with."""
import csv
from pathlib import Path

from perfmodel.counts import flops_per_token
from perfmodel.model import load_model

ROOT = Path(__file__).resolve().parents[1]


def test_deepseek_v3_without_mtp_is_deepseek_v3_minus_its_mtp_module():
    a, b = load_model("deepseek-v3"), load_model("deepseek-v3-nomtp")
    assert (a.mtp_layers, b.mtp_layers) == (1, 0)
    # the same network otherwise: every other field equal
    skip = {"id", "name", "mtp_layers", "sources", "notes", "path"}
    for f in type(a).model_fields:
        if f not in skip:
            assert getattr(a, f) == getattr(b, f), f
    # without MTP the FLOPs per token are those of deepseek-v3 counted without its MTP module
    assert flops_per_token(b, 4096, "causal", mtp=True) == flops_per_token(a, 4096, "causal", mtp=False)
    assert flops_per_token(b, 4096, "causal", mtp=True) < flops_per_token(a, 4096, "causal", mtp=True)


def test_rows_published_without_mtp_use_the_model_without_mtp():
    rows = list(csv.DictReader(open(ROOT / "validation" / "runs.csv")))
    nomtp = [r for r in rows if "w/o MTP" in r["source_model_name"]]
    assert len(nomtp) == 2
    assert all(r["model"] == "deepseek-v3-nomtp" for r in nomtp)
    assert all(r["model"] != "deepseek-v3-nomtp" for r in rows if r not in nomtp)
