"""Megatron-LM command-line flags as a measured row states them (issue 26 item 3): a `megatron_args` cell of a
validate CSV (`--use-distributed-optimizer --overlap-grad-reduce --recompute-granularity full ...`) becomes the
argument-dump fields Megatron-LM's argparse would have printed, and those go through the one flag -> feature mapping
that `perfmodel check` applies to a log's argument dump (logrun.megatron_stack_sets). Nothing is mapped twice.

FLAGS is Megatron-LM's own argparse table for the flags that matter to the cost model, read at one commit
(SOURCE; the line of each add_argument is in the table): the flag, its dest, how argparse stores it and its
default. A command line states every flag of the table: a switch not given is at its default (store_true off,
store_false on), so a row that lists flags gets exactly those over Megatron-LM's library defaults (the
`megatron-core` preset). The defaults of these flags are the same from core_r0.8.0 to core_v0.13.0 (research notes
stacks-torchtitan-deepspeed.md B.5; --recompute-modules and --cross-entropy-fusion-impl exist from core_v0.12.0,
--attention-backend from core_v0.11.0, each defaulting to the behaviour of the releases before it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from perfmodel.errors import InputError

SOURCE = "NVIDIA/Megatron-LM@c550cf6c41 (core_v0.13.0):megatron/training/arguments.py"
FIELD = "megatron_args"


@dataclass(frozen=True)
class Flag:
    """One Megatron-LM argument: its dest, how argparse stores it (true = store_true, false = store_false, value =
    one value, int = one integer, list = nargs), its default as an argument dump prints it, the add_argument line
    at SOURCE and the values argparse accepts (empty: any)."""

    dest: str
    kind: Literal["true", "false", "value", "int", "list"]
    default: str
    line: int
    choices: tuple[str, ...] = ()

    def source(self, flag: str) -> str:
        how = {"true": "store_true", "false": f"store_false, dest={self.dest}"}.get(
            self.kind, f"default {self.default}"
        )
        return f"{SOURCE} ~L{self.line} {flag} ({how})"


FLAGS: dict[str, Flag] = {
    # data parallel and the optimizer
    "--use-distributed-optimizer": Flag("use_distributed_optimizer", "true", "False", 2348),
    "--overlap-grad-reduce": Flag("overlap_grad_reduce", "true", "False", 2295),
    "--overlap-param-gather": Flag("overlap_param_gather", "true", "False", 2319),
    "--accumulate-allreduce-grads-in-fp32": Flag("accumulate_allreduce_grads_in_fp32", "true", "False", 2225),
    "--grad-reduce-in-bf16": Flag("grad_reduce_in_bf16", "true", "False", 2204),
    "--use-torch-fsdp2": Flag("use_torch_fsdp2", "true", "False", 2378),
    "--use-custom-fsdp": Flag("use_custom_fsdp", "true", "False", 2356),
    # tensor, sequence, context and pipeline parallel communication
    "--tp-comm-overlap": Flag("tp_comm_overlap", "true", "False", 1811),
    "--sequence-parallel": Flag("sequence_parallel", "true", "False", 1939),
    "--no-async-tensor-model-parallel-allreduce": Flag("async_tensor_model_parallel_allreduce", "false", "True", 1930),
    "--no-overlap-p2p-communication": Flag("overlap_p2p_comm", "false", "True", 2284),
    "--cp-comm-type": Flag("cp_comm_type", "list", "['p2p']", 2386),
    # recompute
    "--recompute-granularity": Flag("recompute_granularity", "value", "None", 1733, ("full", "selective")),
    "--recompute-method": Flag("recompute_method", "value", "None", 1754, ("uniform", "block")),
    "--recompute-num-layers": Flag("recompute_num_layers", "int", "None", 1763),
    "--recompute-modules": Flag("recompute_modules", "list", "None", 1768),
    # kernels
    "--transformer-impl": Flag(
        "transformer_impl", "value", "transformer_engine", 1205, ("local", "transformer_engine")
    ),
    "--attention-backend": Flag(
        "attention_backend", "value", "auto", 1377, ("flash", "fused", "unfused", "local", "auto")
    ),
    "--use-flash-attn": Flag("use_flash_attn", "true", "False", 1903),
    "--cross-entropy-loss-fusion": Flag("cross_entropy_loss_fusion", "true", "False", 1897),
    "--cross-entropy-fusion-impl": Flag("cross_entropy_fusion_impl", "value", "native", 1900, ("native", "te")),
    "--no-gradient-accumulation-fusion": Flag("gradient_accumulation_fusion", "false", "True", 1941),
    "--enable-cuda-graph": Flag("enable_cuda_graph", "true", "False", 1248),
    "--cuda-graph-scope": Flag("cuda_graph_scope", "value", "full", 1255, ("full", "attn")),
    # precision
    "--bf16": Flag("bf16", "true", "False", 2202),
    "--fp16": Flag("fp16", "true", "False", 2200),
    "--fp8-format": Flag("fp8", "value", "None", 1179, ("e4m3", "hybrid")),
    "--fp8-recipe": Flag("fp8_recipe", "value", "delayed", 1184, ("tensorwise", "delayed", "mxfp8", "blockwise")),
    "--fp8-param-gather": Flag("fp8_param_gather", "true", "False", 1208),
    # mixture of experts
    "--moe-grouped-gemm": Flag("moe_grouped_gemm", "true", "False", 2725),
    "--moe-token-dispatcher-type": Flag(
        "moe_token_dispatcher_type", "value", "allgather", 2790, ("allgather", "alltoall", "flex")
    ),
    # the layout: checked against the row's columns
    "--tensor-model-parallel-size": Flag("tensor_model_parallel_size", "int", "1", 2243),
    "--pipeline-model-parallel-size": Flag("pipeline_model_parallel_size", "int", "1", 2248),
    "--context-parallel-size": Flag("context_parallel_size", "int", "1", 2384),
    "--expert-model-parallel-size": Flag("expert_model_parallel_size", "int", "1", 2700),
    "--micro-batch-size": Flag("micro_batch_size", "int", "None", 1697),
    "--global-batch-size": Flag("global_batch_size", "int", "None", 1704),
    "--seq-length": Flag("seq_length", "int", "None", 2517),
}
# layout flags -> the validate column they must agree with
LAYOUT_COLUMNS = {
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp",
    "expert_model_parallel_size": "ep",
    "micro_batch_size": "micro_batch",
    "global_batch_size": "global_batch",
    "seq_length": "seq_len",
}


@dataclass(frozen=True)
class Parsed:
    """A command line read against FLAGS: the argument-dump fields it states (dest -> value as a dump prints it),
    which flags it gave for each dest, and the flags FLAGS does not list (left to the run, they set no feature)."""

    given: dict[str, str]
    flags: dict[str, str]  # dest -> the flag as written
    ignored: tuple[str, ...]

    def dump(self, defaults: bool) -> dict[str, str]:
        """The argument dump: with `defaults`, every flag of FLAGS at its default unless given (a command line
        states them all), else only what was given (over a preset that already says the rest)."""
        base = {f.dest: f.default for f in FLAGS.values()} if defaults else {}
        return {**base, **self.given}


def parse(text: str, field: str = FIELD) -> Parsed:
    """`--flag [value ...]` tokens (shell quoting, `--flag=value` too) -> Parsed. A switch given a value, a value flag
    without one, a value argparse would refuse or a flag given twice with different values is an InputError naming
    `field` and the flag; words before the first flag (the launcher, the script) are skipped."""
    try:
        tokens = shlex.split(text)
    except ValueError as exc:
        raise InputError(field, "", f"not a command line ({exc})") from None
    given: dict[str, str] = {}
    flags: dict[str, str] = {}
    ignored: list[str] = []
    i = 0
    while i < len(tokens) and not tokens[i].startswith("--"):
        i += 1
    while i < len(tokens):
        tok = tokens[i]
        name, eq, inline = tok.partition("=")
        i += 1
        values = [inline] if eq else []
        while i < len(tokens) and not tokens[i].startswith("--"):
            values.append(tokens[i])
            i += 1
        spec = FLAGS.get(name)
        if spec is None:
            ignored.append(name)
            continue
        value = _value(spec, name, values, field)
        if spec.dest in given and given[spec.dest] != value:
            raise InputError(field, name, f"given twice with different values ({given[spec.dest]} and {value})")
        given[spec.dest], flags[spec.dest] = value, name
    if "True" == given.get("bf16") == given.get("fp16"):
        raise InputError(field, "--fp16", "--bf16 and --fp16 both given")
    return Parsed(given, flags, tuple(ignored))


def _value(spec: Flag, name: str, values: list[str], field: str) -> str:
    if spec.kind in ("true", "false"):
        if values:
            raise InputError(field, name, f"a switch takes no value (got {' '.join(values)!r})")
        return "True" if spec.kind == "true" else "False"
    if spec.kind == "list":
        if not values:
            raise InputError(field, name, "expects one or more values")
        return repr(values)
    if len(values) != 1:
        raise InputError(field, name, f"expects one value (got {len(values)})")
    v = values[0]
    if spec.kind == "int":
        if not (v.isascii() and v.isdigit()) or int(v) < 1:
            raise InputError(field, name, f"expects a positive integer (got {v!r})")
        return v
    if spec.choices and v not in spec.choices:
        raise InputError(field, name, f"must be one of {', '.join(spec.choices)} (got {v!r})")
    return v


def validated(dump: dict[str, str], tp: int, field: str = FIELD) -> dict[str, str]:
    """The values Megatron-LM's validate_args leaves in the arguments (what an argument dump prints), from the
    parsed ones (SOURCE): with --bf16, gradients accumulate and all-reduce in fp32 unless --grad-reduce-in-bf16
    (~L674-689); sequence parallelism is switched off at tp = 1 (~L849-853); --tp-comm-overlap asserts sequence
    parallelism (~L855-856), so a command line with one and not the other did not run: an InputError."""
    d = dict(dump)
    if d.get("bf16") == "True":
        d["accumulate_allreduce_grads_in_fp32"] = "False" if d.get("grad_reduce_in_bf16") == "True" else "True"
    if tp == 1 and "sequence_parallel" in d:
        d["sequence_parallel"] = "False"
    if d.get("tp_comm_overlap") == "True" and d.get("sequence_parallel") != "True" and tp > 1:
        raise InputError(field, "--tp-comm-overlap", "needs --sequence-parallel (Megatron-LM asserts it)")
    return d


def precision_of(p: Parsed) -> str | None:
    """The precision family the flags state (bf16, fp16, fp8), None when they state none."""
    if p.given.get("fp8", "None") != "None":
        return "fp8"
    if p.given.get("bf16") == "True":
        return "bf16"
    if p.given.get("fp16") == "True":
        return "fp16"
    return None


def recompute_of(p: Parsed, defaults: bool) -> str | None:
    """The recompute mode the flags state (none, selective, full); without --recompute-granularity a full command
    line (`defaults`) states none (argparse default None), a partial one states nothing."""
    g = p.given.get("recompute_granularity")
    if g is None:
        return "none" if defaults else None
    return g
