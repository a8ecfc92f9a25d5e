"""Write small training logs in the frameworks' own formats, for tests and the benchmark.

Each line is built from the framework's format string (cited in perfmodel/analysis/logparse.py), never copied
from a real log:
- Megatron-LM megatron/training/arguments.py @000c4ac `_print_args` (argument dump),
  megatron/training/training.py @001b00c `training_log` (iteration line, validation line),
  megatron/training/utils.py @00caa53 `report_memory` (memory line), tokenizer `_vocab_size_with_padding`.
- torchtitan torchtitan/components/metrics.py @00fbaaf `MetricsProcessor.log` (step line, with colours),
  torchtitan/train.py @000204a (job config, model build, trainer lines), parallel_dims.py (mesh line).
"""

from __future__ import annotations

from typing import Any, Iterable

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
) -> str:
    """training_log's line (Megatron-LM training.py @001b00c)."""
    s = f" [{stamp}]"
    s += " iteration {:8d}/{:8d} |".format(it, train_iters)
    s += " consumed samples: {:12d} |".format(it * gbs)
    s += " elapsed time per iteration (ms): {:.1f} |".format(ms)
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
) -> str:
    """A whole Megatron-LM log: dump, vocab padding, then one iteration line per `every` iterations with
    the given interval mean step times (ms); a memory report after the first interval."""
    lines = ["using world size: {}".format(args.get("world_size"))] + args_dump(args)
    if vocab:
        mult = args["make_vocab_size_divisible_by"] * args["tensor_model_parallel_size"]
        after = -(-vocab // mult) * mult
        lines.append(
            " > padded vocab (size: {}) with {} dummy tokens (new size: {})".format(vocab, after - vocab, after)
        )
    evals = set(eval_at)
    for i, ms in enumerate(step_ms):
        it = (i + 1) * every
        lines.append(iteration_line(it, args["train_iters"], args["global_batch_size"], ms, tflops))
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
    lines = [
        PREFIX + "Starting job: Llama 3 8B training",
        PREFIX + f"Running with args: {config}",
        PREFIX + f"Building {len(dims)}-D device mesh with {names}, {dims}",
        PREFIX + f"CUDA capacity: {device} with 79.19GiB memory",
        PREFIX + f"Building llama3 8B with {model_args}",
        PREFIX + f"{BLUE}Model llama3 8B {RED}size: 8,030,261,248 total parameters{RESET}",
        PREFIX
        + (
            f"Trainer is initialized with local batch size {local_bs}, global batch size {gbs}, "
            f"gradient accumulation steps 1, sequence length {seq}, total steps 100 (warmup 10)."
        ),
    ]
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
        tensor_model_parallel_size=4,
        pipeline_model_parallel_size=4,
        virtual_pipeline_model_parallel_size=5,
        context_parallel_size=2,
        world_size=64,
        data_parallel_size=2,
        global_batch_size=128,
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
