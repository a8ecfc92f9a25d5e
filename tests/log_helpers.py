"""Write small training logs in the frameworks' own formats, for tests and the benchmark.

Each line is built from the framework's format string (cited in perfmodel/analysis/logparse.py), never copied
from a real log:
- Megatron-LM megatron/training/arguments.py @000c4ac `_print_args` (argument dump),
  megatron/training/training.py @001b00c `training_log` (iteration line, validation line),
  megatron/training/utils.py @00caa53 `report_memory` (memory line), tokenizer `_vocab_size_with_padding`;
  the ROCm fork's ' mem usages: {:.4f} |' (ROCm/Megatron-LM@27f7be58a02082440c119ecdf3d57d142f5e5591
  megatron/training/training.py `training_log`); torchrun's failure summary (pytorch/pytorch@0140b62d8bab203e
  torch/distributed/elastic/multiprocessing/errors/__init__.py `_MSG_FORMAT_TEMPLATE`, `_FAILURE_FORMAT_TEMPLATE`).
- torchtitan torchtitan/components/metrics.py @00fbaaf `MetricsProcessor.log` (step line, with colours),
  torchtitan/train.py @000204a (job config, model build, trainer lines), parallel_dims.py (mesh line); the
  early-2025 form (pytorch/torchtitan@57387af0e0e6173e7c0f3a38ac5db1134bb376d5 train.py: no tflops field, the
  'Training starts at step' line; models/llama/parallelize_llama.py: 'Applied ...' lines; metrics.py: capacity
  line) and the HEAD form with 'mfu: N/A' (pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a
  torchtitan/components/metrics.py `MetricsProcessor.log`, l.526-536).
- NeMo 2 nemo/lightning/pytorch/callbacks/progress_printer.py @8cfedd7203462cb251a914e700e5605444277561
  `ProgressPrinter.format_string` / `on_train_batch_end`, strategies/megatron_strategy.py `setup_distributed`.
- Megatron-Bridge @7af9601c9da746d21481194356295bfe23df3737 (v0.2.0) training/setup.py `maybe_log_and_save_config`
  (the config printed as yaml.safe_dump(default_flow_style=False): PyYAML 6.0 rules, `yaml_dump` below),
  training/utils/train_utils.py `training_log` ('Step Time : ...' line, iteration line without microseconds).
- DeepSpeed (deepspeedai/DeepSpeed@edaa7221) deepspeed/utils/logging.py (the logger's format),
  deepspeed/runtime/config.py `DeepSpeedConfig.print` (the engine configuration dump), deepspeed/runtime/engine.py
  ('DeepSpeed info: version=...', 'Creating ... optimizer'), deepspeed/utils/timer.py `ThroughputTimer.stop`
  (the v0.8+ form; the v0.7.0 form '{epoch}/{micro step}, RunningAvgSamplesPerSec=...').
- Hugging Face transformers (huggingface/transformers@2cda12cb) trainer.py `_inner_training_loop` (the 'Running
  training' banner, the train metrics of speed_metrics), trainer_callback.py PrinterCallback / ProgressCallback
  `on_log` (a dict's repr), configuration_utils.py `PretrainedConfig.__repr__` ('Model config X ' + JSON),
  training_args.py `TrainingArguments.__str__` ('name=value,' per field, sorted); the example scripts' logging
  format '%(asctime)s - %(levelname)s - %(name)s - %(message)s'.
- nanotron (huggingface/nanotron@0e0a27ea) trainer.py (`log_rank(pformat(self.config))` after 'Config:', the
  '[Start training] datetime: ... | mbs: ...' line, train_step_logs' LogItem tags), logging/base.py
  (LoggerWriter.add_scalars_from_list ' | '-joined 'tag: human_format(value)', human_format, log_memory, the
  formatter's '%(asctime)s [%(levelname)s|DP=..|PP=..|TP=..|host]: ' prefix in dim-italic colour codes), the
  config dataclasses of config/config.py, config/parallelism_config.py, config/models_config.py (the field
  order pformat prints; the classes below have the same names and fields, so pprint writes what nanotron's do).
- nanoGPT (karpathy/nanoGPT@dc81cb36) train.py ('tokens per iteration will be: {:,}', the iter and eval lines),
  configurator.py ('Overriding config with {file}:' then the file, 'Overriding: {key} = {value}'), model.py
  ('number of parameters: %.2fM', 'using fused AdamW: ...').
- modded-nanogpt (KellerJordan/modded-nanogpt@f411b3d3 train_gpt.py as its records print it: the script source first,
  then 'Running pytorch ... compiled for CUDA ...' and nvidia-smi's table, then the print0 step lines with train_time
  in ms (2024 records) or '{:.3f}s' (2026 records)).
- OLMo (allenai/OLMo@59a53e3f) olmo/train.py Trainer.log_metrics_to_console (its format_float), SpeedMonitor.check,
  olmo/util.py setup_logging's format '%(asctime)s\t%(hostname)s:%(local_rank)s\t%(name)s:%(lineno)s\t
  %(levelname)s\t%(message)s', scripts/train.py ('Configuration:', then the TrainConfig repr); OLMo-core
  (allenai/OLMo-core@fa6c5014) train/callbacks/console_logger.py (the '[step=..,epoch=..,eta=..]' marker),
  speed_monitor.py (TPS, BPS, MFU), utils.py format_float.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Iterable, Optional

# Llama 3 70B (models/llama3-70b.toml) as Megatron-LM would print it
LLAMA3_70B_SHAPE: dict[str, Any] = {
    "num_layers": 80,
    "hidden_size": 8192,
    "ffn_hidden_size": 28672,
    "num_attention_heads": 64,
    "group_query_attention": True,
    "num_query_groups": 8,
    "kv_channels": 128,
    "swiglu": True,
    "normalization": "RMSNorm",
    "untie_embeddings_and_output_weights": True,
    "position_embedding_type": "rope",
    "add_bias_linear": False,
    "add_qkv_bias": False,
    "num_experts": None,
    "make_vocab_size_divisible_by": 128,
    "vocab_size": None,
    "padded_vocab_size": None,
    "multi_latent_attention": False,
    "mtp_num_layers": None,
}


# Llama 3 70B on 64 H100 as tp 4, pp 4, vp 5, cp 2, dp 2, gbs 128: the layout of most log tests
L70 = dict(
    tensor_model_parallel_size=4,
    pipeline_model_parallel_size=4,
    virtual_pipeline_model_parallel_size=5,
    context_parallel_size=2,
    world_size=64,
    data_parallel_size=2,
    global_batch_size=128,
)


def megatron_args(**kw: Any) -> dict[str, Any]:
    """A plausible Megatron-LM argument set: a shape, then the layout and stack fields."""
    a: dict[str, Any] = dict(LLAMA3_70B_SHAPE)
    a.update(
        {
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
            "expert_tensor_parallel_size": None,
            "virtual_pipeline_model_parallel_size": None,
            "num_layers_per_virtual_pipeline_stage": None,
            "sequence_parallel": True,
            "recompute_granularity": None,
            "recompute_method": None,
            "recompute_num_layers": None,
            "recompute_modules": None,
            "use_distributed_optimizer": True,
            "use_torch_fsdp2": False,
            "use_megatron_fsdp": False,
            "overlap_grad_reduce": True,
            "overlap_param_gather": True,
            "tp_comm_overlap": True,
            "bf16": True,
            "fp16": False,
            "fp8": None,
            "fp8_recipe": "delayed",
            "fp4": None,
            "micro_batch_size": 1,
            "global_batch_size": 128,
            "seq_length": 8192,
            "world_size": 8,
            "data_parallel_size": 8,
            "train_iters": 100,
            "log_interval": 10,
            "rank": 0,
            "lr": 0.0003,
        }
    )
    a.update(kw)
    return a


def world_size_line(a: dict[str, Any]) -> str:
    """validate_args (Megatron-LM arguments.py @d580efc l.328, rank 0)."""
    return (
        "using world size: {}, data-parallel size: {}, "
        "context-parallel size: {}, "
        "hierarchical context-parallel sizes: {}"
        "tensor-model-parallel size: {}, "
        "encoder-tensor-model-parallel size: {}, "
        "pipeline-model-parallel size: {}, "
        "encoder-pipeline-model-parallel size: {}".format(
            a.get("world_size"),
            a.get("data_parallel_size"),
            a.get("context_parallel_size"),
            None,
            a.get("tensor_model_parallel_size"),
            0,
            a.get("pipeline_model_parallel_size"),
            0,
        )
    )


def args_dump(args: dict[str, Any]) -> list[str]:
    """_print_args: '  {arg} {dots} {value}', dots = '.' * (48 - len(arg)), sorted case-insensitively."""
    lines = ["------------------------ arguments ------------------------"]
    body = ["  {} {} {}".format(k, "." * (48 - len(k)), v) for k, v in args.items()]
    lines += sorted(body, key=lambda x: x.lower())
    lines.append("-------------------- end of arguments ---------------------")
    return lines


def iteration_line(
    it: int,
    train_iters: int,
    gbs: int,
    ms: float,
    tflops: float | None = None,
    loss: float = 7.0,
    stamp: str = "2026-11-30 10:00:00.000000",
    mem_usages: float | None = None,
) -> str:
    """training_log's line (Megatron-LM training.py @001b00c); `mem_usages`: the ROCm fork's field
    (ROCm/Megatron-LM@27f7be5 training.py: right after the elapsed time)."""
    s = f" [{stamp}]"
    s += " iteration {:8d}/{:8d} |".format(it, train_iters)
    s += " consumed samples: {:12d} |".format(it * gbs)
    s += " elapsed time per iteration (ms): {:.1f} |".format(ms)
    if mem_usages is not None:
        s += " mem usages: {:.4f} |".format(mem_usages)
    if tflops is not None:
        s += f" throughput per GPU (TFLOP/s/GPU): {tflops:.1f} |"
    s += f" learning rate: {3e-4:.6E} |"
    s += f" global batch size: {gbs:5d} |"
    s += " {}: {:.6E} |".format("lm loss", loss)
    s += f" loss scale: {1.0:.1f} |"
    s += f" grad norm: {1.234:.3f} |"
    s += " number of skipped iterations: {:3d} |".format(0)
    s += " number of nan iterations: {:3d} |".format(0)
    return s


def memory_line(rank: int, it: int, max_alloc_mb: float, max_res_mb: float) -> str:
    """report_memory (Megatron-LM utils.py @00caa53)."""
    s = f"(after {it} iterations) memory (MB)"
    s += f" | allocated: {max_alloc_mb * 0.6:.2f}"
    s += f" | max allocated: {max_alloc_mb:.2f}"
    s += f" | reserved: {max_res_mb * 0.9:.2f}"
    s += f" | max reserved: {max_res_mb:.2f}"
    return "[Rank {}] {}".format(rank, s)


def validation_line(it: int) -> str:
    s = f" validation loss at iteration {it} | "
    s += "{} value: {:.6E} | ".format("lm loss", 6.5)
    s += "{} PPL: {:.6E} | ".format("lm loss", 665.1)
    return s


def megatron_log(
    args: dict[str, Any],
    step_ms: Iterable[float],
    tflops: float | None = None,
    every: int = 10,
    vocab: int | None = 128256,
    mem_mb: tuple[float, float] | None = (60000.0, 70000.0),
    eval_at: Iterable[int] = (),
    mem_usages: float | None = None,
    head: Iterable[str] = (),
) -> str:
    """A whole Megatron-LM log: `head` lines, dump, vocab padding, then one iteration line per `every` iterations
    with the given interval mean step times (ms); a memory report after the first interval."""
    lines = list(head) + [world_size_line(args)] + args_dump(args)
    if vocab:
        mult = args["make_vocab_size_divisible_by"] * args["tensor_model_parallel_size"]
        after = -(-vocab // mult) * mult
        lines.append(
            " > padded vocab (size: {}) with {} dummy tokens (new size: {})".format(vocab, after - vocab, after)
        )
    evals = set(eval_at)
    for i, ms in enumerate(step_ms):
        it = (i + 1) * every
        lines.append(
            iteration_line(it, args["train_iters"], args["global_batch_size"], ms, tflops, mem_usages=mem_usages)
        )
        if i == 0 and mem_mb:
            lines.append(memory_line(0, it, *mem_mb))
        if it in evals:
            lines.append("-" * 60)
            lines.append(validation_line(it))
            lines.append("-" * 60)
    return "\n".join(lines) + "\n"


# ---- torchtitan ---------------------------------------------------------------------------------

RED, GREEN, ORANGE, TURQ, BLUE, CYAN, MAGENTA, RESET = (
    "\033[31m",
    "\033[32m",
    "\033[33m",
    "\033[36m",
    "\033[34m",
    "\033[96m",
    "\033[35m",
    "\033[39m",
)
PREFIX = "[rank0]:[titan] 2026-11-30 10:00:00,000 - root - INFO - "


def torchtitan_step(step: int, tps: float, tflops: float, mfu: float, mem_gib: float = 60.5, pct: float = 76.4) -> str:
    """MetricsProcessor.log (torchtitan metrics.py @00fbaaf), colours included."""
    return PREFIX + (
        f"{RED}step: {step:2}  {GREEN}loss: {7.1234:7.4f}  {ORANGE}grad_norm: {1.2345:7.4f}  "
        f"{TURQ}memory: {mem_gib:5.2f}GiB({pct:.2f}%)  {BLUE}tps: {round(tps):,}  "
        f"{CYAN}tflops: {tflops:,.2f}  {MAGENTA}mfu: {mfu:.2f}%{RESET}"
    )


def torchtitan_log(
    config: dict[str, Any],
    model_args: str,
    mesh: tuple[list[str], list[int]],
    tps: Iterable[float],
    local_bs: int,
    gbs: int,
    seq: int,
    every: int = 10,
    device: str = "NVIDIA H100 80GB HBM3",
) -> str:
    names, dims = mesh
    conv = config["model"].get("converters") or []
    recipe = (config.get("float8") or {}).get("recipe_name")
    ac = config["activation_checkpoint"]["mode"]
    lines = [
        PREFIX + "Starting job: Llama 3 8B training",
        PREFIX + f"Running with args: {config}",
        PREFIX + f"Building {len(dims)}-D device mesh with {names}, {dims}",
        PREFIX + f"CUDA capacity: {device} with 79.19GiB memory",
        PREFIX + f"Building llama3 8B with {model_args}",
        PREFIX + f"{BLUE}Model llama3 8B {RED}size: 8,030,261,248 total parameters{RESET}",
    ]
    if "float8" in conv:  # components/quantization/float8.py @29624e3 Float8Converter.__init__
        lines.append(
            PREFIX
            + (f"Float8 training active with recipe {recipe}" if recipe else "Float8 tensorwise scaled training active")
        )
    if ac != "none":  # distributed/activation_checkpoint.py @29624e3 apply_ac
        lines.append(PREFIX + f"Applied {ac} activation checkpointing to the model")
    if "dp_shard" in names:  # models/llama3/infra/parallelize.py @29624e3 parallelize_llama
        lines.append(PREFIX + "Applied FSDP to the model")
    lines.append(
        PREFIX
        + (
            f"Trainer is initialized with local batch size {local_bs}, global batch size {gbs}, "
            f"gradient accumulation steps 1, sequence length {seq}, total steps 100 (warmup 10)."
        )
    )
    for i, t in enumerate(tps):
        step = 1 if i == 0 else i * every
        lines.append(torchtitan_step(step, t, t * 4.8e10 / 1e12, 40.0))
    return "\n".join(lines) + "\n"


LLAMA3_8B_TT_ARGS = (
    "TransformerModelArgs(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, "
    "multiple_of=1024, ffn_dim_multiplier=1.3, norm_eps=1e-05, rope_theta=500000, max_seq_len=8192, "
    "depth_init=True, use_flex_attn=False, attn_mask_type='causal', eos_id=0)"
)


def torchtitan_config(
    tp: int = 1,
    pp: int = 1,
    shard: int = -1,
    ac: str = "selective",
    local_bs: int = 1,
    seq: int = 8192,
    converters: list[str] | None = None,
) -> dict[str, Any]:
    return {
        "job": {"description": "Llama 3 8B training", "print_args": True},
        "model": {"name": "llama3", "flavor": "8B", "converters": converters or []},
        "training": {
            "local_batch_size": local_bs,
            "global_batch_size": -1,
            "seq_len": seq,
            "steps": 100,
            "mixed_precision_param": "bfloat16",
        },
        "parallelism": {
            "data_parallel_replicate_degree": 1,
            "data_parallel_shard_degree": shard,
            "tensor_parallel_degree": tp,
            "pipeline_parallel_degree": pp,
            "context_parallel_degree": 1,
            "expert_parallel_degree": 1,
            "pipeline_parallel_schedule": "1F1B",
        },
        "activation_checkpoint": {"mode": ac, "selective_ac_option": "op"},
        "float8": {"recipe_name": None},
    }


def write_examples(folder: str) -> None:
    """The README's worked examples (tests/fixtures/logs/): written from the format strings above."""
    from pathlib import Path

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    a = megatron_args(
        **L70,
        train_iters=200,
        tp_comm_overlap=False,
    )
    steps = [19850.0, 16110.0, 16080.0, 16210.0, 16150.0, 23900.0, 16120.0, 16090.0, 16170.0, 16130.0]
    (out / "megatron-llama3-70b-h100.log").write_text(
        megatron_log(a, steps, tflops=365.4, mem_mb=(62150.0, 71240.0), eval_at=[50])
    )
    tps = [2950.0, 6420.0, 6510.0, 6490.0, 6530.0, 6475.0, 6505.0]
    (out / "torchtitan-llama3-8b-h100.log").write_text(
        torchtitan_log(torchtitan_config(), LLAMA3_8B_TT_ARGS, (["dp_shard"], [8]), tps, 1, 8, 8192)
    )
    zero3 = ds_config(
        zero_optimization_stage=3,
        zero_config="stage=3 contiguous_gradients=True reduce_bucket_size=500000000 offload_param=None "
        "offload_optimizer=None stage3_prefetch_bucket_size=50000000",
    )
    rates = [9.8, 12.41, 12.38, 12.45, 12.40, 12.36, 12.43, 12.39, 8.1, 12.42, 12.40, 12.37]
    (out / "hf-trainer-llama3-8b.log").write_text(
        hf_trainer_log(LLAMA3_8B_HF_CONFIG, hf_training_args(), samples_per_s=11.634, tokens_per_s=11.634 * 4096 / 8)
    )
    nt_ms = [7210.0, 4840.0, 4810.0, 4830.0, 4820.0, 4850.0, 4800.0, 4830.0]
    (out / "nanotron-llama3-8b-h100.log").write_text(nanotron_log(nanotron_config(), nt_ms))
    (out / "deepspeed-zero3-h100.log").write_text(
        deepspeed_log(zero3, rates, optimizer="torch.bfloat16 ZeRO stage 3 optimizer", version="0.14.4")
    )


# ---- Megatron-LM: a run that stopped before its first iteration ------------------------------------------------


def torchrun_failure(script: str = "pretrain_gpt.py", exitcode: int = 1) -> list[str]:
    """torchrun's ChildFailedError summary (pytorch/pytorch@0140b62 elastic/multiprocessing/errors/__init__.py
    `_MSG_FORMAT_TEMPLATE` / `_FAILURE_FORMAT_TEMPLATE`; the border is min(longest line, 60) '='/'-')."""
    root = [
        "[0]:",
        "  time      : 2026-11-30_10:00:00",
        "  host      : node001",
        "  rank      : 0 (local_rank: 0)",
        f"  exitcode  : {exitcode} (pid: 12345)",
        "  error_file: <N/A>",
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    ]
    w = min(max(len(x) for x in root), 60)
    return [
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "=" * w,
        f"{script} FAILED",
        "-" * w,
        "Failures:",
        "  <NO_OTHER_FAILURES>",
        "-" * w,
        "Root Cause (first observed failure):",
        *root,
        "=" * w,
    ]


# ---- NeMo 2 (Lightning) ---------------------------------------------------------------------------------------


def nemo_progress_line(n: int, max_steps: int, metrics: dict[str, float], epoch: int = 0) -> str:
    """ProgressPrinter.on_train_batch_end + format_string (NVIDIA/NeMo@8cfedd7 progress_printer.py): the
    iteration shown is n - 1 of max_steps - 1; a whole-number float prints as an int, any other as {val:.4}."""
    s = f"Training epoch {epoch}, iteration {n - 1}/{max_steps - 1}"
    for metric, val in metrics.items():
        if isinstance(val, float) and val.is_integer():
            s += f" | {metric}: {int(val)}"
        else:
            s += f" | {metric}: {val:.4}"
    return s


def nemo_log(step_s: Iterable[float], gbs: int, world: int, interval: int = 1, tflops: float | None = None) -> str:
    """A NeMo 2 pre-training log: the rank-0 distributed banner (megatron_strategy.py @8cfedd7 setup_distributed),
    then one ProgressPrinter line per `interval` steps, each metric the mean over its steps (average_metrics_dict),
    with the metrics in the order they are first logged (lr, global_batch_size, global_step, reduced_train_loss,
    train_step_timing in s, consumed_samples; TFLOPS_per_GPU from FLOPsMeasurementCallback)."""
    lines = [
        "-" * 100,
        "distributed_backend=nccl",
        f"All distributed processes registered. Starting with {world} processes",
        "-" * 100,
        "",
    ]
    steps = list(step_s)
    total = len(steps) * interval
    for i, s in enumerate(steps):
        n = (i + 1) * interval
        m: dict[str, float] = {
            "lr": 3e-4,
            "global_batch_size": float(gbs),
            "global_step": float(n - 1),
            "reduced_train_loss": 7.0 - 0.01 * i,
            "train_step_timing in s": s,
            "consumed_samples": float(n * gbs),
        }
        if tflops is not None:
            m["TFLOPS_per_GPU"] = tflops
        lines.append(nemo_progress_line(n, total, m))
    return "\n".join(lines) + "\n"


# ---- torchtitan, early 2025 (no tflops) and HEAD (mfu N/A) -----------------------------------------------------

CYAN_25, GREEN_25, YELLOW_25, BLUE_25, MAGENTA_25, RESET_25 = (
    "\033[36m",
    "\033[32m",
    "\033[33m",
    "\033[34m",
    "\033[35m",
    "\033[39m",
)
PREFIX_25 = "2025-02-10 10:00:00,000 - root - INFO - "  # torchtitan/logging.py @57387af init_logger


def torchtitan_step_2025(step: int, tps: float, mfu: float, mem_gib: float = 60.12, pct: float = 43.02) -> str:
    """train.py @57387af l.387-394: no tflops field."""
    return PREFIX_25 + (
        f"{CYAN_25}step: {step:2}  "
        f"{GREEN_25}loss: {7.1234:7.4f}  "
        f"{YELLOW_25}memory: {mem_gib:5.2f}GiB"
        f"({pct:.2f}%)  "
        f"{BLUE_25}tps: {round(tps):,}  "
        f"{MAGENTA_25}mfu: {mfu:.2f}%{RESET_25}"
    )


def torchtitan_step_head(step: int, tps: float, tflops: float, mfu: float | None, mem_gib: float = 60.5) -> str:
    """MetricsProcessor.log @b5bcd76 l.526-536: loss {:8.5f}, mfu 'N/A' when quantisation is on (mfu None)."""
    mfu_str = f"{mfu:.2f}%" if mfu is not None else "N/A"
    return PREFIX + (
        f"{RED}step: {step:2}  "
        f"{GREEN}loss: {7.12345:8.5f}  "
        f"{ORANGE}grad_norm: {1.2345:7.4f}  "
        f"{TURQ}memory: {mem_gib:5.2f}GiB"
        f"({76.4:.2f}%)  "
        f"{BLUE}tps: {round(tps):,}  "
        f"{CYAN}tflops: {tflops:,.2f}  "
        f"{MAGENTA}mfu: {mfu_str}{RESET}"
    )


@dataclass
class BaseModelArgs:
    """torchtitan/train_spec.py @57387af BaseModelArgs: its repr is what 'Building ... with {model_config}' prints."""

    _enforced: str = "This field is used to enforce all fields have defaults."


@dataclass
class TransformerModelArgs(BaseModelArgs):
    """torchtitan/models/llama/model.py @57387af TransformerModelArgs, the fields and defaults of that commit."""

    dim: int = 4096
    n_layers: int = 32
    n_heads: int = 32
    n_kv_heads: Optional[int] = None
    vocab_size: int = -1
    multiple_of: int = 256
    ffn_dim_multiplier: Optional[float] = None
    norm_eps: float = 1e-5
    rope_theta: float = 10000
    max_seq_len: int = 2048
    depth_init: bool = True
    norm_type: str = "rmsnorm"


# torchtitan/models/llama/__init__.py @57387af llama3_configs["8B"] (vocab_size from the tokenizer at build time)
LLAMA3_8B_ARGS_2025 = TransformerModelArgs(
    dim=4096,
    n_layers=32,
    n_heads=32,
    n_kv_heads=8,
    vocab_size=128256,
    ffn_dim_multiplier=1.3,
    multiple_of=1024,
    rope_theta=500000,
    max_seq_len=8192,
)


def torchtitan_log_2025(
    tps: Iterable[float],
    mesh: tuple[list[str], list[int]] = (["dp_shard"], [8]),
    local_bs: int = 1,
    gbs: int = 8,
    seq: int = 8192,
    ac: str | None = "selective",
    device: str = "NVIDIA H200",
    capacity_gib: float = 139.81,
    every: int = 10,
    mfu: float = 41.15,
) -> str:
    """A torchtitan log of February 2025 (@57387af): no job config printed (job.print_args off by default), the
    mesh, device, model, 'Applied ...' and 'Training starts at step 1, with ...' lines, then step lines
    without tflops (logged at step 1 and every `every` steps, train.py `log_freq`)."""
    names, dims = mesh
    lines = [
        PREFIX_25 + "Starting job: Llama 3 8B training",
        PREFIX_25 + f"Building {len(dims)}-D device mesh with {names}, {dims}",
        PREFIX_25 + f"Peak FLOPS used for computing MFU: {989e12:.3e}",
        PREFIX_25 + f"CUDA capacity: {device} with {capacity_gib:.2f}GiB memory",
        PREFIX_25 + f"Building llama3 8B with {LLAMA3_8B_ARGS_2025}",
        PREFIX_25 + f"{BLUE_25}Model llama3 8B {RED}size: 8,030,261,248 total parameters{RESET_25}",
    ]
    if ac:
        lines.append(PREFIX_25 + f"Applied {ac} activation checkpointing to the model")
    lines += [
        PREFIX_25 + "Applied FSDP to the model",
        PREFIX_25 + f"CUDA memory usage for model: {3.77:.2f}GiB({2.70:.2f}%)",
        PREFIX_25 + f"Training starts at step 1, with local batch size {local_bs}, global batch size {gbs}, "
        f"sequence length {seq}, total steps 1000 (warmup 200)",
    ]
    for i, t in enumerate(tps):
        step = 1 if i == 0 else i * every
        lines.append(torchtitan_step_2025(step, t, mfu))
    return "\n".join(lines) + "\n"


# ---- Megatron-Bridge ---------------------------------------------------------------------------------------------


def _yaml_scalar(v: Any) -> str:
    """PyYAML 6.0 SafeRepresenter / Emitter for the scalars a ConfigContainer holds: null, true / false, ints,
    floats as repr() with '.0' before a bare exponent (represent_float), strings plain unless they would read as
    another type (then single-quoted)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        r = repr(v).lower()
        if "." not in r and "e" in r:
            r = r.replace("e", ".0e", 1)
        return r
    s = str(v)
    special = s == "" or s.lower() in ("null", "true", "false", "yes", "no", "on", "off", "~")
    try:
        float(s)
        special = True
    except ValueError:
        pass
    return f"'{s}'" if special or ": " in s or s[:1] in "[]{}&*!|>'\"%@`#-" else s


def yaml_dump(d: dict[str, Any], indent: int = 0) -> list[str]:
    """yaml.safe_dump(d, default_flow_style=False): keys sorted, nested maps indented by 2, a list of scalars as
    '- item' lines at its key's indentation, {} and [] for empty ones."""
    out = []
    pad = " " * indent
    for k in sorted(d):
        v = d[k]
        if isinstance(v, dict) and v:
            out.append(f"{pad}{k}:")
            out += yaml_dump(v, indent + 2)
        elif isinstance(v, list) and v:
            out.append(f"{pad}{k}:")
            out += [f"{pad}- {_yaml_scalar(x)}" for x in v]
        elif isinstance(v, (dict, list)):
            out.append(f"{pad}{k}: {'{}' if isinstance(v, dict) else '[]'}")
        else:
            out.append(f"{pad}{k}: {_yaml_scalar(v)}")
    return out


def _target(name: str, call: bool = False, args: list | None = None) -> dict[str, Any]:
    """Megatron-Bridge utils/yaml_utils.py @7af9601: a dtype / function as {_target_, _call_: false}, an enum as
    {_target_, _call_: true, _args_: [value]}."""
    d: dict[str, Any] = {"_target_": name, "_call_": call}
    if args is not None:
        d["_args_"] = args
    return d


def bridge_config(**over: Any) -> dict[str, Any]:
    """A Megatron-Bridge ConfigContainer.to_dict() of a Llama 3.2 1B pre-training run on 8 GPUs: the field names
    of Bridge v0.2.0 training/config.py (TrainingConfig, GPTDatasetConfig, LoggerConfig, ...), MCore
    TransformerConfig / ModelParallelConfig / DistributedDataParallelConfig, and the values of
    models/llama/llama_provider.py Llama32ModelProvider1B. `over`: 'section.field' -> value."""
    cfg: dict[str, Any] = {
        "_target_": "megatron.bridge.training.config.ConfigContainer",
        "model": {
            "_target_": "megatron.bridge.models.llama.llama_provider.Llama32ModelProvider1B",
            "num_layers": 16,
            "hidden_size": 2048,
            "ffn_hidden_size": 8192,
            "num_attention_heads": 32,
            "num_query_groups": 8,
            "kv_channels": None,
            "normalization": "RMSNorm",
            "activation_func": _target("torch.nn.functional.silu"),
            "gated_linear_unit": True,
            "position_embedding_type": "rope",
            "add_bias_linear": False,
            "add_qkv_bias": False,
            "share_embeddings_and_output_weights": True,
            "seq_length": 8192,
            "vocab_size": 128256,
            "make_vocab_size_divisible_by": 128,
            "tensor_model_parallel_size": 1,
            "pipeline_model_parallel_size": 1,
            "virtual_pipeline_model_parallel_size": None,
            "context_parallel_size": 1,
            "expert_model_parallel_size": 1,
            "expert_tensor_parallel_size": None,
            "sequence_parallel": False,
            "num_moe_experts": None,
            "multi_latent_attention": False,
            "qk_layernorm": False,
            "recompute_granularity": None,
            "recompute_method": None,
            "recompute_num_layers": None,
            "recompute_modules": ["core_attn"],
            "bf16": True,
            "fp16": False,
            "fp8": None,
            "fp8_recipe": "delayed",
            "params_dtype": _target("torch.bfloat16"),
            "gradient_accumulation_fusion": True,
            "cross_entropy_loss_fusion": True,
            "cross_entropy_fusion_impl": "native",
            "attention_backend": _target("megatron.core.transformer.enums.AttnBackend", True, [5]),
            "cuda_graph_impl": "none",
            "cuda_graph_scope": "full",
            "tp_comm_overlap": False,
            "mtp_num_layers": None,
        },
        "train": {
            "_target_": "megatron.bridge.training.config.TrainingConfig",
            "global_batch_size": 128,
            "micro_batch_size": 2,
            "train_iters": 100,
            "eval_interval": 1000,
        },
        "dataset": {
            "_target_": "megatron.bridge.training.config.GPTDatasetConfig",
            "sequence_length": 8192,
            "random_seed": 1234,
        },
        "ddp": {
            "_target_": "megatron.core.distributed.distributed_data_parallel_config.DistributedDataParallelConfig",
            "overlap_grad_reduce": True,
            "overlap_param_gather": True,
            "use_distributed_optimizer": True,
            "grad_reduce_in_fp32": True,
            "average_in_collective": True,
        },
        "optimizer": {
            "_target_": "megatron.bridge.training.config.OptimizerConfig",
            "lr": 0.0003,
            "min_lr": 3.0e-05,
            "use_distributed_optimizer": True,
            "bf16": True,
        },
        "logger": {
            "_target_": "megatron.bridge.training.config.LoggerConfig",
            "log_interval": 10,
            "log_throughput": False,
        },
        "mixed_precision": "bf16_mixed",
        "checkpoint": {
            "_target_": "megatron.bridge.training.config.CheckpointConfig",
            "save": None,
            "save_interval": 500,
        },
    }
    for k, v in over.items():
        sec, _, fld = k.partition(".")
        if fld:
            cfg[sec][fld] = v
        else:
            cfg[sec] = v
    return cfg


def bridge_log(
    cfg: dict[str, Any], step_ms: Iterable[float], tflops: float = 180.0, every: int = 10, microbatches: int = 0
) -> str:
    """A Megatron-Bridge v0.2.0 log: 'Task Configuration' with the YAML (print() adds a blank line after
    safe_dump's own final newline), then per logged iteration the 'Step Time' line and the iteration line
    (no throughput field: logger.log_throughput is off), and a memory report in GB after the first."""
    lines = ["> initializing torch distributed ...", "------- Task Configuration -------"]
    lines += yaml_dump(cfg) + ["", "----------------------------------"]
    gbs = cfg["train"]["global_batch_size"]
    if microbatches:  # Megatron-Core num_microbatches_calculator.py @d580efc l.229 (the logger's message)
        lines.append(f"setting number of microbatches to constant {microbatches}")
    for i, ms in enumerate(step_ms):
        it = (i + 1) * every
        lines.append(f"Step Time : {ms / 1e3:.2f}s GPU utilization: {tflops:.1f}MODEL_TFLOP/s/GPU")
        lines.append(iteration_line(it, cfg["train"]["train_iters"], gbs, ms, stamp="2026-11-30 10:00:00"))
        if i == 0:
            lines.append(
                f"[Rank 0] (after {it} iterations) memory (GB) | mem-allocated-gigabytes: 20.5 | "
                "mem-max-allocated-gigabytes: 41.25 | mem-max-reserved-gigabytes: 48.0 | mem-alloc-retires: 0"
            )
    return "\n".join(lines) + "\n"


# ---- DeepSpeed --------------------------------------------------------------------------------------------------


def ds_prefix(file_line: str) -> str:
    """DeepSpeed's logger prefix ('[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] ')."""
    return f"[2024-05-01 10:00:00,000] [INFO] [{file_line}] "


def ds_config_dump(cfg: dict[str, Any]) -> list[str]:
    """DeepSpeedConfig.print: the header, then '  {arg} {dots(29 - len(arg))} {value}' per attribute, sorted."""
    out = [ds_prefix("config.py:984:print") + "DeepSpeedEngine configuration:"]
    for k in sorted(cfg):
        out.append(ds_prefix("config.py:988:print") + f"  {k} {'.' * (29 - len(k))} {cfg[k]}")
    out.append(ds_prefix("config.py:974:print_user_config") + "  json = {")
    return out


def ds_tput_line(step: int, rate: float, gas: int, peak_gib: float = 40.5, form: str = "0.8") -> str:
    """ThroughputTimer.stop's line: v0.8+ 'epoch=/micro_step=/global_step=', the v0.7.0 '{epoch}/{step}, ...' or
    the v0.5.0 '{epoch}/{step}, SamplesPerSec=...'."""
    head = f"epoch=0/micro_step={step * gas}/global_step={step}" if form == "0.8" else f"0/{step * gas}"
    rates = (
        f"SamplesPerSec={rate}" if form == "0.5" else f"RunningAvgSamplesPerSec={rate * 0.99}, CurrSamplesPerSec={rate}"
    )
    return ds_prefix("timer.py:260:stop") + f"{head}, {rates}, MemAllocated=10.2GB, MaxMemAllocated={peak_gib}GB"


def ds_config(**over: Any) -> dict[str, Any]:
    """A DeepSpeed ZeRO-2 bf16 config of 8 GPUs as the engine prints it (to v0.17.0: bfloat16_enabled)."""
    cfg: dict[str, Any] = {
        "activation_checkpointing_config": "{",
        "bfloat16_enabled": True,
        "fp16_enabled": False,
        "gradient_accumulation_steps": 4,
        "train_batch_size": 64,
        "train_micro_batch_size_per_gpu": 2,
        "world_size": 8,
        "zero_config": "stage=2 contiguous_gradients=True reduce_scatter=True offload_param=None offload_optimizer=None",
        "zero_optimization_stage": 2,
        "steps_per_print": 10,
    }
    cfg.update(over)
    return {k: v for k, v in cfg.items() if v is not None}


def deepspeed_log(
    cfg: dict[str, Any],
    rates: Iterable[float],
    optimizer: str | None = "torch.bfloat16 ZeRO stage 2 optimizer",
    version: str = "0.14.0",
    form: str = "0.8",
    every: int = 10,
) -> str:
    """A plain DeepSpeed run: version line, optimizer line, configuration dump, a ThroughputTimer line every
    `every` global steps."""
    lines = [ds_prefix("logging.py:96:log_dist") + f"[Rank 0] DeepSpeed info: version={version}, git-hash=unknown"]
    if optimizer:
        lines.append(ds_prefix("logging.py:96:log_dist") + f"[Rank 0] Creating {optimizer}")
    lines += ds_config_dump(cfg)
    gas = int(cfg.get("gradient_accumulation_steps", 1))
    lines += [ds_tput_line(every * (i + 1), r, gas, form=form) for i, r in enumerate(rates)]
    return "\n".join(lines) + "\n"


# ---- the Hugging Face Trainer -----------------------------------------------------------------------------------

LLAMA3_8B_HF_CONFIG: dict[str, Any] = {
    "_name_or_path": "meta-llama/Meta-Llama-3-8B",
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.44.2",
    "vocab_size": 128256,
}


def _interval_text(t: float) -> str:
    """tqdm std.py format_interval: 'mm:ss', or 'h:mm:ss' past an hour."""
    mins, sec = divmod(int(t), 60)
    h, m = divmod(mins, 60)
    return f"{h:d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


def tqdm_frames(step_s: list[float], total: int, smoothing: float = 0.3) -> str:
    """The Trainer's progress bar as a log file holds it: one frame per optimizer step, joined by '\\r' (tqdm std.py
    format_meter with the default bar format; the rate the exponential moving average of steps per second)."""
    frames = [f"  0%|          | 0/{total} [00:00<?, ?it/s]"]
    t, ema = 0.0, 0.0
    for n, dt in enumerate(step_s, 1):
        t += dt
        ema = 1 / dt if n == 1 else smoothing * (1 / dt) + (1 - smoothing) * ema
        rate = f"{1 / ema:5.2f}s/it" if ema < 1 else f"{ema:5.2f}it/s"
        pct = 100 * n / total
        fill = "\u2588" * int(pct // 10)
        left = _interval_text((total - n) / ema)
        frames.append(f"{pct:3.0f}%|{fill:<10}| {n}/{total} [{_interval_text(t)}<{left}, {rate}]")
    return "\r".join(frames)


def hf_line(name: str, message: str) -> str:
    return f"12/03/2026 10:00:00 - INFO - {name} - {message}"


def hf_training_args(**over: Any) -> dict[str, Any]:
    """The TrainingArguments fields the reader uses (an FSDP full-shard bf16 run with gradient checkpointing)."""
    a: dict[str, Any] = {
        "_n_gpu": 1,
        "bf16": True,
        "deepspeed": None,
        "fp16": False,
        "fsdp": "[<FSDPOption.FULL_SHARD: 'full_shard'>, <FSDPOption.AUTO_WRAP: 'auto_wrap'>]",
        "gradient_accumulation_steps": 4,
        "gradient_checkpointing": True,
        "optim": "OptimizerNames.ADAMW_TORCH",
        "per_device_train_batch_size": 2,
        "torch_compile": False,
    }
    a.update(over)
    return a


def hf_trainer_log(
    config: dict[str, Any] | None,
    args: dict[str, Any] | None,
    world: int = 8,
    mbs: int = 2,
    gas: int = 4,
    steps: int = 200,
    samples_per_s: float = 11.634,
    tokens_per_s: float | None = None,
    params: int = 8030261248,
    prelude: Iterable[str] = (),
    between: Iterable[str] = (),
    bar: list[float] | None = None,
) -> str:
    """An example script's log under the Trainer: the model config, the arguments, the banner, loss dicts, the
    train metrics."""
    import json

    lines = list(prelude)
    if config is not None:
        text = json.dumps(config, indent=2, sort_keys=True)
        lines.append(hf_line("transformers.configuration_utils", f"Model config LlamaConfig {text}"))
    if args is not None:
        body = "".join(f"{k}={v},\n" for k, v in sorted(args.items()))
        lines.append(hf_line("__main__", f"Training/evaluation parameters TrainingArguments(\n{body})"))
    t = "transformers.trainer"
    lines += [
        hf_line(t, "***** Running training *****"),
        hf_line(t, f"  Num examples = {steps * mbs * gas * world:,}"),
        hf_line(t, "  Num Epochs = 1"),
        hf_line(t, f"  Instantaneous batch size per device = {mbs:,}"),
        hf_line(t, f"  Total train batch size (w. parallel, distributed & accumulation) = {mbs * gas * world:,}"),
        hf_line(t, f"  Gradient Accumulation steps = {gas}"),
        hf_line(t, f"  Total optimization steps = {steps:,}"),
        hf_line(t, f"  Number of trainable parameters = {params:,}"),
    ]
    lines += list(between)
    if bar is not None:
        lines.append(tqdm_frames(bar, steps))
    lines += [
        f"{{'loss': 1.{i:02d}, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': {i / 20:.2f}}}" for i in range(20)
    ]
    metrics = f"{{'train_runtime': {steps * mbs * gas * world / samples_per_s:.4f}, 'train_samples_per_second': "
    metrics += f"{samples_per_s}, 'train_steps_per_second': {samples_per_s / (mbs * gas * world):.3f}, "
    if tokens_per_s is not None:
        metrics += f"'train_tokens_per_second': {tokens_per_s}, "
    metrics += "'train_loss': 1.23, 'epoch': 1.0}"
    lines.append(metrics)
    return "\n".join(lines) + "\n"


# ---- nanotron (module docstring) ------------------------------------------------------------------------------


class _Repr:
    """An object printed as nanotron's enum, engine and dtype values print (their own repr)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


@dataclass
class GeneralArgs:
    project: str
    run: Optional[str] = None
    seed: Optional[int] = None
    step: Optional[int] = None
    consumed_train_samples: Optional[int] = None
    benchmark_csv_path: Optional[str] = None
    ignore_sanity_checks: bool = True


@dataclass
class ParallelismArgs:
    dp: int
    pp: int
    tp: int
    pp_engine: Any = None
    tp_mode: Any = None
    tp_linear_async_communication: Optional[bool] = None
    recompute_layer: bool = False
    tp_recompute_allgather: bool = True
    expert_parallel_size: int = 1


@dataclass
class LlamaConfig:
    bos_token_id: int = 128000
    eos_token_id: int = 128001
    hidden_act: str = "silu"
    hidden_size: int = 4096
    initializer_range: float = 0.02
    intermediate_size: int = 14336
    is_llama_config: bool = True
    max_position_embeddings: int = 8192
    num_attention_heads: int = 32
    num_hidden_layers: int = 32
    num_key_value_heads: Optional[int] = 8
    pad_token_id: Optional[int] = None
    pretraining_tp: int = 1
    rms_norm_eps: float = 1e-05
    rope_scaling: Optional[dict] = None
    rope_theta: float = 500000.0
    rope_interleaved: bool = False
    tie_word_embeddings: bool = False
    use_cache: bool = True
    vocab_size: int = 128256


@dataclass
class RandomInit:
    std: float = 0.02


@dataclass
class ModelArgs:
    model_config: Any
    init_method: Any
    dtype: Any = None
    make_vocab_size_divisible_by: int = 1
    ddp_bucket_cap_mb: int = 25


@dataclass
class TokenizerArgs:
    tokenizer_name_or_path: Optional[str] = None
    tokenizer_revision: Optional[str] = None
    tokenizer_max_length: Optional[int] = None


@dataclass
class TokensArgs:
    sequence_length: int
    train_steps: int
    micro_batch_size: int
    batch_accumulation_per_replica: int
    val_check_interval: Optional[int] = -1
    limit_val_batches: Optional[int] = 0
    limit_test_batches: Optional[int] = 0


@dataclass
class CheckpointsArgs:
    checkpoints_path: Any
    checkpoint_interval: int
    save_initial_state: bool = False
    save_final_state: bool = False
    resume_checkpoint_path: Any = None
    checkpoints_path_is_shared_file_system: bool = False


@dataclass
class PretrainDatasetsArgs:
    hf_dataset_or_datasets: Any
    hf_dataset_splits: Any = None
    hf_dataset_config_name: Any = None
    dataset_processing_num_proc_per_process: int = 1
    dataset_overwrite_cache: bool = False
    text_column_name: Any = None


@dataclass
class DataArgs:
    dataset: Any
    seed: Any
    num_loading_workers: int = 1


@dataclass
class DatasetStageArgs:
    name: str
    start_training_step: int
    data: Any


@dataclass
class LRSchedulerArgs:
    learning_rate: float
    lr_warmup_steps: int = 0
    lr_warmup_style: Optional[str] = None
    lr_decay_style: Optional[str] = None
    lr_decay_steps: Optional[int] = None
    lr_decay_starting_step: Optional[int] = None
    min_decay_lr: Optional[float] = None


@dataclass
class AdamWOptimizerArgs:
    adam_eps: float
    adam_beta1: float
    adam_beta2: float
    torch_adam_is_fused: bool
    name: str = "adamW"


@dataclass
class OptimizerArgs:
    optimizer_factory: Any
    zero_stage: int
    weight_decay: float
    clip_grad: Optional[float]
    accumulate_grad_in_fp32: bool
    learning_rate_scheduler: Any


@dataclass
class Config:
    general: Any
    parallelism: Any
    model: Any
    tokenizer: Any
    checkpoints: Any = None
    logging: Any = None
    tokens: Any = None
    optimizer: Any = None
    data_stages: Any = None
    profiler: Any = None
    lighteval: Any = None


NT_ENGINES = {
    "1f1b": "<nanotron.parallel.pipeline_parallel.engine.OneForwardOneBackwardPipelineEngine object at 0x7f2c1a3b9e10>",
    "afab": "<nanotron.parallel.pipeline_parallel.engine.AllForwardAllBackwardPipelineEngine object at 0x7f2c1a3b9e10>",
}


def nanotron_config(
    dp: int = 2,
    tp: int = 4,
    pp: int = 1,
    mbs: int = 2,
    accum: int = 16,
    seq: int = 4096,
    tp_mode: str = "REDUCE_SCATTER",
    async_tp: bool = True,
    recompute: bool = False,
    engine: str = "1f1b",
    zero: int = 1,
    fp32_accum: bool = True,
    dtype: str = "torch.bfloat16",
    model: Any = None,
) -> Config:
    """A nanotron Config (Llama 3 8B shapes by default) as its dataclasses hold it."""
    mode = {"REDUCE_SCATTER": 2, "ALL_REDUCE": 1}[tp_mode]
    return Config(
        general=GeneralArgs(project="perfmodel-example", run="llama3-8b-%date_%jobid", seed=42),
        parallelism=ParallelismArgs(
            dp=dp,
            pp=pp,
            tp=tp,
            pp_engine=_Repr(NT_ENGINES[engine]),
            tp_mode=_Repr(f"<TensorParallelLinearMode.{tp_mode}: {mode}>"),
            tp_linear_async_communication=async_tp,
            recompute_layer=recompute,
        ),
        model=ModelArgs(model_config=model or LlamaConfig(), init_method=RandomInit(), dtype=_Repr(dtype)),
        tokenizer=TokenizerArgs(tokenizer_name_or_path="meta-llama/Meta-Llama-3-8B"),
        checkpoints=CheckpointsArgs(checkpoints_path=PurePosixPath("checkpoints (llama3)"), checkpoint_interval=1000),
        tokens=TokensArgs(
            sequence_length=seq, train_steps=100, micro_batch_size=mbs, batch_accumulation_per_replica=accum
        ),
        optimizer=OptimizerArgs(
            optimizer_factory=AdamWOptimizerArgs(
                adam_eps=1e-08, adam_beta1=0.9, adam_beta2=0.95, torch_adam_is_fused=True
            ),
            zero_stage=zero,
            weight_decay=0.01,
            clip_grad=1.0,
            accumulate_grad_in_fp32=fp32_accum,
            learning_rate_scheduler=LRSchedulerArgs(learning_rate=0.0003, lr_warmup_steps=10, lr_warmup_style="linear"),
        ),
        data_stages=[
            DatasetStageArgs(
                name="Stable Training Stage (it's [0, 1)",
                start_training_step=1,
                data=DataArgs(
                    dataset=PretrainDatasetsArgs("stas/openwebtext-10k", "train", text_column_name="text"), seed=42
                ),
            ),
            DatasetStageArgs(
                name="Annealing Phase",
                start_training_step=90,
                data=DataArgs(
                    dataset=PretrainDatasetsArgs("stas/openwebtext-10k", "train", text_column_name="text"), seed=42
                ),
            ),
        ],
    )


def nt_prefix(rank: int = 0, head: bool = False) -> str:
    """The formatter's prefix of a line: 0e0a27ea's '%m/%d/%Y %H:%M:%S [LEVEL|DP=|PP=|TP=|node]: ' (logging.py), or
    HEAD's colour-coded '%m/%d %H:%M:%S' form (logging/base.py)."""
    if head:
        return f"\x1b[2;3m12/04 10:00:00 [INFO|DP={rank}|PP=0|TP=0|ip-10-0-0-1]\x1b[0m: "
    return f"12/04/2026 10:00:00 [INFO|DP={rank}|PP=0|TP=0|ip-10-0-0-1]: "


def nt_record(message: str, head: bool = False) -> list[str]:
    """One log_rank record as NewLineStreamHandler writes it: the formatter's prefix before every line."""
    return [nt_prefix(head=head) + line for line in message.split("\n")]


def nt_human(num: float, head: bool = False) -> str:
    """nanotron's human_format (its algorithm): 'G' for 1e9 to 0e0a27ea, 'B' at HEAD."""
    if abs(num) < 1:
        return "{:.3g}".format(num)
    sizes = ["", "K", "M", "B" if head else "G", "T", "P", "E"]
    num = float("{:.3g}".format(num))
    i = 0
    while abs(num) >= 1000 and i < len(sizes) - 1:
        num /= 1000.0
        i += 1
    return "{}{}".format("{:f}".format(num).rstrip("0").rstrip("."), sizes[i])


def nanotron_flops_per_token(m: LlamaConfig, seq: int) -> float:
    """nanotron models/llama.py @0e0a27ea get_flops (its formula), per token: 3 x (the decoder's and the LM head's
    forward GEMM FLOPs), attention over the full s x s."""
    h, heads, kv, d = m.hidden_size, m.num_attention_heads, m.num_key_value_heads or m.num_attention_heads, 0
    d = h // heads
    per_layer = 2 * h * heads * d + 2 * h * 2 * kv * d + 2 * heads * d * seq + 2 * heads * seq * d
    per_layer += 2 * heads * d * h + 4 * h * m.intermediate_size + 2 * m.intermediate_size * h
    return 3.0 * (m.num_hidden_layers * per_layer + 2 * h * m.vocab_size)


def nanotron_iteration(step: int, steps: int, ms: float, gbs: int, seq: int, world: int, tflops: float) -> str:
    """0e0a27ea's interval line (trainer.py train_step_logs, global_batch_size in samples)."""
    tps = gbs * seq / (ms / 1000)
    fields = [
        ("consumed_tokens", step * gbs * seq),
        ("elapsed_time_per_iteration_ms", ms),
        ("tokens_per_sec", tps),
        ("tokens_per_sec_per_gpu", tps / world),
        ("global_batch_size", gbs),
        ("lm_loss", 11.2 - step * 0.01),
        ("lr", 0.0003),
        ("model_tflops_per_gpu", tflops),
        ("hardware_tflops_per_gpu", tflops),
        ("grad_norm", 0.42),
    ]
    body = " | ".join(f"{k}: {nt_human(v)}" for k, v in fields)
    return f"{nt_prefix()}iteration: {step} / {steps} | {body}"


def nanotron_log(cfg: Config, step_ms: list[float], head: bool = False, config: bool = True) -> str:
    """A nanotron run's log at 0e0a27ea: 'Config:' + pformat(config) and 'Model Config:' + pformat(model config)
    (trainer.py, each line prefixed), the start line, the memory line after the first step, one interval line per
    step. head: the config records in HEAD's colour-coded prefix."""
    from pprint import pformat

    p = cfg.parallelism
    t = cfg.tokens
    world = p.dp * p.tp * p.pp
    gbs = t.micro_batch_size * t.batch_accumulation_per_replica * p.dp
    lines = []
    if config:
        lines += nt_record("Config:\n" + pformat(cfg), head)
        lines += nt_record("Model Config:\n" + pformat(cfg.model.model_config), head)
    lines += [
        nt_prefix() + "Total number of parameters: 8.03G (15316.51MiB)",
        nt_prefix()
        + f"[Start training] datetime: 2026-12-04 10:00:00.000000 | mbs: {t.micro_batch_size} | grad_accum: "
        + f"{t.batch_accumulation_per_replica} | global_batch_size: {gbs} | sequence_length: {t.sequence_length} | "
        + f"train_steps: {t.train_steps} | start_iteration_step: 0 | consumed_train_samples: 0",
    ]
    for i, ms in enumerate(step_ms, start=1):
        if i == 2:
            lines.append(
                nt_prefix() + " Memory usage: 20512.25MiB. Peak allocated 37980.50MiB. Peak reserved: 41210.00MiB"
            )
        tflops = nanotron_flops_per_token(cfg.model.model_config, t.sequence_length) * gbs * t.sequence_length
        tflops /= ms / 1000 * world * 1e12
        lines.append(nanotron_iteration(i, t.train_steps, ms, gbs, t.sequence_length, world, tflops))
    return "\n".join(lines) + "\n"


# ---- OLMo / OLMo-core (module docstring) -----------------------------------------------------------------------


def olmo_float(value: float) -> str:
    """OLMo olmo/train.py log_metrics_to_console format_float (its rule)."""
    if value < 0.0001:
        return str(value)
    if value > 1000:
        return f"{int(value):,d}"
    if value > 100:
        return f"{value:.1f}"
    if value > 10:
        return f"{value:.2f}"
    if value > 1:
        return f"{value:.3f}"
    return f"{value:.4f}"


def olmo_core_float(value: float) -> str:
    """OLMo-core utils.py format_float (its rule, positive values)."""
    if value >= 1e9:
        for suffix, factor in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("B", 1e9)):
            if value >= factor:
                scaled = value / factor
                d = 1 if scaled > 100 else 2 if scaled > 10 else 3 if scaled > 1 else 4
                return f"{scaled:,.{d}f}{suffix}"
    if value < 0.0001:
        return f"{value:.2E}"
    if value >= 1000:
        return f"{int(value):,d}"
    return olmo_float(value)


def olmo_line(name: str, message: str, lineno: int = 1241) -> str:
    return f"2026-12-04 10:00:00,000\tnode-0:0\t{name}:{lineno}\tINFO\t{message}"


OLMO_CONFIG = (
    "TrainConfig(run_name='OLMo-1B', seed=6198, epoch=None, dry_run=False, model=ModelConfig(d_model=2048, "
    "n_heads=16, n_kv_heads=None, clip_qkv=None, n_layers=16, mlp_ratio=8, mlp_hidden_size=None, "
    "activation_type=<ActivationType.swiglu: 'swiglu'>, block_type=<BlockType.sequential: 'sequential'>, "
    "block_group_size=1, alibi=False, alibi_bias_max=8.0, rope=True, rope_full_precision=True, rope_theta=10000, "
    "flash_attention=True, attention_dropout=0.0, multi_query_attention=None, attention_layer_norm=False, "
    "residual_dropout=0.0, embedding_dropout=0.0, embedding_layer_norm=False, layer_norm_type=<LayerNormType.default: "
    "'default'>, layer_norm_with_affine=False, layer_norm_eps=1e-05, attention_layer_norm_with_affine=False, "
    "max_sequence_length=2048, include_bias=False, bias_for_layer_norm=False, scale_logits=False, vocab_size=50280, "
    "embedding_size=50304, weight_tying=True, eos_token_id=50279, pad_token_id=1, init_device='meta', "
    "init_fn=<InitFnType.mitchell: 'mitchell'>, init_std=0.02, init_cutoff_factor=None, precision='amp_bf16', "
    "scale_emb_init=False, emb_init_std=None, norm_after=False), optimizer=OptimizerConfig(name=<OptimizerType.adamw: "
    "'adamw'>, learning_rate=0.0004, weight_decay=0.1, betas=(0.9, 0.95), eps=1e-05), global_train_batch_size=2048, "
    "device_train_batch_size=32, device_train_microbatch_size=8, device_train_grad_accum=4, precision='amp_bf16', "
    "fsdp=FSDPConfig(use_orig_params=True, sharding_strategy=<ShardingStrategy.FULL_SHARD: 1>, wrapping_strategy=None, "
    "precision=<FSDPPrecision.mixed: 'mixed'>, hybrid_sharding_num_model_replicas=None), activation_checkpointing=None)"
)


def olmo_log(
    tps: list[float], device_tokens: int = 32 * 2048, core: bool = False, config: bool = True, eval_at: tuple = ()
) -> str:
    """An OLMo (or OLMo-core) run's console log: the configuration, then per step the rank-0 metrics (other ranks
    print the bare step marker)."""
    lines = []
    if config and not core:
        lines += [olmo_line("__main__", "Configuration:", 96), olmo_line("__main__", OLMO_CONFIG, 97)]
    fmt = olmo_core_float if core else olmo_float
    for step, t in enumerate(tps, start=1):
        bps = t / device_tokens
        head = f"[step={step}/739328,epoch=0" + (",eta=12d3h]" if core else "]")
        if core:
            metrics = [
                ("train/CE loss", 3.2),
                ("throughput/total tokens", step * 2048 * 2048.0),
                ("throughput/device/TPS", t),
                ("throughput/device/TPS (actual avg)", 0.8 * t),
                ("throughput/device/BPS", bps),
                ("throughput/device/MFU", 41.5),
                ("gpu_memory/GPU active mem (GiB)", 52.25),
                ("gpu_memory/GPU reserved mem (GiB)", 60.5),
            ]
        else:
            metrics = [
                ("train/CrossEntropyLoss", 3.2),
                ("train/Perplexity", 24.5),
                ("throughput/total_tokens", step * 4194304.0),
                ("throughput/total_training_Gflops", step * 4194304.0 * 7.2),
                ("throughput/device/tokens_per_second", t),
                ("throughput/device/batches_per_second", bps),
                ("System/Peak GPU Memory (MB)", 61234.0),
                ("optim/learning_rate_group0", 0.0004),
            ]
        if step in eval_at and core:  # OLMo-core's evaluator callback runs inside the step, before the console log
            lines.append(olmo_line("olmo_core.train.callbacks.evaluator_callback", "Running lm evals..."))
            lines.append(olmo_line("olmo_core.train.callbacks.evaluator_callback", f"[eval=lm,step={step}/739328]"))
        body = "\n".join(f"    {k}={fmt(v)}" for k, v in metrics)
        lines.append(olmo_line("olmo.train", f"{head}\n{body}"))
        lines.append(f"2026-12-04 10:00:00,000\tnode-1:0\tolmo.train:1244\tINFO\t{head}")
    return "\n".join(lines) + "\n"


# ---- nanoGPT (module docstring) --------------------------------------------------------------------------------


def nanogpt_log(
    step_ms: list[float],
    batch: int = 12,
    block: int = 1024,
    accum: int = 40,
    cli_block: int | None = None,
    eval_at: tuple[int, ...] = (),
) -> str:
    """A nanoGPT run's stdout (config/train_gpt2.py-style file, 8 GPUs: accumulation 40 // 8 = 5 per rank)."""
    lines = [
        "Overriding config with config/train_gpt2.py:",
        "# config for training GPT-2 (124M) on 8 GPUs",
        "wandb_log = False",
        f"batch_size = {batch}",
        f"block_size = {block}",
        f"gradient_accumulation_steps = {accum}",
        "max_iters = 600000",
        "",
    ]
    if cli_block:
        lines.append(f"Overriding: block_size = {cli_block}")
        block = cli_block
    lines += [
        f"tokens per iteration will be: {accum * batch * block:,}",
        "Initializing a new model from scratch",
        "defaulting to vocab_size of GPT-2 to 50304 (50257 rounded up for efficiency)",
        "number of parameters: 123.59M",
        "num decayed parameter tensors: 50, with 124,354,560 parameters",
        "num non-decayed parameter tensors: 25, with 19,200 parameters",
        "using fused AdamW: True",
        "compiling the model... (takes a ~minute)",
    ]
    for i, ms in enumerate(step_ms):
        if i in eval_at:
            lines.append(f"step {i}: train loss 3.1234, val loss 3.1345")
            lines.append("saving checkpoint to out")
        mfu = -100.0 if i < 5 else 38.5
        lines.append(f"iter {i}: loss {10.9 - i * 0.01:.4f}, time {ms:.2f}ms, mfu {mfu:.2f}%")
    return "\n".join(lines) + "\n"


# ---- modded-nanogpt (module docstring) -------------------------------------------------------------------------


def modded_nanogpt_log(step_ms: list[float], seconds: bool = False, val_every: int = 125, gpus: int = 8) -> str:
    """A record's log: a few source lines (the format strings as code, which must not read as steps), the nvidia-smi
    table, the warm-up steps (timed apart), then cumulative train_time per step and validation lines."""
    lines = [
        'print0(f"step:{step}/{train_steps} val_loss:{val_loss:.4f} train_time:{training_time_ms:.0f}ms")',
        "    ddp_world_size = int(os.environ['WORLD_SIZE'])",
        "=" * 100,
        "Running pytorch 2.6.0 compiled for CUDA 12.4",
        "nvidia-smi:",
        "| NVIDIA-SMI 555.42.06              Driver Version: 555.42.06      CUDA Version: 12.5     |",
    ]
    lines += [
        f"|   {i}  NVIDIA H100 80GB HBM3          Off |   00000000:18:00.0 Off |                    0 |"
        for i in range(gpus)
    ]
    total = len(step_ms) + 10

    def t(x_ms: float) -> str:
        return f"{x_ms / 1e3:.3f}s" if seconds else f"{x_ms:.0f}ms"

    for i in range(1, 11):  # warm-up steps: the timer restarts after them
        lines.append(f"step:{i}/{total} train_loss:10.8 train_time:{t(26000.0 + 110 * i)} step_avg:nanms")
    cum = 0.0
    for k, ms in enumerate(step_ms, start=11):
        cum += ms
        avg = cum / (k - 10)
        if (k - 10) % val_every == 0:
            lines.append(f"step:{k}/{total} val_loss:4.1234 train_time:{t(cum)} step_avg:{avg:.2f}ms")
        lines.append(f"step:{k}/{total} train_loss:4.1 train_time:{t(cum)} step_avg:{avg:.2f}ms")
    return "\n".join(lines) + "\n"
