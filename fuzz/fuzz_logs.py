"""Fuzz `perfmodel check`: logs written from the frameworks' format strings (tests/log_helpers.py and the check
tests: Megatron-LM, Megatron-DeepSpeed, torchtitan, NeMo 2, Megatron-Bridge, MaxText, llm-foundry / Composer,
DeepSpeed, the Hugging Face Trainer) with
numbers replaced by malformed ones ('1.2.3', '.', ',', 'inf', 400 nines, '0', '-1', ...) into
perfmodel.analysis.logcheck.check.

Contract: check returns a result or raises perfmodel.errors.InputError (the CLI prints it as one line, exit 2);
nothing else escapes, whatever a corrupted or truncated line holds.

Run standalone (longer than the test suite does):
    python fuzz/fuzz_logs.py                   # hypothesis, 1000 examples
    python fuzz/fuzz_logs.py --examples 10000
tests/cli/test_fuzz.py runs the same target with a small bounded number of examples.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests", ROOT / "tests" / "analysis"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from hypothesis import strategies as st  # noqa: E402
from log_helpers import (  # noqa: E402
    L70,
    LLAMA3_8B_HF_CONFIG,
    LLAMA3_8B_TT_ARGS,
    bridge_config,
    bridge_log,
    deepspeed_log,
    ds_config,
    hf_trainer_log,
    hf_training_args,
    megatron_args,
    megatron_log,
    modded_nanogpt_log,
    nanogpt_log,
    nanotron_config,
    nanotron_log,
    nemo_log,
    olmo_log,
    torchtitan_config,
    torchtitan_log,
)

from perfmodel.analysis.logcheck import check  # noqa: E402
from perfmodel.errors import InputError  # noqa: E402


def seeds() -> list[str]:
    import test_check as T  # the MaxText and llm-foundry (Composer) logs of the check tests

    folder = Path(tempfile.mkdtemp(prefix="perfmodel-fuzz-seeds-"))
    maxtext = Path(T._maxtext_log(folder, 8)).read_text()
    composer = Path(T._composer_log(folder, T.MPT_1B_CONFIG)).read_text()
    return [
        maxtext,
        composer,
        megatron_log(megatron_args(**L70), [16000.0, 14700.0, 14650.0] * 4, tflops=420.0),
        "\n".join(T._mds_line(10 * (i + 1), 768, 4096, 14287.5 + i, 192) for i in range(12)) + "\n",
        torchtitan_log(torchtitan_config(), LLAMA3_8B_TT_ARGS, (["dp_shard", "tp"], [4, 2]), [5000.0] * 12, 1, 4, 8192),
        nemo_log([5.0] * 12, 128, 64),
        bridge_log(bridge_config(), [5000.0] * 12, tflops=251.0),
        deepspeed_log(ds_config(), [32.0] * 14),
        deepspeed_log(
            ds_config(gradient_accumulation_steps=1, train_micro_batch_size_per_gpu=8), [32.0] * 14, form="0.7"
        ),
        deepspeed_log(ds_config(), [32.0] * 14, form="0.5"),
        deepspeed_log(
            ds_config(world_size=2, train_batch_size=16, zero_optimization_stage=1),
            [32.0] * 14,
            optimizer="torch.bfloat16 ZeRO stage 1 optimizer",
        ).replace(
            "[Rank 0] Creating",
            "[Rank 0] CONFIG: micro_batches=4 micro_batch_size=2\nstage=0 layers=9\nstage=1 layers=9\n"
            "[INFO] [Rank 0] Creating",
        ),
        hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), tokens_per_s=11.634 * 4096 / 8),
        hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), steps=20, bar=[9.0] + [6.2] * 19),
        hf_trainer_log(None, hf_training_args(fsdp="[]"), prelude=[deepspeed_log(ds_config(), []).rstrip()]),
        nanotron_log(nanotron_config(), [7210.0] + [4830.0] * 13),
        nanotron_log(nanotron_config(pp=2, tp=2, engine="afab", zero=0), [7210.0] + [4830.0] * 13, head=True),
        olmo_log([5200.0] + [12500.0] * 13),
        olmo_log([5200.0] + [12500.0] * 13, core=True),
        nanogpt_log([30000.0] + [460.0] * 13, eval_at=(7,)),
        modded_nanogpt_log([160.0] * 14, val_every=5),
        modded_nanogpt_log([160.0] * 14, seconds=True, gpus=2),
    ]


SEEDS = seeds()
JUNK = (
    "1.2.3",
    ".",
    ",",
    ",,",
    "nan",
    "inf",
    "-1",
    "1e999",
    "0",
    "",
    "x",
    "1,2.3",
    "..",
    "9" * 400,
    "-0.0",
    "9" * 5000,
)
NUMBER = re.compile(r"\d+(?:\.\d+)?")
DS_GIVEN = {"seq_length": "4096", "recompute": "none"}
_TMP = Path(tempfile.mkdtemp(prefix="perfmodel-fuzz-logs-"))


@st.composite
def mutated_logs(draw) -> str:
    """A seed log with 1-6 of its numbers replaced by malformed ones."""
    text = SEEDS[draw(st.integers(0, len(SEEDS) - 1))]
    for _ in range(draw(st.integers(1, 6))):
        nums = list(NUMBER.finditer(text))
        m = nums[draw(st.integers(0, len(nums) - 1))]
        text = text[: m.start()] + draw(st.sampled_from(JUNK)) + text[m.end() :]
    return text


def check_log_text(text: str) -> None:
    """The contract: a result, or an InputError."""
    path = _TMP / "fuzz.log"
    path.write_text(text)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            if "DeepSpeed info:" in text and "Running training" not in text:  # a DeepSpeed log states no model:
                check(str(path), "h100-sxm", model="llama3-8b", overrides=DS_GIVEN)  # give it, so it is predicted
            elif "Running training" in text:
                check(str(path), "h100-sxm", overrides={"seq_length": "4096"})
            else:
                check(str(path), "h100-sxm")
    except InputError:
        pass


def main(argv: list[str]) -> None:
    from hypothesis import HealthCheck, given, settings

    n = int(argv[argv.index("--examples") + 1]) if "--examples" in argv else 1000
    run = settings(max_examples=n, deadline=None, suppress_health_check=list(HealthCheck))(
        given(mutated_logs())(check_log_text)
    )
    run()
    print(f"fuzz_logs: {n} examples, no crash")


if __name__ == "__main__":
    main(sys.argv[1:])
