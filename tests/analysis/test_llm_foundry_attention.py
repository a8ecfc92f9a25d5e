"""llm-foundry's attention kernel and optimizer launches per table, as the committed benchmark scripts and the
image each runs state (issue 25 item 4)."""

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
            # 300cc5c5's sweep.sh image is torch 1.13.1 (Composer 0.13.4: FSDP flat parameters), b2a43a14's torch 2.1.0
            old = "README commit 300cc5c5" in row["software"]
            assert spec.id == ("llm-foundry-2023-05" if old else "llm-foundry-2023"), row["run_id"]
        assert kernel == want, row["run_id"]
        launches = spec.value("optimizer_launches")
        assert launches == ("per_flat_param" if spec.id == "llm-foundry-2023-05" else "per_param"), row["run_id"]
        seen.add((spec.id, kernel))
    assert seen == {
        ("llm-foundry-2024", "fa2"),
        ("llm-foundry-2024", "triton"),
        ("llm-foundry-2023", "triton"),
        ("llm-foundry-2023-05", "triton"),
    }
