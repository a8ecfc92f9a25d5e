"""MoE rows of validation/runs.csv: the model variants and stack facts they are predicted with."""

import csv
from pathlib import Path

from perfmodel.specs.counts import flops_per_token
from perfmodel.specs.model import load_model

ROOT = Path(__file__).resolve().parents[2]


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


def test_expert_linears_keep_their_quantised_inputs_under_fp8():
    # Transformer Engine GroupedLinear saves the split_quantize'd inputs for wgrad when FP8 is on: the permuted
    # tokens (fc1 input) and the activation output (fc2 input) at 1 B per element, as the dense linears; the
    # SwiGLU input (fc1 output) stays BF16. Worked case: Mixtral 8x7B, tp 1, ep 8, mbs 1, seq 4096: top-2
    # copies of 4096 tokens, hidden 4096, expert width 14336 (bytes per layer)
    import numpy as np

    from perfmodel.core import workload
    from perfmodel.core.calibration import constants
    from perfmodel.core.predict import Options, software_of
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import Layout, LayoutGrid

    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")
    grid = LayoutGrid.from_layouts([Layout(gpus=8, gbs=8, seq=4096, ep=8)])
    sw = software_of(m, hw, Options(precision="fp8"))

    def saved(low):
        w = workload.build(m, grid, low, 1.0, constants(), sw)
        moe = [layer for layer in w.layers if layer.kind == "moe"][0]
        return {s.name: float(np.ravel(s.nbytes)[0]) for s in moe.saved}

    bf, f8 = saved(False), saved(True)
    copies = 4096 * 2
    assert bf["permuted tokens"] == 2 * copies * 4096 and f8["permuted tokens"] == 1 * copies * 4096
    assert bf["expert activation output"] == 2 * copies * 14336 and f8["expert activation output"] == copies * 14336
    assert f8["expert activation input"] == bf["expert activation input"] == 2 * copies * 2 * 14336


def test_flex_dispatcher_fuses_the_global_permute_into_the_dispatch():
    # Megatron-LM DeepSeek-V3 GB200 guide Sec. 2.1.1: the NCCL all-to-all path permutes globally before and
    # un-permutes after the EP communication, the DeepEP / HybridEP flex dispatcher fuses that global permute
    # into its kernels and keeps only the local one. Worked case on Mixtral 8x7B, ep 8, mbs 1, seq 4096: 8192 token
    # copies x 4096 hidden x (20 - 12) B forward with HybridEP against x 20 B with the all-to-all, backward twice
    import numpy as np

    from perfmodel.core import constants as K
    from perfmodel.core import workload
    from perfmodel.core.calibration import constants
    from perfmodel.core.predict import Options, software_of
    from perfmodel.specs.hardware import load_hardware
    from perfmodel.specs.layout import Layout, LayoutGrid

    m, hw = load_model("mixtral-8x7b"), load_hardware("h100-sxm")
    grid = LayoutGrid.from_layouts([Layout(gpus=8, gbs=8, seq=4096, ep=8)])
    c = constants()
    assert (c.moe_permute_bytes, K.MOE_GLOBAL_PERMUTE_BYTES) == (20, 12)

    def permute(dispatcher):
        sw = software_of(m, hw, Options(precision="bf16", stack_set=(f"moe_dispatcher={dispatcher}",)))
        moe = [layer for layer in workload.build(m, grid, False, 1.0, c, sw).layers if layer.kind == "moe"][0]
        s = [s for s in moe.streams if s.name == "token permute / unpermute"][0]
        return float(np.ravel(s.bytes_fwd)[0]), float(np.ravel(s.bytes_bwd)[0])

    copies = 4096 * 2
    assert permute("alltoall") == (20 * copies * 4096, 40 * copies * 4096)
    assert permute("hybridep") == permute("deepep") == (8 * copies * 4096, 16 * copies * 4096)
