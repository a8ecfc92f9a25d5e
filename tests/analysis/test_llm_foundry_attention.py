"""llm-foundry's attention kernel per table, as the committed benchmark scripts state (issue 25 item 4)."""

from __future__ import annotations

from perfmodel.analysis.validate import read_csv, row_inputs, row_stack_spec
from perfmodel.specs.specfile import data_dir


def test_each_llm_foundry_table_runs_the_kernel_its_scripts_pass():
    path = data_dir("validation") / "independent" / "llm-foundry.csv"
    seen = set()
    for row in read_csv(path):
        m, hw, _, opts = row_inputs(row, path.parent)
        spec = row_stack_spec(row, path.parent, m, hw, opts.precision)
        kernel = spec.value("attention_kernel")
        if "README commit 5e85bd62" in row["software"]:
            # sweep.py at 5e85bd62: --attn_impl flash (flash-attn 2.4.2) for 1b/3b/7b/70b, triton for 13b/30b
            want = "triton" if row["run_id"].startswith(("llmf-mpt13b-", "llmf-mpt30b-")) else "fa2"
            assert spec.id == "llm-foundry-2024", row["run_id"]
        else:  # 300cc5c5 / b2a43a14: submit_benchmarks.py defaults --attn_impl to triton, sweep.sh passes none
            want = "triton"
            assert spec.id == "llm-foundry-2023", row["run_id"]
        assert kernel == want, row["run_id"]
        seen.add((spec.id, kernel))
    assert seen == {("llm-foundry-2024", "fa2"), ("llm-foundry-2024", "triton"), ("llm-foundry-2023", "triton")}
