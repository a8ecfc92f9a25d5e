"""The run a training log states (perfmodel/analysis/logparse.py reads it): the model shape, the layout, the
precision and the stack switches its argument dump, Megatron-Bridge config or torchtitan job config and start-up
lines state, each with where it came from (the log, or --arg NAME=VALUE). perfmodel/analysis/logcheck.py measures
that run and predicts it.

Nothing is guessed silently: a field perfmodel needs that the log does not state is named in `Built.missing`, with
how to give it; defaults that follow from the framework's own code are listed as notes. A field that the log states
inconsistently (a --gpus that is not the log's world size, a batch that varies) is an InputError.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple, get_args

from perfmodel.analysis.logparse import ParsedLog, software_label
from perfmodel.errors import InputError
from perfmodel.specs.counts import param_counts
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec, load_model
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import PARAM_SHARDING, RecomputeModule

RECOMPUTE_MODULES = get_args(RecomputeModule)

# the device names the logs print (torch.cuda.get_device_name: torchtitan's capacity line, ROCm tools) -> catalog id;
# only names that identify one catalog entry without doubt (an NVL72 rack or a PCIe card is not guessed). ROCm names
# its device 'AMD Instinct MI300X' (pytorch/ao PR #2853: get_device_properties on MI300X), 'AMD Instinct MI300X VF'
# in an Azure VM (the same GPU behind SR-IOV)
DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H800": "h800-sxm",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA B200": "b200",
    "AMD Instinct MI300X": "mi300x",
    "AMD Instinct MI300X VF": "mi300x",
}


class Stated(NamedTuple):
    """A stack feature the log (or --arg) states: its value as --stack-set takes it, the field(s) saying so, and
    where they came from ("log" or "--arg")."""

    value: str
    how: str
    origin: str = "log"


@dataclass
class Run:
    """A run as the log states it, ready to predict."""

    model: ModelSpec
    model_source: str
    layout: Layout
    precision: str
    framework: str
    notes: list[str] = field(default_factory=list)
    stated: dict[str, Stated] = field(default_factory=dict)  # stack feature -> what the log states
    read: list[str] = field(default_factory=list)  # switches read that set no feature (and why)
    software: str = ""  # the release the log names (NeMo container banner), else ""
    compiled: bool = False  # torchtitan: torch.compile on
    states: str = "Megatron-LM argument dump"  # what in the log states the run


@dataclass
class Facts:
    """What the measurement needs besides the logged times: the global batch, the sequence length and the GPU count
    (None where neither the log nor a flag states it), each with where it came from."""

    gbs: int | None = None
    seq: int | None = None
    gpus: int | None = None
    gbs_from: str = ""
    seq_from: str = ""
    gpus_from: str = ""

    def __post_init__(self) -> None:
        """A count no run has (a corrupted line: 400 digits, 0, a negative) is one error naming where it came
        from, not a number the measurement divides by."""
        for name, v, limit, where in (
            ("global batch", self.gbs, 2**40, self.gbs_from),
            ("sequence length", self.seq, 2**40, self.seq_from),
            ("GPU count", self.gpus, 2**31, self.gpus_from),
        ):
            if v is not None and not 0 < v < limit:
                raise InputError("log", where or name, f"{v}: not a {name}")


@dataclass
class Built:
    """The outcome of reading a log's run: the run when every field is stated (else None and `missing`, each with
    how to give it), the measurement's facts, and what could be read of the model and precision anyway."""

    framework: str
    run: Run | None
    missing: list[str]
    facts: Facts
    model: ModelSpec | None = None
    precision: str | None = None
    notes: list[str] = field(default_factory=list)
    given: list[str] = field(default_factory=list)  # the --arg fields the run used
    min_warmup: int = 0  # intervals after a start the framework's own averaging spreads its first steps over


class _Fields:
    """Argument-dump fields (Megatron, or Megatron-Bridge's config under Megatron's names) or the flattened job
    config (torchtitan), --arg overrides first. Every field read that is absent goes to `missing` with how to
    give it; `labels` names a field as the log printed it (Bridge 'model.num_layers')."""

    def __init__(self, args: dict[str, str], overrides: dict[str, str], labels: dict[str, str] | None = None):
        self.args, self.over, self.labels = args, overrides, labels or {}
        self.missing: list[str] = []
        self.given: set[str] = set()
        self.sac: str | None = None  # torchtitan selective_ac_option of a selective run (_tt_recompute)

    def _get(self, name: str) -> str | None:
        if name in self.over:
            self.given.add(name)
            return self.over[name]
        return self.args.get(name)

    def raw(self, *names: str) -> str | None:
        for n in names:
            if self.present(n):
                v = (self._get(n) or "").strip()
                return None if v in ("None", "") else v
        return None

    def present(self, name: str) -> bool:
        return name in self.over or name in self.args

    def origin(self, *names: str) -> str:
        """'--arg' when any of the fields is given with --arg, else 'log'."""
        return "--arg" if any(n in self.over for n in names) else "log"

    def said(self, name: str) -> str:
        """'field=value' as the log (or --arg) states it."""
        if name in self.over:
            return f"--arg {name}={self.over[name]}"
        return f"{self.labels.get(name, name)}={self.args.get(name)}"

    def need(self, name: str, *aliases: str) -> str | None:
        v = self.raw(name, *aliases)
        if v is None:
            self.missing.append(f"{name} (give --arg {name}=VALUE)")
        return v

    def int(self, name: str, *aliases: str, default: int | None = None) -> int | None:
        v = self.raw(name, *aliases)
        if v is None:
            if default is None:
                self.missing.append(f"{name} (give --arg {name}=N)")
            return default
        try:
            f = float(v)
            if not math.isfinite(f) or f != int(f):
                raise ValueError
            return int(f)
        except ValueError:
            raise InputError("log", name, f"not an integer ({v!r})") from None

    def peek_int(self, *names: str) -> int | None:
        """The field as an integer without recording it as missing (None when absent or not an integer)."""
        v = self.raw(*names)
        try:
            return int(float(v)) if v is not None else None
        except (ValueError, OverflowError):  # not a number, or inf
            return None

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        v = self.raw(name)
        if v is None:
            return default
        if v in ("True", "true", "1"):
            return True
        if v in ("False", "false", "0"):
            return False
        raise InputError("log", name, f"not True/False ({v!r})")


Fields = _Fields


# ---- Megatron-Bridge's config under Megatron-LM's argument names ---------------------------------------------------

# AttnBackend (Megatron-LM megatron/core/transformer/enums.py @d580efc): the enum's values, as Bridge prints it
ATTN_BACKEND = {"1": "flash", "2": "fused", "3": "unfused", "4": "local", "5": "auto"}
# ConfigContainer sections whose fields carry Megatron-LM's argument names (Bridge v0.2.0 training/config.py:
# TrainingConfig, DistributedDataParallelConfig, OptimizerConfig; MCore TransformerConfig for `model`)
_BRIDGE_SECTIONS = ("model", "train", "ddp", "optimizer", "comm_overlap")
# Bridge mixed_precision recipe names (training/mixed_precision.py @7af9601) -> the Megatron-LM fields they set
_BRIDGE_PRECISION = {
    "bf16_mixed": {"bf16": "True"},
    "fp16_mixed": {"fp16": "True"},
    "bf16_with_fp8_delayed_scaling_mixed": {"bf16": "True", "fp8": "hybrid", "fp8_recipe": "delayed"},
    "bf16_with_fp8_current_scaling_mixed": {"bf16": "True", "fp8": "hybrid", "fp8_recipe": "tensorwise"},
    "bf16_with_fp8_subchannel_scaling_mixed": {"bf16": "True", "fp8": "e4m3", "fp8_recipe": "blockwise"},
    "bf16_with_mxfp8_mixed": {"bf16": "True", "fp8": "e4m3", "fp8_recipe": "mxfp8"},
    "bf16_with_nvfp4_mixed": {"bf16": "True", "fp4": "e2m1"},
}


def bridge_args(config: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Megatron-Bridge's printed ConfigContainer (flattened: 'model.num_layers') -> (Megatron-LM argument names ->
    value, name -> the config key it came from). The sections of _BRIDGE_SECTIONS keep their field names (MCore
    TransformerConfig / ModelParallelConfig, DDP config, TrainingConfig), a later section never overriding an
    earlier one; the fields that Megatron-LM names otherwise are translated: num_moe_experts -> num_experts,
    gated_linear_unit with silu -> swiglu, share_embeddings_and_output_weights -> untie_embeddings_..., the DDP
    grad_reduce_in_fp32 -> accumulate_allreduce_grads_in_fp32 (Megatron-LM training.py @d580efc l.1001 sets the one
    from the other), dataset.sequence_length -> seq_length, the attention_backend enum and the mixed-precision
    recipe to their fields."""
    args: dict[str, str] = {}
    labels: dict[str, str] = {}

    def put(name: str, value: str | None, key: str) -> None:
        if value is not None and name not in args:
            args[name], labels[name] = value, key

    for sec in _BRIDGE_SECTIONS:
        for k, v in config.items():
            s, _, name = k.partition(".")
            if s == sec and name and "." not in name and not name.startswith("_"):
                put(name, v, k)
    for key in ("dataset.sequence_length", "dataset.seq_length"):
        if key in config:  # the training sequence (Bridge validate asserts model.seq_length equals it)
            args["seq_length"], labels["seq_length"] = config[key], key
            break
    put("num_experts", config.get("model.num_moe_experts"), "model.num_moe_experts")
    glu, act = config.get("model.gated_linear_unit"), config.get("model.activation_func._target_", "")
    if glu is not None:
        put("swiglu", str(glu == "True" and act.endswith("silu")), "model.gated_linear_unit, model.activation_func")
    share = config.get("model.share_embeddings_and_output_weights")
    if share is not None:
        put("untie_embeddings_and_output_weights", str(share != "True"), "model.share_embeddings_and_output_weights")
    groups, heads = config.get("model.num_query_groups"), config.get("model.num_attention_heads")
    if groups not in (None, "None") and heads:
        put("group_query_attention", str(groups != heads), "model.num_query_groups")
    put("accumulate_allreduce_grads_in_fp32", config.get("ddp.grad_reduce_in_fp32"), "ddp.grad_reduce_in_fp32")
    backend = _literal_list(config.get("model.attention_backend._args_"))
    if backend and backend[0] in ATTN_BACKEND:
        args["attention_backend"] = f"AttnBackend.{ATTN_BACKEND[backend[0]]}"
        labels["attention_backend"] = "model.attention_backend"
    mp = config.get("mixed_precision")
    for name, v in _BRIDGE_PRECISION.get(mp or "", {}).items():
        put(name, v, f"mixed_precision={mp}")
    for name in ("bf16", "fp16", "fp8", "fp8_recipe", "fp4"):
        put(name, config.get(f"mixed_precision.{name}"), f"mixed_precision.{name}")
    return args, labels


def _literal_list(raw: str | None) -> list[str]:
    if not raw:
        return []
    try:
        v = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return []
    return [str(x) for x in v] if isinstance(v, (list, tuple)) else []


# ---- the model ----------------------------------------------------------------------------------


def _why(exc: ValueError) -> str:
    """The first problem of a ModelSpec that would not build, as 'field: message' (pydantic's last line is a URL)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        e = errors()[0]
        loc = ".".join(str(x) for x in e.get("loc", ()))
        return f"{loc}: {e['msg']}" if loc else str(e["msg"])
    return str(exc).splitlines()[0]


def _catalog() -> list[ModelSpec]:
    return [load_model(p.stem) for p in sorted(data_dir("models").glob("*.toml"))]


def _shape(m: ModelSpec) -> tuple:
    a = m.attention
    moe = (
        (m.moe.num_experts, m.moe.top_k, m.moe.expert_intermediate_size, m.moe.shared_experts * m.moe.shared_width)
        if m.moe
        else None
    )
    mla = (
        (a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim)
        if a.kind == "mla"
        else None
    )
    dense = m.ffn.intermediate_size if m.num_dense_ffn_layers else 0
    return (
        m.num_layers,
        m.hidden_size,
        a.num_heads,
        a.num_kv_heads,
        a.head_dim if a.kind != "mla" else 0,
        dense,
        moe,
        mla,
        m.mtp_layers,
    )


def match_catalog(spec: ModelSpec, vocab_padded: int, pad_multiple: int) -> list[ModelSpec]:
    """Catalog models with the same shape; the vocabulary equal to the unpadded one, or padded up to a
    multiple of make_vocab_size_divisible_by x tp (Megatron's _vocab_size_with_padding)."""
    out = []
    for c in _catalog():
        if _shape(c) != _shape(spec):
            continue
        v_ok = c.vocab_size == spec.vocab_size or (
            vocab_padded
            and c.vocab_size <= vocab_padded < c.vocab_size + max(pad_multiple, 1)
            and vocab_padded % max(pad_multiple, 1) == 0
        )
        if v_ok:
            out.append(c)
    return out


def _layer_freq(raw: str | None, layers: int) -> tuple[int, int] | None:
    """moe_layer_freq as printed (an int, or a list of 0/1 per layer) -> (first_dense_layers, interval)."""
    if raw is None:
        return 0, 1
    if re.fullmatch(r"\d+", raw):
        return 0, int(raw)
    bits = [int(b) for b in re.findall(r"\d+", raw)]
    if len(bits) != layers or set(bits) - {0, 1}:
        return None
    first = bits.index(1) if 1 in bits else layers
    for iv in range(1, layers + 1):  # ModelSpec: layer i is MoE when i >= first and (i + 1) % interval == 0
        if all(b == int(i >= first and (i + 1) % iv == 0) for i, b in enumerate(bits)):
            return first, iv
    return None


def _megatron_attention(f: _Fields, h: int, heads: int, kv: int) -> dict[str, Any]:
    mla = f.bool("multi_latent_attention", False)
    attn: dict[str, Any] = {
        "kind": "mla" if mla else ("gqa" if kv < heads else "mha"),
        "num_heads": heads,
        "num_kv_heads": heads if mla else kv,
        "head_dim": f.int("kv_channels", default=h // heads),
        "qkv_bias": bool(f.bool("add_qkv_bias", False) or f.bool("add_bias_linear", False)),
        "o_bias": bool(f.bool("add_bias_linear", False)),
        "qk_norm": "rmsnorm" if f.bool("qk_layernorm", False) else "none",
    }
    if mla:
        attn.update(
            q_lora_rank=f.int("q_lora_rank", default=0),
            kv_lora_rank=f.int("kv_lora_rank"),
            qk_nope_head_dim=f.int("qk_head_dim"),
            qk_rope_head_dim=f.int("qk_pos_emb_head_dim"),
            v_head_dim=f.int("v_head_dim"),
        )
    return attn


def _megatron_moe(f: _Fields, layers: int, ffn: int) -> dict[str, Any] | None:
    experts = f.int("num_experts", default=0)
    if not experts:
        return None
    pattern = _layer_freq(f.raw("moe_layer_freq"), layers)
    if pattern is None:
        f.missing.append("moe_layer_freq (a layer pattern perfmodel cannot express: give --model)")
        pattern = (0, 1)
    shared = f.int("moe_shared_expert_intermediate_size", default=0) or 0
    return {
        "num_experts": experts,
        "top_k": f.int("moe_router_topk"),
        "expert_intermediate_size": f.int("moe_ffn_hidden_size", default=ffn),
        "shared_experts": 1 if shared else 0,
        "shared_intermediate_size": shared,
        "first_dense_layers": pattern[0],
        "interval": pattern[1],
    }


def _megatron_doc(f: _Fields, layers: int, h: int, ffn: int, vocab: int, attn: dict, moe: dict | None) -> dict:
    """The ModelSpec document of a Megatron shape."""
    norm = (f.raw("normalization") or "").lower()
    swiglu = f.bool("swiglu")
    doc: dict[str, Any] = {
        "id": "log-model",
        "name": "model of the log's " + ("Megatron-Bridge config" if "num_layers" in f.labels else "argument dump"),
        "num_layers": layers,
        "hidden_size": h,
        "vocab_size": vocab,
        "tied_embeddings": not f.bool("untie_embeddings_and_output_weights", False),
        "position_embedding": {"rope": "rope", "learned_absolute": "learned", "none": "none"}.get(
            f.raw("position_embedding_type") or "rope", "rope"
        ),
        "norm": "rmsnorm" if norm == "rmsnorm" else "layernorm",
        "attention": attn,
        "ffn": {
            "activation": "swiglu" if swiglu else ("squared_relu" if f.bool("squared_relu", False) else "gelu"),
            "intermediate_size": ffn if (not moe or moe["first_dense_layers"] or moe["interval"] > 1) else 0,
            "bias": bool(f.bool("add_bias_linear", False)),
        },
        "mtp_layers": f.int("mtp_num_layers", default=0) or 0,
        "seq_len": f.int("seq_length", default=4096) or 4096,
    }
    if moe:
        doc["moe"] = moe
    return doc


def megatron_model(f: _Fields, log: ParsedLog, tp: int) -> tuple[ModelSpec | None, str, int, int]:
    """The model the argument dump describes (None if a shape field is missing) -> (spec, how named,
    padded vocab, padding multiple)."""
    before = len(f.missing)
    L = f.int("num_layers")
    h = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    ffn = f.int("ffn_hidden_size")
    kv = f.int("num_query_groups") if f.bool("group_query_attention", False) else heads
    vocab = log.vocab_unpadded or f.int("vocab_size", default=0) or 0
    padded = log.vocab_padded or f.int("padded_vocab_size", default=0) or 0
    if not vocab and not padded:
        f.missing.append(
            "vocab_size (no ' > padded vocab' line and no vocab_size in the dump; give --arg vocab_size=N or --model)"
        )
    if None in (L, h, heads, ffn, kv):
        return None, "", 0, 0
    _positive_fields(num_layers=L, hidden_size=h, num_attention_heads=heads, ffn_hidden_size=ffn, num_query_groups=kv)
    assert L and h and heads and ffn and kv
    attn = _megatron_attention(f, h, heads, kv)
    moe = _megatron_moe(f, L, ffn)
    if len(f.missing) > before:
        return None, "", 0, 0
    try:
        spec = ModelSpec(**_megatron_doc(f, L, h, ffn, vocab or padded, attn, moe))
    except ValueError as exc:
        raise InputError(
            "log",
            "model",
            f"the argument dump's shape is not a model perfmodel can build ({_why(exc)}); give --model",
        ) from None
    mult = (f.int("make_vocab_size_divisible_by", default=128) or 128) * tp
    found = match_catalog(spec, padded, mult)
    if found:
        others = f" (same shape: {', '.join(c.id for c in found[1:])})" if len(found) > 1 else ""
        return found[0], f"catalog {found[0].id}, matched by the dump's shape fields{others}", padded, mult
    missing_build = [n for n in ("swiglu", "normalization", "untie_embeddings_and_output_weights") if not f.present(n)]
    if missing_build:
        f.missing.extend(
            f"{n} (no catalog model has this shape; give --arg {n}=VALUE or --model)" for n in missing_build
        )
        return None, "", 0, 0
    return spec, "built from the dump's shape fields (no catalog model has this shape)", padded, mult


def _attention(heads: int, kv: int, head_dim: int, **extra: object) -> dict[str, object]:
    """A log-built model's attention table: GQA where fewer K/V heads than query heads, else MHA."""
    return {
        "kind": "gqa" if kv < heads else "mha",
        "num_heads": heads,
        "num_kv_heads": kv,
        "head_dim": head_dim,
        **extra,
    }


def torchtitan_model(log: ParsedLog, f: _Fields) -> tuple[ModelSpec | None, str]:
    """A Llama-family model from torchtitan's 'Building NAME FLAVOR with TransformerModelArgs(...)' line.
    FFN width as torchtitan's llama3 FeedForward (models/llama3/model/model.py): hidden = int(2 * 4 dim / 3),
    times ffn_dim_multiplier when set, rounded up to a multiple of multiple_of."""
    a = log.model_args
    name = log.model_name.split(" ")[0] if log.model_name else (f.raw("model.name") or "")
    if not a:
        f.missing.append("model (no 'Building ... with ...ModelArgs(...)' line; give --model ID|config.json)")
        return None, ""
    if not name.startswith("llama") or any(k in a for k in ("moe_args", "num_experts", "n_routed_experts")):
        f.missing.append(f"model (torchtitan '{name}' model args are read for Llama dense models only; give --model)")
        return None, ""
    try:
        dim, L, heads = int(a["dim"]), int(a["n_layers"]), int(a["n_heads"])
        kv = int(a["n_kv_heads"]) if a.get("n_kv_heads", "None") != "None" else heads
        vocab = int(a["vocab_size"])
        mult = int(a.get("multiple_of", "256"))
        fdm = a.get("ffn_dim_multiplier", "None")
    except (KeyError, ValueError) as exc:
        f.missing.append(f"model ({exc} not readable in the model args; give --model)")
        return None, ""
    try:  # torchtitan's FeedForward: hidden = multiple_of x ceil(ffn_dim_multiplier x 8 dim / 3 / multiple_of)
        hidden = int(2 * 4 * dim / 3)
        if fdm not in ("None", ""):
            hidden = int(float(fdm) * hidden)
        hidden = mult * ((hidden + mult - 1) // mult)
        spec = ModelSpec(
            id="log-model",
            name=f"torchtitan {log.model_name}",
            num_layers=L,
            hidden_size=dim,
            vocab_size=vocab,
            attention=_attention(heads, kv, dim // heads),
            ffn={"activation": "swiglu", "intermediate_size": hidden},
        )
    except (ValueError, OverflowError, ZeroDivisionError) as exc:  # pydantic's ValidationError is a ValueError
        lines = str(exc).splitlines()
        reason = (lines[1] if "validation error" in lines[0] and len(lines) > 1 else lines[0]).split(" [type=")[0]
        reason = reason.strip().removeprefix("Value error, ")
        raise InputError("log", "model args", f"no model of this shape ({reason})") from None
    found = match_catalog(spec, 0, 1)
    if found:
        return found[0], f"catalog {found[0].id}, matched by the model args' shape"
    return spec, "built from torchtitan's model args (no catalog model has this shape)"


# ---- the precision ----------------------------------------------------------------------------


def _precision_megatron(f: _Fields, notes: list[str]) -> str | None:
    if f.raw("fp4"):
        return "nvfp4"
    if f.raw("fp8"):
        recipe = f.raw("fp8_recipe")
        if recipe is None:
            notes.append(
                "fp8_recipe absent from the dump: Megatron-LM's default 'delayed' (arguments.py "
                "@000c4ac --fp8-recipe) -> fp8"
            )
            recipe = "delayed"
        prec = {"delayed": "fp8", "tensorwise": "fp8", "mxfp8": "mxfp8", "blockwise": "fp8-block"}.get(recipe)
        if prec is None:
            raise InputError(
                "log",
                "fp8_recipe",
                f"recipe {recipe!r} has no perfmodel precision (tensorwise, delayed, mxfp8, blockwise)",
            )
        return prec
    if f.bool("bf16"):
        return "bf16"
    if f.bool("fp16"):
        return "fp16"
    f.missing.append("precision (the dump sets none of bf16, fp16, fp8, fp4; give --arg bf16=True)")
    return None


# ---- the stack the log states -------------------------------------------------------------------


def _list(raw: str | None) -> list[str] | None:
    """A printed Python list ("['core_attn', 'mlp']") or a bare word -> its items; None for None."""
    if raw is None:
        return None
    try:
        v = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        v = raw
    items = v if isinstance(v, (list, tuple)) else [v]
    return [str(x).strip() for x in items if str(x).strip()]


def _tf(b: bool) -> str:
    return "true" if b else "false"


class _Sets:
    """The stack features a Megatron argument dump states, collected with where each came from."""

    def __init__(self, f: _Fields, notes: list[str]):
        self.f, self.notes = f, notes
        self.out: dict[str, Stated] = {}
        self.read: list[str] = []

    def put(self, feature: str, value: str, *names: str, how: str = "") -> None:
        f = self.f
        how = how or ", ".join(f.said(n) for n in names if f.present(n))
        self.out[feature] = Stated(value, how, f.origin(*names))

    def flag(self, name: str) -> bool | None:
        return self.f.bool(name) if self.f.present(name) else None


def _overlap_sets(s: _Sets) -> None:
    if (v := s.flag("tp_comm_overlap")) is not None:  # Transformer Engine userbuffers (--tp-comm-overlap)
        s.put("tp_overlap", "userbuffers" if v else "none", "tp_comm_overlap")
    if (v := s.flag("overlap_grad_reduce")) is not None:
        s.put("dp_grad_reduce_overlap", _tf(v), "overlap_grad_reduce")
    if (v := s.flag("overlap_param_gather")) is not None:
        s.put("dp_param_gather_overlap", _tf(v), "overlap_param_gather")
    if (v := s.flag("sequence_parallel")) is not None:
        s.put("sequence_parallel", _tf(v), "sequence_parallel")
    if (v := s.flag("gradient_accumulation_fusion")) is not None:  # --no-gradient-accumulation-fusion
        s.put("grad_accumulation_fusion", _tf(v), "gradient_accumulation_fusion")
    if (v := s.flag("overlap_p2p_comm")) is not None:
        # --no-overlap-p2p-communication (store_false, dest overlap_p2p_comm): core_transformer_config_from_args sets
        # batch_p2p_comm = not overlap_p2p_comm (megatron/training/arguments.py @c550cf6c41 ~L1132)
        s.put("pp_p2p_overlap", _tf(v), "overlap_p2p_comm")
    if s.f.present("async_tensor_model_parallel_allreduce"):
        s.read.append(
            f"{s.f.said('async_tensor_model_parallel_allreduce')} (parsed by Megatron-LM but read by no Megatron-Core "
            "layer at @c550cf6c41: LinearWithGradAccumulationAndAsyncCommunication decides its async dgrad "
            "collective itself; the preset's tp_bwd_async kept)"
        )


def _loss_sets(s: _Sets) -> None:
    f = s.f
    if (v := s.flag("cross_entropy_loss_fusion")) is not None:  # the 'native' fused loss also works in fp32
        impl = (f.raw("cross_entropy_fusion_impl") or "native").strip("'\"")
        s.put(
            "cross_entropy",
            "te" if v and impl == "te" else "fp32",
            "cross_entropy_loss_fusion",
            "cross_entropy_fusion_impl",
            how=f"{f.said('cross_entropy_loss_fusion')}, cross_entropy_fusion_impl={impl}",
        )


def _recompute_sets(s: _Sets, recompute: str) -> None:
    f = s.f
    if not f.present("recompute_granularity"):
        return
    s.put("recompute", recompute, "recompute_granularity")
    mods = _list(f.raw("recompute_modules"))
    if recompute == "selective" and mods:
        known = [m for m in mods if m in RECOMPUTE_MODULES]
        if len(known) < len(mods):
            s.notes.append(
                f"recompute_modules {', '.join(m for m in mods if m not in known)}: not a module "
                "perfmodel models; the rest are recomputed"
            )
        s.put("recompute_modules", ",".join(known) or "none", "recompute_modules")
    elif recompute == "selective":  # Megatron-LM arguments.py: --recompute-modules defaults to core_attn
        s.put(
            "recompute_modules",
            "core_attn",
            "recompute_granularity",
            how=f"{f.said('recompute_granularity')}, recompute_modules=None (Megatron-LM default ['core_attn'])",
        )


def _moe_sets(s: _Sets) -> None:
    f = s.f
    if not f.int("num_experts", default=0):
        return
    disp = f.raw("moe_token_dispatcher_type")
    if disp is not None:
        backend = (f.raw("moe_flex_dispatcher_backend") or "").lower()
        if disp == "flex":
            kind = "hybridep" if backend == "hybridep" else "deepep"
            how = f"moe_token_dispatcher_type=flex, moe_flex_dispatcher_backend={backend or 'None (deepep)'}"
        else:
            kind = {"allgather": "allgather", "alltoall": "alltoall", "alltoall_seq": "alltoall"}.get(disp, "")
            how = f"moe_token_dispatcher_type={disp}"
        if f.bool("moe_enable_deepep", False):  # older Megatron-Core: --moe-enable-deepep with flex
            kind, how = "deepep", how + ", moe_enable_deepep=True"
        if kind:
            s.put("moe_dispatcher", kind, "moe_token_dispatcher_type", "moe_enable_deepep", how=how)
        else:
            s.notes.append(f"moe_token_dispatcher_type={disp}: not a dispatcher perfmodel models; the preset's kept")
    if (v := s.flag("moe_grouped_gemm")) is not None:
        s.put("grouped_gemm", "te" if v else "none", "moe_grouped_gemm")


def _precision_sets(s: _Sets, precision: str | None) -> None:
    f = s.f
    if precision and precision.startswith(("fp8", "mxfp8")) and f.raw("fp8_recipe"):
        r = f.raw("fp8_recipe") or ""
        kind = {"delayed": "delayed", "tensorwise": "current", "mxfp8": "mxfp8", "blockwise": "blockwise"}.get(r)
        if kind:
            s.put("fp8_recipe", kind, "fp8_recipe")
    if precision and precision.startswith(("fp8", "mxfp8")) and (v := s.flag("fp8_param_gather")) is not None:
        s.put("fp8_param_gather", _tf(v), "fp8_param_gather")  # --fp8-param-gather (store_true)


def _impl_sets(s: _Sets) -> None:
    """--transformer-impl local: Megatron-Core's own modules (pretrain_gpt.py @c550cf6c41 get_gpt_layer_local_spec;
    megatron/core/models/backends.py LocalSpecProvider.core_attention = DotProductAttention, which materialises the
    s x s scores), so no Transformer Engine attention kernel; transformer_engine keeps the preset's."""
    if (s.f.raw("transformer_impl") or "").strip("'\"") == "local" and not s.f.bool("use_legacy_models", False):
        s.put("attention_kernel", "unfused", "transformer_impl")


def _graph_sets(s: _Sets) -> None:
    f = s.f
    impl, enable, scope = f.raw("cuda_graph_impl"), s.flag("enable_cuda_graph"), _list(f.raw("cuda_graph_scope"))
    if impl is None and enable is None:
        return
    on = (impl not in (None, "none")) or bool(enable)
    full = bool(scope) and any(x in ("full_iteration", "full") for x in scope or [])
    names = [n for n in ("cuda_graph_impl", "enable_cuda_graph", "cuda_graph_scope") if f.raw(n) is not None]
    s.put("cuda_graphs", "full_iteration" if on and full else ("per_layer" if on else "none"), *names)


def _grad_sets(s: _Sets) -> None:
    acc, bf = s.flag("accumulate_allreduce_grads_in_fp32"), s.flag("grad_reduce_in_bf16")
    if acc is None and bf is None:
        return
    # Megatron-Core DDP: the main_grad buffer and the reduce use fp32 when grads accumulate in fp32
    fp32 = bool(acc) if acc is not None else not bf
    names = ("accumulate_allreduce_grads_in_fp32", "grad_reduce_in_bf16")
    s.put("main_grad_precision", "fp32" if fp32 else "bf16", *names)
    s.put("grad_reduce_precision", "fp32" if fp32 and not bf else "bf16", *names)


def _shard_sets(s: _Sets) -> None:
    f = s.f
    if f.bool("use_megatron_fsdp", False) or f.bool("use_custom_fsdp", False):
        s.put("fsdp", "megatron_fsdp", "use_megatron_fsdp", "use_custom_fsdp")
    elif f.bool("use_torch_fsdp2", False):
        s.put("fsdp", "fsdp2", "use_torch_fsdp2")
    elif (v := s.flag("use_distributed_optimizer")) is not None:
        s.put("fsdp", "zero1" if v else "none", "use_distributed_optimizer")
        if v:  # Megatron-Core DistributedOptimizer: sharded over the data-parallel group with context parallel
            s.put(
                "optimizer_shard",
                "dp_cp",
                "use_distributed_optimizer",
                how=f"{f.said('use_distributed_optimizer')} (Megatron-Core shards over dp x cp)",
            )
    cp = _list(f.raw("cp_comm_type"))
    if cp and f.int("context_parallel_size", default=1) != 1:
        kind = {"p2p": "p2p", "a2a": "a2a", "all_gather": "allgather", "allgather": "allgather", "a2a+p2p": "a2a_p2p"}
        if kind.get(cp[0]) and len(set(cp)) == 1:
            s.put("cp_comm_type", kind[cp[0]], "cp_comm_type")
        else:
            s.notes.append(f"cp_comm_type={cp}: not one kind perfmodel models; the preset's kept")


def _attention_sets(s: _Sets) -> None:
    f = s.f
    ab = (f.raw("attention_backend") or "").split(".")[-1].lower()
    legacy = bool(f.bool("use_legacy_models", False))
    flash = s.flag("use_flash_attn")
    if legacy and flash is not None:
        # megatron/legacy/model/transformer.py @d580efc ParallelAttention: the flash_attn package's
        # flash_attn_unpadded_func (FA1) or flash_attn_varlen_func (FA2), else the unfused core attention
        s.put("attention_kernel", "fa2" if flash else "unfused", "use_legacy_models", "use_flash_attn")
        return
    if flash is not None:
        s.read.append(
            f"{f.said('use_flash_attn')} (selects FlashAttention in Megatron-LM's legacy models only, "
            "megatron/legacy/model/transformer.py @d580efc; Megatron-Core models take attention_backend)"
        )
    if ab in ("fused", "unfused", "local"):
        # AttnBackend (megatron/core/transformer/enums.py): fused = TE cuDNN fused attention; local = Megatron's own
        # DotProductAttention (the s^2 scores and the dropout mask in HBM: `unfused`); unfused = TE's
        # UnfusedDotProductAttention (language_module.py @core_v0.12.0: NVTE_FLASH_ATTN=0, NVTE_FUSED_ATTN=0,
        # NVTE_UNFUSED_ATTN=1), `te_unfused` where TE's modules run (--transformer-impl transformer_engine, the
        # default) at attention dropout 0 (te_unfused prices no dropout); with dropout the nearest is `unfused`
        kernel = {"fused": "cudnn", "local": "unfused"}.get(ab)
        if kernel is None:
            impl = (f.raw("transformer_impl") or "transformer_engine").strip("'\"")
            drop = f.raw("attention_dropout")
            try:
                no_dropout = drop is not None and float(drop) == 0.0
            except ValueError:
                no_dropout = False
            kernel = "te_unfused" if impl == "transformer_engine" and no_dropout else "unfused"
        said = ("transformer_impl", "attention_dropout") if ab == "unfused" else ()
        s.put("attention_kernel", kernel, "attention_backend", *said)
    elif ab == "flash":
        s.read.append(
            f"{f.said('attention_backend')} (FlashAttention 2 or 3, whichever flash-attn package the run had "
            "installed, not in the log: the preset's attention kernel kept)"
        )
    elif ab == "auto":
        s.read.append(
            f"{f.said('attention_backend')} (Transformer Engine picks the kernel at run time: the preset's "
            "attention kernel kept)"
        )


def megatron_stack_sets(
    f: _Fields, recompute: str, precision: str | None, notes: list[str], read: list[str] | None = None
) -> dict[str, Stated]:
    """The stack features a Megatron argument dump states (megatron/training/arguments.py names), as
    feature -> Stated(--stack-set value, the dump field(s) saying so, "log" or "--arg"). A field absent from the
    dump states nothing: the feature stays the preset's. A value perfmodel cannot express is a note, not a guess;
    a switch read that sets no feature goes to `read` with why."""
    s = _Sets(f, notes)
    _overlap_sets(s)
    _loss_sets(s)
    _recompute_sets(s, recompute)
    _moe_sets(s)
    if (v := s.flag("overlap_moe_expert_parallel_comm")) is not None:
        s.put("moe_a2a_overlap", _tf(v), "overlap_moe_expert_parallel_comm")
    _precision_sets(s, precision)
    _graph_sets(s)
    _grad_sets(s)
    _shard_sets(s)
    _attention_sets(s)
    _impl_sets(s)
    if read is not None:
        read.extend(s.read)
    return s.out


# ---- Megatron-LM / Megatron-Bridge / NeMo -------------------------------------------------------------------


def _gpus(flag: int | None, stated: int | None, what: str) -> tuple[int | None, str]:
    """The GPU count: --gpus, else the log's; InputError when both are given and differ."""
    if flag and stated and flag != stated:
        raise InputError("gpus", str(flag), f"the log's {what} is {stated}")
    if flag:
        return flag, "--gpus"
    return (stated, f"the log's {what}") if stated else (None, "")


def _world_from_microbatches(log: ParsedLog, f: _Fields) -> int | None:
    """The world size Megatron-Core's micro-batch count implies: dp = gbs / (mbs x n), world = dp x tp x pp x cp
    (num_microbatches_calculator.py @d580efc ConstantNumMicroBatchesCalculator: n = gbs // (mbs x dp))."""
    n, gbs, mbs = log.microbatches, f.peek_int("global_batch_size"), f.peek_int("micro_batch_size")
    if not (n and gbs and mbs) or gbs % (mbs * n):
        return None
    model = 1
    for name in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
        model *= f.peek_int(name) or 1
    return gbs // (mbs * n) * model


def _megatron_facts(log: ParsedLog, f: _Fields, gpus_flag: int | None) -> Facts:
    world = f.peek_int("world_size") or log.world_size or None
    what = "world_size"
    if world is None and (world := _world_from_microbatches(log, f)):
        what = f"world size ('setting number of microbatches to constant {log.microbatches}': dp x tp x pp x cp)"
    gbs = f.peek_int("global_batch_size")
    gbs_from = f.said("global_batch_size") if gbs else ""
    if gbs is None and len(log.gbs_logged) == 1:
        gbs, gbs_from = next(iter(log.gbs_logged)), "the iteration lines' global batch size"
    seq = f.peek_int("seq_length", "encoder_seq_length")
    seq_from = f.said("seq_length") if f.present("seq_length") else ("encoder_seq_length" if seq else "")
    if seq is None and len(log.seq_logged) == 1:
        seq, seq_from = next(iter(log.seq_logged)), "the iteration lines' actual seqlen"
    if world is None and gbs and seq and (world := _world_from_tgs(log, gbs, seq)):
        what = "world size (the iteration lines' tokens per gpu per second: global batch x seq / (step x tgs))"
    gpus, gpus_from = _gpus(gpus_flag, world, what)
    return Facts(gbs, seq, gpus, gbs_from, seq_from, gpus_from)


def _positive_fields(**fields: int | None) -> None:
    """InputError naming the first of `fields` (as the log names it) that is stated but not positive."""
    for name, v in fields.items():
        if v is not None and v < 1:
            raise InputError("log", name, f"{v}: must be a positive integer")


def _world_from_tgs(log: ParsedLog, gbs: int, seq: int) -> int | None:
    """The world size Megatron-DeepSpeed's 'tokens per gpu per second (tgs)' implies: tgs = samples per second x
    seq / world_size with samples per second = global batch / step (microsoft/Megatron-DeepSpeed@00caa0e9
    megatron/training.py training_log), so world = gbs x seq / (step x tgs); the median over the intervals, taken
    where it is within 2% of a whole number (the printed rounding), else None."""
    if gbs * seq > 1e15:  # no run's tokens per step; and a float of it could overflow
        return None
    ws = sorted(gbs * seq / (t * r) for t, r in zip(log.step_s, log.tps) if t > 0 and r > 0)  # NaN fails both
    if not ws:
        return None
    w = ws[len(ws) // 2]
    n = round(w)
    return n if n >= 1 and abs(w - n) <= 0.02 * n else None


def _check_batch(log: ParsedLog, gbs: int | None) -> None:
    if len(log.gbs_logged) > 1:
        raise InputError(
            "log",
            "global batch size",
            f"varies in the log ({', '.join(map(str, sorted(log.gbs_logged)))}"
            "; batch-size ramp-up): check a log of a fixed batch",
        )
    if gbs and log.gbs_logged and gbs not in log.gbs_logged:
        raise InputError(
            "log", "global_batch_size", f"{gbs} in the dump but {min(log.gbs_logged)} in the iteration lines"
        )


def _megatron_recompute(f: _Fields, notes: list[str]) -> str:
    rec_raw = f.raw("recompute_granularity")
    if not f.present("recompute_granularity"):
        f.missing.append("recompute_granularity (give --arg recompute_granularity=None|selective|full)")
    recompute = {"selective": "selective", "full": "full", None: "none"}.get(rec_raw)
    if recompute is None:
        raise InputError("log", "recompute_granularity", f"{rec_raw!r}: one of None, selective, full")
    if recompute == "full" and f.raw("recompute_method") == "block" and f.raw("recompute_num_layers"):
        notes.append(
            f"full recompute of {f.raw('recompute_num_layers')} layers per stage (recompute_method=block) "
            "is modelled as full recompute of every layer"
        )
    return recompute


def _megatron_model_of(
    log: ParsedLog, f: _Fields, model_ref: str | None, tp: int, notes: list[str]
) -> tuple[ModelSpec | None, str]:
    if not model_ref:
        model, how, _, _ = megatron_model(f, log, tp)
        return model, how
    model = load_model(model_ref)
    differ = [
        f"{n}={f.raw(n)} vs {v}"
        for n, v in (
            ("num_layers", model.num_layers),
            ("hidden_size", model.hidden_size),
            ("num_attention_heads", model.attention.num_heads),
        )
        if f.raw(n) is not None and f.raw(n) != str(v)
    ]
    if differ:
        notes.append(f"--model {model_ref} differs from the dump's shape ({', '.join(differ)}): --model is used")
    return model, f"--model {model_ref}"


def _megatron_layout(
    f: _Fields, model: ModelSpec, gpus: int, degrees: tuple[int, int, int, int], mbs: int, gbs: int, seq: int, rec: str
) -> Layout:
    """The layout of a complete dump: virtual pipeline from either of its fields, expert TP defaulting to TP,
    FSDP from its switches, and the dump's data_parallel_size checked against the world size."""
    tp, pp, cp, ep = degrees
    vp = 1
    if f.raw("virtual_pipeline_model_parallel_size"):
        vp = f.int("virtual_pipeline_model_parallel_size") or 1
    elif f.raw("num_layers_per_virtual_pipeline_stage"):
        per = f.int("num_layers_per_virtual_pipeline_stage") or 1
        vp = max(1, model.num_layers // (pp * per))
    etp = 1
    if model.is_moe:
        etp = f.int("expert_tensor_parallel_size", default=0) or tp  # Megatron-Core: expert TP defaults to TP
    fsdp = bool(
        f.bool("use_torch_fsdp2", False) or f.bool("use_megatron_fsdp", False) or f.bool("use_custom_fsdp", False)
    )
    dp_dump = f.int("data_parallel_size", default=0)
    if dp_dump and gpus % (tp * pp * cp) == 0 and dp_dump != gpus // (tp * pp * cp):
        raise InputError(
            "log", "data_parallel_size", f"{dp_dump} but world_size / (tp * pp * cp) = {gpus // (tp * pp * cp)}"
        )
    return Layout(
        gpus=gpus, gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, mbs=mbs, fsdp=fsdp, recompute=rec
    )  # type: ignore[arg-type]


def megatron_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """The run of a Megatron-LM argument dump (or Megatron-Bridge's config, or --arg fields for NeMo)."""
    notes: list[str] = []
    framework = "nemo" if log.framework == "nemo" else "megatron"
    facts = _megatron_facts(log, f, gpus_flag)
    tp = f.int("tensor_model_parallel_size") or 1
    pp = f.int("pipeline_model_parallel_size") or 1
    mbs = f.int("micro_batch_size")
    # the iteration lines' batch and sequence (Megatron-DeepSpeed's 'actual seqlen') where no dump states them
    dumped = f.present("global_batch_size")
    gbs = facts.gbs if facts.gbs and (framework == "nemo" or not dumped) else f.int("global_batch_size")
    dumped = f.present("seq_length") or f.present("encoder_seq_length")
    seq = facts.seq if facts.seq and not dumped else f.int("seq_length", "encoder_seq_length")
    if facts.gpus is None:
        f.missing.append("world_size (give --gpus N)")
    defaults = []

    def opt(name: str, dflt: int) -> int:
        if not f.present(name):
            defaults.append(f"{name}={dflt}")
        return f.int(name, default=dflt) or dflt

    cp = opt("context_parallel_size", 1)
    ep = opt("expert_model_parallel_size", 1)
    if defaults and (f.args or f.over):
        notes.append("absent from the dump (the release predates the feature), taken as off: " + ", ".join(defaults))
    recompute = _megatron_recompute(f, notes)
    precision = _precision_megatron(f, notes)
    model, how = _megatron_model_of(log, f, model_ref, tp, notes)
    _check_batch(log, gbs)
    built = Built(framework, None, f.missing, facts, model, precision, notes)
    if f.missing or model is None or precision is None:
        return built
    _positive_fields(world_size=facts.gpus, micro_batch_size=mbs, global_batch_size=gbs, seq_length=seq)
    assert facts.gpus and mbs and gbs and seq
    lay = _megatron_layout(f, model, facts.gpus, (tp, pp, cp, ep), mbs, gbs, seq, recompute)
    read: list[str] = []
    stated = megatron_stack_sets(f, recompute, precision, notes, read)
    states = "Megatron-Bridge config" if "num_layers" in f.labels else "Megatron-LM argument dump"
    built.run = Run(model, how, lay, precision, framework, notes, stated, read, software_label(log), states=states)
    return built


# ---- torchtitan -------------------------------------------------------------------------------------------


def _tt(f: _Fields, key: str) -> str | None:
    """A torchtitan config value by its last component (sections moved between releases)."""
    v = f.raw(key)
    if v is not None:
        return v
    last = key.split(".")[-1]
    for src in (f.over, f.args):
        for k, val in src.items():
            if k.split(".")[-1] == last and val.strip() not in ("None", ""):
                if src is f.over:
                    f.given.add(k)
                return val.strip()
    return None


def _tt_int(f: _Fields, key: str, default: int | None = None) -> int | None:
    v = _tt(f, key)
    if v is None:
        if default is None:
            f.missing.append(f"{key} (give --arg {key}=N)")
        return default
    try:
        return int(float(v))
    except (ValueError, OverflowError):
        raise InputError("log", key, f"not an integer ({v!r})") from None


# torchtitan's mesh dimension names (parallelisms/parallel_dims.py @57387af build_mesh; v0.2.0 with EP) -> config key
_MESH = {
    "tp": "tensor_parallel_degree",
    "pp": "pipeline_parallel_degree",
    "cp": "context_parallel_degree",
    "dp_replicate": "data_parallel_replicate_degree",
    "dp_shard": "data_parallel_shard_degree",
}


def _tt_degree(f: _Fields, log: ParsedLog, name: str, default: int) -> int:
    """A parallel degree from the job config, else the device mesh line (which lists only the degrees above 1)."""
    v = _tt_int(f, f"parallelism.{_MESH[name]}", -999)
    if v != -999:
        return v if v is not None else default
    if log.mesh:
        return log.mesh.get(name, 1)
    return default


class _TTLayout(NamedTuple):
    tp: int
    pp: int
    cp: int
    ep: int
    rep: int
    shard: int


def _tt_layout(log: ParsedLog, f: _Fields, gpus: int) -> _TTLayout:
    tp, pp, cp = (_tt_degree(f, log, n, 1) for n in ("tp", "pp", "cp"))
    ep = _tt_int(f, "parallelism.expert_parallel_degree", 1) or 1
    rep = _tt_degree(f, log, "dp_replicate", 1)
    shard = _tt_degree(f, log, "dp_shard", -1)
    for name, d in (("dp_replicate", rep), ("tp", tp), ("pp", pp), ("cp", cp)):
        if d < 1:
            raise InputError("log", f"parallelism.{name}", f"{d}: must be a positive integer")
    if shard < 0:
        shard = gpus // (rep * tp * pp * cp)
    if rep * shard * tp * pp * cp != gpus:
        raise InputError(
            "log", "parallelism", f"dp_replicate {rep} x dp_shard {shard} x tp {tp} x pp {pp} x cp {cp} != {gpus} GPUs"
        )
    return _TTLayout(tp, pp, cp, ep, rep, shard)


def _tt_facts(log: ParsedLog, f: _Fields, gpus_flag: int | None) -> Facts:
    gpus, gpus_from = _gpus(gpus_flag, log.mesh_world or None, "device mesh")
    t = log.trainer
    seq = t.get("seq_len") or f.peek_int("training.seq_len")
    gbs = (
        t.get("global_batch_size")
        if (t.get("global_batch_size") or 0) > 0
        else f.peek_int("training.global_batch_size")
    )
    how = f"the '{log.trainer_line}' line" if t else "the job config"
    return Facts(gbs if gbs and gbs > 0 else None, seq, gpus, how, how, gpus_from)


def _tt_recompute(log: ParsedLog, f: _Fields, notes: list[str]) -> tuple[str, str]:
    """(recompute mode, how the log states it): the job config, else the 'Applied {mode} activation checkpointing'
    line; a log whose start-up (the model build) shows no such line applied none (torchtitan applies AC only for a
    mode other than 'none': models/llama/parallelize_llama.py @57387af parallelize_llama)."""
    mode = _tt(f, "activation_checkpoint.mode")
    how = "activation_checkpoint.mode"
    if mode is None and log.ac_mode:
        mode = {"SelectiveAC": "selective", "FullAC": "full"}.get(log.ac_mode, log.ac_mode.lower())
        how = f"'Applied {log.ac_mode} activation checkpointing to the model'"
    elif mode is None and log.model_args:
        mode, how = "none", "no 'Applied ... activation checkpointing' line after the model build"
        notes.append("no activation-checkpointing line after torchtitan's model build: no activation checkpointing")
    if mode is None:
        f.missing.append("activation_checkpoint.mode (give --arg activation_checkpoint.mode=none|selective|full)")
    recompute = {"none": "none", "selective": "selective", "full": "full", None: "none"}.get(mode)
    if recompute is None:
        raise InputError("log", "activation_checkpoint.mode", f"{mode!r}: perfmodel models none, selective, full")
    sac = _tt(f, "activation_checkpoint.selective_ac_option")
    if recompute == "selective" and sac is None:
        sac = "op"
        notes.append(
            "selective_ac_option not in the log (no job config): 'op', as torchtitan's train_configs/llama3_8b.toml "
            "@57387af sets it; its command-line default '2' (every second layer in full) is the 'recompute full' "
            "what-if"
        )
    if recompute == "selective" and sac != "op":
        notes.append(
            f"selective_ac_option={sac}: per-layer SAC, every {sac}th block checkpointed in full "
            "(stack selective_ac=layer, selective_ac_every=" + str(sac) + ")"
        )
    elif recompute == "selective":
        notes.append(
            "selective_ac_option=op: op-level SAC as torchtitan's save list runs it (stack selective_ac=op: every "
            "second matmul of a block and its element-wise ops recomputed, SDPA and reduce-scatter outputs kept)"
        )
    f.sac = sac if recompute == "selective" else None
    return recompute, how


def _tt_precision(log: ParsedLog, f: _Fields, notes: list[str]) -> tuple[str, str, str]:
    """(precision, float8 recipe or '', how the log states it): the job config's converters, else the
    quantisation line ('Float8 training active ...', 'MX training active ...'), else bf16 (training.
    mixed_precision_param defaults to bfloat16: config_manager.py @57387af l.440)."""
    conv = (_tt(f, "model.converters") or "") + " " + (_tt(f, "quantize.linear.float8.recipe_name") or "")
    recipe = _tt(f, "float8.recipe_name") or _tt(f, "recipe_name") or "tensorwise"
    how = "model.converters"
    if not conv.strip() and log.quant:
        kind, _, r = log.quant.partition(" ")
        conv, recipe, how = ("mx" if kind.startswith("mx") else "float8"), (r or "tensorwise"), f"'{log.quant}' line"
    if "mx" in conv:
        return "mxfp8", "", how
    if "float8" in conv:
        precision = {"tensorwise": "fp8", "rowwise": "fp8-block", "rowwise_with_gw_hp": "fp8-block"}.get(recipe, "")
        if not precision:
            raise InputError("log", "float8.recipe_name", f"{recipe!r} has no perfmodel precision")
        if precision == "fp8-block":
            notes.append(f"torchtitan float8 recipe {recipe!r} (finer-than-tensor scales) read as fp8-block")
        return precision, recipe, how
    mp = _tt(f, "training.mixed_precision_param") or "bfloat16"
    precision = {"bfloat16": "bf16", "float16": "fp16"}.get(mp, "")
    if not precision:
        raise InputError("log", "training.mixed_precision_param", f"{mp!r}: perfmodel predicts bf16/fp16/fp8 runs")
    return precision, "", "training.mixed_precision_param"


def _tt_batch(log: ParsedLog, f: _Fields, dp: int, pp: int, schedule: str) -> tuple[int | None, int, int]:
    """(global batch, micro-batch, layers-per-stage hint < 0 for interleaved schedules, else 1)."""
    local = (
        log.trainer.get("local_batch_size")
        or _tt_int(f, "training.local_batch_size", 0)
        or _tt_int(f, "training.batch_size", 0)
    )
    gbs = log.trainer.get("global_batch_size") or _tt_int(f, "training.global_batch_size", -1)
    if not local:
        f.missing.append("training.local_batch_size (give --arg training.local_batch_size=N)")
    if gbs is not None and gbs < 0 and local:
        gbs = local * dp
    mbs, vp = local or 1, 1
    if pp > 1:
        mbs = _tt_int(f, "parallelism.pipeline_parallel_microbatch_size", 1) or 1
        if not re.fullmatch(r"1F1B|GPipe", schedule):
            lps = _tt_int(f, "parallelism.pipeline_parallel_layers_per_stage", 0)
            if not lps:
                f.missing.append(
                    f"parallelism.pipeline_parallel_layers_per_stage (schedule {schedule} has several "
                    "stages per rank; give --arg parallelism.pipeline_parallel_layers_per_stage=N)"
                )
            vp = -lps if lps else 1  # resolved with the model's layer count
    return gbs if gbs and gbs > 0 else None, mbs, vp


def _tt_stated(log: ParsedLog, f: _Fields, recompute: str, how_ac: str, fsdp: bool, shard: int) -> dict[str, Stated]:
    stated = {"recompute": Stated(recompute, how_ac, f.origin("activation_checkpoint.mode"))}
    sac = f.sac
    if recompute == "selective" and sac is not None:
        how = f"activation_checkpoint.selective_ac_option={sac}"
        stated["selective_ac"] = Stated("op" if sac == "op" else "layer", how, "log")
        if sac != "op" and str(sac).isdigit():  # 0 wraps every block, as 1 does (ac_freq falsy)
            stated["selective_ac_every"] = Stated(str(max(int(sac), 1)), how, "log")
    if fsdp:
        how = (
            "parallelism.data_parallel_shard_degree"
            if f.present("parallelism.data_parallel_shard_degree")
            else (f"the device mesh (dp_shard {shard})" + (f", '{log.shard_line}' line" if log.shard_line else ""))
        )
        stated["fsdp"] = Stated("fsdp2", how, f.origin("parallelism.data_parallel_shard_degree"))
    return stated


def torchtitan_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """The run of a torchtitan log: the job config when printed ('Running with args'), else its start-up lines
    (device mesh, trainer, activation checkpointing, quantisation, compile)."""
    notes: list[str] = []
    facts = _tt_facts(log, f, gpus_flag)
    if not log.args and not f.over and not log.mesh:
        f.missing.append(
            "parallelism (no 'Running with args: {...}' job config and no 'Building N-D device mesh' line: "
            "give --arg parallelism.tensor_parallel_degree=N ...)"
        )
    if facts.gpus is None:
        f.missing.append("gpus (no 'Building N-D device mesh' line; give --gpus N)")
    recompute, how_ac = _tt_recompute(log, f, notes)
    precision, recipe, _ = _tt_precision(log, f, notes)
    if model_ref:
        model, how = load_model(model_ref), f"--model {model_ref}"
    else:
        model, how = torchtitan_model(log, f)  # type: ignore[assignment]
    built = Built("torchtitan", None, f.missing, facts, model, precision, notes)
    if facts.gpus is None:
        return built
    gpus = facts.gpus
    t = _tt_layout(log, f, gpus)
    dp = t.rep * t.shard
    schedule = _tt(f, "parallelism.pipeline_parallel_schedule") or "1F1B"
    gbs, mbs, vp = _tt_batch(log, f, dp, t.pp, schedule)
    seq = facts.seq or _tt_int(f, "training.seq_len")
    if f.missing or model is None or not seq or not gbs:
        return built
    if vp < 0:
        vp = max(1, model.num_layers // (t.pp * -vp))
    fsdp = t.shard > 1
    if fsdp:
        notes.append(f"data_parallel_shard_degree={t.shard}: FSDP2 shards parameters, gradients and optimizer (ZeRO-3)")
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        tp=t.tp,
        pp=t.pp,
        vp=vp,
        cp=t.cp,
        ep=t.ep,
        etp=1,
        mbs=mbs,
        fsdp=fsdp,
        recompute=recompute,
    )  # type: ignore[arg-type]
    compiled = log.compiled or any(
        (f.raw(k) or "").lower() in ("true", "1") for k in ("compile.enable", "training.compile")
    )
    stated = _tt_stated(log, f, recompute, how_ac, fsdp, t.shard)
    atp = _tt(f, "parallelism.enable_async_tensor_parallel")
    if atp is not None and t.tp > 1:
        stated["tp_overlap"] = Stated(
            "async_tp" if atp.lower() in ("true", "1") else "none",
            f"parallelism.enable_async_tensor_parallel={atp}",
            f.origin("parallelism.enable_async_tensor_parallel"),
        )
    if recipe:
        stated["fp8_recipe"] = Stated(
            {"tensorwise": "current"}.get(recipe, "rowwise"), f"float8 recipe {recipe}", "log"
        )
    built.run = Run(model, how, lay, precision, "torchtitan", notes, stated, compiled=compiled)
    return built


# ---- any log -----------------------------------------------------------------------------------------------


# MaxText (AI-Hypercomputer/maxtext) logs every config key once, sorted ('Config param K: V', MaxText/pyconfig.py
# @cae41ec2 _HyperParameters.__init__; src/maxtext/configs/pyconfig.py @e591f30c), after the model's own yml and
# user_init's derived keys (emb_dim, num_query_heads, mlp_dim, num_decoder_layers from the base_* keys and
# global_parameter_scale; global_batch_size_to_train_on). The mesh axes the parallelism keys name -> perfmodel's
# layout (max_utils.create_device_mesh @cae41ec2: one ICI and one DCN degree per axis, at most one -1 each, filled
# from the devices per slice and the slices). Batch axes (activation_batch over data, fsdp, fsdp_transpose and
# expert in base.yml's logical_axis_rules @e591f30c) are perfmodel's dp; expert is also ep (folded over dp).
_MT_DP_AXES = ("data", "fsdp", "fsdp_transpose", "expert")
# (the 'stage' mesh axis is configured as ici_pipeline_parallelism / dcn_pipeline_parallelism, base.yml @cae41ec2)
_MT_AXES = {"pipeline": "pp", "tensor": "tp", "sequence": "cp", "context": "cp"}
_MT_UNSUPPORTED = (
    "diloco",
    "tensor_transpose",
    "tensor_sequence",
    "context_usp_ulysses",
    "context_autoregressive",
    "autoregressive",
)
# decoder blocks whose layer is Llama's (MaxText layers/llama2.py, mistral.py, mixtral.py @cae41ec2: RMSNorm before
# attention and MLP, RoPE, no biases); others (gemma, gpt3, deepseek, ...) need --model
_MT_LLAMA_BLOCKS = ("llama2", "mistral", "mixtral")
# remat_policy (MaxText layers/models.py @cae41ec2 Decoder.__call__) -> (recompute, modules recomputed, how)
_MT_REMAT: dict[str, tuple[str, tuple[str, ...], str]] = {
    "full": ("full", (), "policy None: the whole block recomputed"),
    "none": ("none", (), "no nn.remat"),
    "minimal": (
        "selective",
        ("layernorm", "core_attn"),
        "checkpoint_dots_with_no_batch_dims: matmul outputs saved, the element-wise ops and the attention "
        "(a custom call, not a dot) recomputed",
    ),
    "minimal_flash": (
        "selective",
        ("layernorm",),
        "checkpoint_dots_with_no_batch_dims + 'context': matmul and attention outputs saved, only the "
        "element-wise ops recomputed",
    ),
    "save_dot_except_mlpwi": (
        "selective",
        ("layernorm", "core_attn", "mlp"),
        "saves qkv, out_proj and mlpwo only: the MLP's up/gate GEMMs, attention and element-wise "
        "ops recomputed (nearest modules: layernorm, core_attn, mlp)",
    ),
    "save_dot_except_mlp": (
        "selective",
        ("layernorm", "core_attn", "mlp"),
        "saves qkv and out_proj only: the MLP, attention and element-wise ops recomputed",
    ),
    "save_qkv_proj": (
        "selective",
        ("layernorm", "core_attn", "mlp"),
        "saves the q/k/v projections only (nearest modules: layernorm, core_attn, mlp)",
    ),
}
# attention (MaxText layers/attentions.py @cae41ec2 apply_attention) -> the stack's attention kernel
_MT_ATTENTION = {
    "cudnn_flash_te": ("cudnn", "cudnn_flash_attention: cuDNN fused attention through Transformer Engine"),
    "dot_product": ("unfused", "apply_attention_dot: QK^T, softmax and PV as XLA ops on the materialised scores"),
}
# quantization (MaxText layers/quantizations.py: @cae41ec2 'fp8' -> Flax nn.Fp8DotGeneralOp, per-tensor scales from
# an amax history = delayed scaling; @e591f30c the Transformer Engine recipes te_*) -> (precision, fp8 recipe)
_MT_QUANT = {
    "": ("bf16", ""),
    "fp8": ("fp8", "delayed"),
    "fp8_gpu": ("fp8", "delayed"),
    "nanoo_fp8": ("fp8", "delayed"),
    "te_fp8_delayedscaling": ("fp8", "delayed"),
    "te_fp8_currentscaling": ("fp8", "current"),
    "te_mxfp8": ("mxfp8", "mxfp8"),
    "te_nvfp4": ("nvfp4", ""),
    "te_nvfp4_no_rht": ("nvfp4", ""),
}


def _mt_degrees(f: _Fields, gpus: int) -> tuple[dict[str, int] | None, str]:
    """Each mesh axis's degree (ICI x DCN, the one -1 of each filled), or None and why not."""
    axes = sorted({k[4:-12] for k in (*f.args, *f.over) if k.startswith("ici_") and k.endswith("_parallelism")})
    if not axes:
        return None, "no ici_*_parallelism Config param lines"
    slices = f.peek_int("num_slices") or 1
    if gpus % slices:
        return None, f"{gpus} devices do not split into num_slices={slices}"

    def fill(prefix: str, total: int) -> dict[str, int] | None:
        vals = {a: (f.peek_int(f"{prefix}_{a}_parallelism") or 1) for a in axes}
        free = [a for a, v in vals.items() if v == -1]
        known = math.prod(v for v in vals.values() if v != -1)
        if len(free) > 1 or known < 1:
            return None
        if free:
            if total % known:
                return None
            vals[free[0]] = total // known
        return vals if math.prod(vals.values()) == total else None

    ici = fill("ici", gpus // slices)
    dcn = fill("dcn", slices) if slices > 1 else {a: 1 for a in axes}
    if ici is None or dcn is None:
        return None, f"the ici_* / dcn_* degrees do not multiply to {gpus} devices in {slices} slice(s)"
    return {a: ici[a] * dcn[a] for a in axes}, ""


def _mt_model(f: _Fields) -> tuple[ModelSpec | None, str]:
    """The model of a Llama-family decoder block from the logged shape keys, matched to the catalog by shape."""
    block = (f.raw("decoder_block") or "").strip("'\"")
    if block not in _MT_LLAMA_BLOCKS:
        f.missing.append(
            f"model (MaxText decoder_block '{block}' is read for {', '.join(_MT_LLAMA_BLOCKS)} only; give --model)"
        )
        return None, ""
    dims = {
        k: f.peek_int(k)
        for k in (
            "emb_dim",
            "num_query_heads",
            "num_kv_heads",
            "head_dim",
            "mlp_dim",
            "num_decoder_layers",
            "vocab_size",
        )
    }
    absent = [k for k, v in dims.items() if not v or v < 1]
    if absent:
        f.missing.append(f"model ({', '.join(absent)} not logged; give --model)")
        return None, ""
    acts = [a.lower() for a in _literal_list(f.raw("mlp_activations"))]
    act = {("silu", "linear"): "swiglu", ("gelu", "linear"): "geglu", ("gelu",): "gelu", ("relu",): "relu"}.get(
        tuple(acts)
    )
    if act is None:
        f.missing.append(f"model (mlp_activations {acts} is not an FFN perfmodel prices; give --model)")
        return None, ""
    h, heads, kv, hd = dims["emb_dim"], dims["num_query_heads"], dims["num_kv_heads"], dims["head_dim"]
    experts = f.peek_int("num_experts") or 1
    doc: dict[str, Any] = {
        "id": "log-model",
        "name": f"model of the MaxText config ({f.raw('model_name') or 'default'})",
        "num_layers": dims["num_decoder_layers"],
        "hidden_size": h,
        "vocab_size": dims["vocab_size"],
        "tied_embeddings": bool(f.bool("logits_via_embedding", False)),
        "norm": "rmsnorm",
        "attention": _attention(heads, kv, hd),
        "ffn": {"activation": act, "intermediate_size": 0 if experts > 1 else dims["mlp_dim"]},
    }
    if experts > 1:  # every layer MoE (MaxText mixtral.py MixtralDecoderLayer: a MoeBlock in place of the MLP)
        doc["moe"] = {
            "num_experts": experts,
            "top_k": f.peek_int("num_experts_per_tok") or 1,
            "expert_intermediate_size": dims["mlp_dim"],
        }
    try:
        spec = ModelSpec(**doc)
    except ValueError as exc:
        raise InputError(
            "log",
            "model",
            f"the MaxText config's shape is not a model perfmodel can build ({_why(exc)}); give --model",
        ) from None
    found = match_catalog(spec, 0, 1)
    if found:
        return found[0], f"catalog {found[0].id}, matched by the config's shape keys"
    return spec, "built from the MaxText config's shape keys (no catalog model has this shape)"


# MaxText's pipeline (MaxText/layers/pipeline.py @cae41ec2 Pipeline.__call__): a scan of num_microbatches x
# num_pipeline_repeats + num_stages - 1 iterations, each stage running its layers for one micro-batch per
# iteration, differentiated by JAX as one function, so every forward runs before any backward (GPipe), with
# circular repeats as virtual stages (base.yml: bubble (stages - 1) / (repeats x microbatches + stages - 1))
_MT_PIPELINE = (
    "stage axis > 1: MaxText's circular pipeline (layers/pipeline.py: scanned forward, JAX-differentiated: all "
    "forwards before the backwards)"
)


def _mt_pipeline(f: _Fields, pp: int, layers: int | None) -> tuple[int, int] | str:
    """(micro-batches per forward pass, virtual stages) of a MaxText pipeline, as pyconfig resolves them (@cae41ec2
    user_init, configs/types.py @e591f30c): num_pipeline_microbatches -1 -> the stages (2 x the stages with
    pipeline_delay_activation_forwarding), num_pipeline_repeats -1 -> layers / (stages x
    num_layers_per_pipeline_stage); or what is wrong with them."""
    micro = f.peek_int("num_pipeline_microbatches")
    micro = -1 if micro is None else micro
    if micro == -1:
        delay = (f.raw("pipeline_delay_activation_forwarding") or "False") == "True"
        micro = pp * (2 if delay else 1)
    if micro < 1 or micro % pp:
        return f"pipeline (num_pipeline_microbatches {micro} is not a multiple of the {pp} stages)"
    pl = f.peek_int("pipeline_parallel_layers")
    if pl and pl > 0 and layers and pl != layers:
        return f"pipeline (pipeline_parallel_layers {pl} of {layers}: a partly pipelined decoder is not modelled)"
    repeats = f.peek_int("num_pipeline_repeats")
    repeats = -1 if repeats is None else repeats
    if repeats == -1 and not layers:  # no model: the run is not built, nothing more to say
        return micro, 1
    if repeats == -1 and layers:
        per = f.peek_int("num_layers_per_pipeline_stage") or 1
        repeats, rem = divmod(layers, pp * per) if per > 0 else (0, 1)
        if rem or repeats < 1:
            return f"pipeline ({layers} layers do not split into {pp} stages x {per} layers per stage)"
    if repeats < 1 or (layers and layers % (pp * repeats)):
        return f"pipeline (num_pipeline_repeats {repeats} x {pp} stages does not divide the {layers} layers)"
    return micro, repeats


# PP + FSDP in MaxText (docs/guides/optimization/sharding.md 'PP + FSDP/DP' @e591f30c; layers/pipeline.py): by
# default the sharded weights are gathered inside every pipeline iteration; pipeline_fsdp_ag_per_repeat gathers
# each repeat's weights ahead of it, pipeline_fsdp_ag_once all of them before the first iteration: either way
# once per pipeline call (base.yml @e591f30c: both false)
def _mt_pipeline_gathers(f: _Fields, accum: int, stated: dict, notes: list[str]) -> None:
    """fsdp_gather / reshard_after_forward of a pipelined MaxText run with sharded weights, as its mode states."""
    flag = lambda k: (f.raw(k) or "false").strip("'\"").lower() in ("true", "1")  # noqa: E731
    mode = next((k for k in ("pipeline_fsdp_ag_once", "pipeline_fsdp_ag_per_repeat") if flag(k)), "")
    if not mode:
        how = "pipeline_fsdp_ag_once / _per_repeat false: the sharded weights are gathered in every pipeline iteration"
        stated["fsdp_gather"] = Stated("per_microbatch", how, "log")
        return
    how = f"{mode}=True: the sharded weights gathered once per pipeline call and kept for its backward"
    stated["fsdp_gather"] = Stated("per_step", how, f.origin(mode))
    stated["reshard_after_forward"] = Stated("false", how, f.origin(mode))
    if accum > 1:
        notes.append(
            f"{mode}: the weights are gathered once per pipeline call, {accum} a step "
            f"(gradient_accumulation_steps); priced once a step, so {accum - 1} gathers are not counted"
        )


def maxtext_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A MaxText log's run from its 'Config param' lines: the sequence max_target_length, the GPUs from
    'Num_devices' (or --gpus), the global batch global_batch_size_to_train_on (else per_device_batch_size x
    devices x gradient_accumulation_steps), the mesh degrees (_mt_degrees), remat_policy, attention and
    quantization, and the model from its shape keys (or --model)."""
    gpus = gpus_flag or log.world_size or None
    gpus_from = "--gpus" if gpus_flag else ("'Num_devices' line" if log.world_size else "")
    seq = f.peek_int("max_target_length")
    seq = seq if seq and seq > 0 else None
    accum = f.peek_int("gradient_accumulation_steps") or 1
    gbs = f.peek_int("global_batch_size_to_train_on")
    how = "Config param global_batch_size_to_train_on"
    if not gbs or gbs < 1:
        pdb = _positive(f.raw("per_device_batch_size"))
        gbs = None
        if pdb and gpus and (pdb * gpus * accum) == int(pdb * gpus * accum):
            gbs = int(pdb * gpus * accum)
        how = "Config param per_device_batch_size x devices x gradient_accumulation_steps"
    facts = Facts(gbs, seq, gpus, how if gbs else "", "Config param max_target_length" if seq else "", gpus_from)
    notes: list[str] = []
    model, model_how = (load_model(model_ref), f"--model {model_ref}") if model_ref else _mt_model(f)
    quant = (f.raw("quantization") or "").strip("'\"")
    dtype = (f.raw("dtype") or "bfloat16").strip("'\"")
    precision, recipe = _MT_QUANT.get(quant, (None, ""))
    if precision is None:
        f.missing.append(f"precision (quantization '{quant}' is not a training GEMM precision perfmodel prices)")
    elif precision == "bf16" and dtype != "bfloat16":
        precision = {"float16": "fp16"}.get(dtype)
        if precision is None:
            f.missing.append(f"precision (dtype '{dtype}': perfmodel prices bf16 / fp16 / fp8 GEMMs)")
    built = Built("maxtext", None, f.missing, facts, model, precision, notes)
    if gpus is None:
        f.missing.append("gpus (no 'Num_devices' line; give --gpus N)")
        return built
    deg, why = _mt_degrees(f, gpus)
    if deg is None:
        f.missing.append(f"layout ({why}; give --arg ici_fsdp_parallelism=N ...)")
        return built
    known = (*_MT_DP_AXES, *_MT_AXES)  # an axis no table names (a newer MaxText's) is not modelled either
    odd = [f"{a}={d}" for a, d in deg.items() if d > 1 and (a in _MT_UNSUPPORTED or a not in known)]
    if odd:
        f.missing.append(f"layout (mesh axes perfmodel does not model: {', '.join(odd)})")
    dp = math.prod(deg.get(a, 1) for a in _MT_DP_AXES)
    par = {v: 1 for v in _MT_AXES.values()}
    for a, k in _MT_AXES.items():
        par[k] *= deg.get(a, 1)
    # the weights' 'embed' dimension is sharded over every one of these axes the mesh has (base.yml
    # logical_axis_rules: fsdp, fsdp_transpose, sequence @cae41ec2; + expert @91be8264b; + context @2ed45b646;
    # fsdp, fsdp_transpose, context, expert @e591f30c, whose mesh has no sequence axis)
    weight_axes = tuple(a for a in ("fsdp", "fsdp_transpose", "sequence", "context", "expert") if a in deg)
    shard = math.prod(deg.get(a, 1) for a in weight_axes)
    on = ", ".join(f"{a} {deg[a]}" for a in weight_axes if deg.get(a, 1) > 1)
    pipe = _mt_pipeline(f, par["pp"], model.num_layers if model else None) if par["pp"] > 1 else None
    if isinstance(pipe, str):
        f.missing.append(pipe)
    # per step: gradient_accumulation_steps forward passes, each split into the pipeline's micro-batches
    # (MaxText configs/types.py @e591f30c calculate_global_batch_sizes: global = micro_batch_to_train x accum)
    micro = accum * (pipe[0] if isinstance(pipe, tuple) else 1)
    if gbs is None or seq is None or model is None or f.missing:
        if gbs is None:
            f.missing.append("global batch (no global_batch_size_to_train_on or per_device_batch_size line)")
        if seq is None:
            f.missing.append("seq (no max_target_length line)")
        return built
    if gbs % (dp * micro):
        f.missing.append(f"micro-batch (global batch {gbs} does not split over dp {dp} x {micro} micro-batches)")
        return built
    remat = (f.raw("remat_policy") or "full").strip("'\"")
    if remat not in _MT_REMAT:
        f.missing.append(f"recompute (remat_policy '{remat}' is not one perfmodel maps; give --arg remat_policy=full)")
        return built
    recompute, modules, remat_how = _MT_REMAT[remat]
    origin = f.origin("remat_policy")
    stated = {"recompute": Stated(recompute, f"remat_policy={remat}: {remat_how}", origin)}
    if modules:
        stated["recompute_modules"] = Stated(",".join(modules), f"remat_policy={remat}: {remat_how}", origin)
    attn = (f.raw("attention") or "").strip("'\"")
    if attn in _MT_ATTENTION:
        kern, attn_how = _MT_ATTENTION[attn]
        stated["attention_kernel"] = Stated(kern, f"attention={attn}: {attn_how}", f.origin("attention"))
    if recipe and precision in ("fp8",):
        stated["fp8_recipe"] = Stated(recipe, f"quantization={quant}", f.origin("quantization"))
    if isinstance(pipe, tuple):
        stated["pipeline_schedule"] = Stated("gpipe", _MT_PIPELINE, "log")
    if shard > 1:
        dpc = dp * par["cp"]  # perfmodel shards over the data- and context-parallel GPUs (parallel/dp.py)
        stated["fsdp"] = Stated("xla_fsdp", f"weights sharded over {shard} GPUs ({on}; base.yml 'embed' rule)", "log")
        group = "none" if shard == dpc else str(shard)
        stated["hybrid_shard_group"] = Stated(group, f"{shard} of the {dpc} data- and context-parallel GPUs", "log")
        if shard != dpc:
            notes.append(
                f"FSDP over {shard} of the {dpc} data- and context-parallel GPUs ({on}), replicated over the rest"
            )
        if isinstance(pipe, tuple):
            _mt_pipeline_gathers(f, accum, stated, notes)
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        tp=par["tp"],
        pp=par["pp"],
        cp=par["cp"],
        vp=pipe[1] if isinstance(pipe, tuple) else 1,
        ep=deg.get("expert", 1),
        etp=1,
        mbs=gbs // (dp * micro),
        fsdp=shard > 1,
        recompute=recompute,  # type: ignore[arg-type]
    )
    notes.append("mesh " + ", ".join(f"{a}={d}" for a, d in deg.items() if d > 1) + " (Config param ici_* / dcn_*)")
    built.run = Run(
        model,
        model_how,
        lay,
        precision or "bf16",
        "maxtext",
        notes,
        stated,
        states="MaxText config ('Config param' lines)",
    )
    return built


# llm-foundry's config as log_config prints it (om.to_yaml of the resolved run config; logparse CP_CONFIG), read
# for an MPT model (llmfoundry/models/mpt/configuration_mpt.py @v0.6.0 MPTConfig defaults: expansion_ratio 4,
# learned_pos_emb True, no_bias False, attn_config attn_impl 'triton' / alibi False / kv_n_heads = n_heads,
# tie_word_embeddings True, norm_type low_precision_layernorm (layers/norm.py: layernorm / rmsnorm, their
# low_precision_ forms and triton_rmsnorm), ffn_act_fn GELU)
_CP_ATTN = {
    "flash": (
        "fa2",
        "flash_attn_fn: FlashAttention-2 where flash-attn >= 2 is installed (llm-foundry >= 0.4; with "
        "flash-attn 1, --stack-set attention_kernel=fa1)",
    ),
    "triton": ("triton", "triton_flash_attn_fn (llmfoundry/models/layers/flash_attn_triton.py)"),
    "torch": ("unfused", "scaled_multihead_dot_product_attention: the scores materialised in torch"),
}
# precision (composer/core/precision.py @v0.16.4) -> perfmodel's GEMM precision; amp_fp8 runs Transformer Engine's
# fp8_autocast with its DelayedScaling recipe (composer/core/precision.py get_precision_context @v0.16.4)
_CP_PRECISION = {"amp_bf16": ("bf16", ""), "amp_fp16": ("fp16", ""), "amp_fp8": ("fp8", "delayed")}
# fsdp_config.mixed_precision (composer/trainer/mosaic_fsdp_utils.py @v0.16.4 get_mixed_precision): the reduce dtype
_CP_REDUCE = {"DEFAULT": "fp32", "FULL": "fp32", "PURE": "bf16"}


def _cp(f: _Fields, key: str) -> str | None:
    """A config value with an unresolved '${name}' interpolation read from the top-level key it names."""
    v = f.raw(key)
    if v and v.startswith("${") and v.endswith("}"):
        v = f.raw(v[2:-1])
    return v.strip("'\"") if v else v


def _cp_given(f: _Fields, key: str) -> bool:
    """The config states the map `key`: a non-null value or any key below it."""
    return f.raw(key) is not None or any(k.startswith(key + ".") for k in (*f.args, *f.over))


def _cp_int(f: _Fields, key: str) -> int | None:
    v = _cp(f, key)
    try:
        return int(float(v)) if v is not None else None
    except (ValueError, OverflowError):
        return None


# a fine-tune's Hub name: '-Instruct' / '-chat' variants have the base model's config (Meta's Llama model cards)
_HF_TUNE = re.compile(r"-(?:instruct|chat)(?=-|$)", re.IGNORECASE)
# the config keys that change a Hugging Face model's shape (transformers LlamaConfig)
_HF_SHAPE_KEYS = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "vocab_size",
    "head_dim",
)


def hf_catalog(name: str) -> ModelSpec | None:
    """The catalog model whose `hf_names` lists the Hub id `name` (its '-Instruct' / '-chat' variant too)."""
    want = _HF_TUNE.sub("", name.strip().rstrip("/")).lower()
    return next((c for c in _catalog() if want in (n.lower() for n in c.hf_names)), None)


def _cp_hf_model(f: _Fields) -> tuple[ModelSpec | None, str]:
    """llm-foundry's hf_causal_lm (llmfoundry/models/hf/hf_base.py build_inner_model): the Hub model it names,
    from the catalog, trained in full (no peft_config) with no shape key overridden."""
    name = _cp(f, "model.pretrained_model_name_or_path") or ""
    if _cp_given(f, "model.peft_config"):
        f.missing.append("model (hf_causal_lm with a peft_config: perfmodel prices full-parameter training)")
        return None, ""
    changed = [k for k in _HF_SHAPE_KEYS if f.present(f"model.config_overrides.{k}")]
    if changed:
        f.missing.append(f"model (config_overrides {', '.join(changed)} change the shape of '{name}'; give --model)")
        return None, ""
    m = hf_catalog(name)
    if m is None:
        f.missing.append(f"model (hf_causal_lm '{name or '?'}' is no catalog model's Hub name; give --model)")
        return None, ""
    if m.moe:  # transformers' MoE blocks loop over the experts in Python: a kernel schedule perfmodel has not read
        f.missing.append(f"model ('{name}' is an MoE; Hugging Face's expert loop is not priced; give --model)")
        return None, ""
    return m, f"model.pretrained_model_name_or_path={name}: catalog {m.id}"


# transformers' attention implementations (hf_causal_lm attn_implementation, 'eager' when unset, hf_base.py
# build_inner_model; use_flash_attention_2 overrides it)
_HF_ATTN = {
    "flash_attention_2": ("fa2", "transformers' flash attention: flash_attn_func / flash_attn_varlen_func (FA2)"),
    "sdpa": ("fa2", "torch scaled_dot_product_attention, is_causal: PyTorch's flash backend (FlashAttention-2)"),
    "eager": ("unfused", "transformers' eager attention: QK^T, softmax in fp32 and PV on the materialised scores"),
}


def _hf_stated(f: _Fields) -> dict[str, Stated]:
    """What an hf_causal_lm run states of its kernels: the attention implementation hf_base.py build_inner_model
    resolves (use_flash_attention_2 -> 'flash_attention_2', unset -> 'eager') and the Hugging Face Llama modules'
    separate projections (transformers modeling_llama: q_proj, k_proj, v_proj; gate_proj, up_proj)."""
    fa2 = (_cp(f, "model.use_flash_attention_2") or "False").lower() == "true"
    given = _cp(f, "model.attn_implementation")
    impl = "flash_attention_2" if fa2 else (given or "eager")
    said = (
        "use_flash_attention_2=True" if fa2 else (f"attn_implementation={given}" if given else "no attn_implementation")
    )
    o = f.origin("model.use_flash_attention_2", "model.attn_implementation")
    out = {
        "projections": Stated(
            "separate", "hf_causal_lm: transformers' q_proj / k_proj / v_proj and gate_proj / up_proj", "log"
        )
    }
    if impl not in _HF_ATTN:
        f.missing.append(f"attention (attn_implementation '{impl}': perfmodel reads {', '.join(_HF_ATTN)})")
        return out
    out["attention_kernel"] = Stated(_HF_ATTN[impl][0], f"{said}: {_HF_ATTN[impl][1]}", o)
    return out


# MPT's norm_type (llmfoundry/models/layers/norm.py registry) -> the norm perfmodel prices
_MPT_NORMS = {
    "layernorm": "layernorm",
    "low_precision_layernorm": "layernorm",
    "rmsnorm": "rmsnorm",
    "low_precision_rmsnorm": "rmsnorm",
    "triton_rmsnorm": "rmsnorm",
}


def _cp_model(f: _Fields, seq: int | None) -> tuple[ModelSpec | None, str]:
    name = _cp(f, "model.name") or ""
    if name == "hf_causal_lm":
        return _cp_hf_model(f)
    if name != "mpt_causal_lm":
        f.missing.append(
            f"model (llm-foundry model '{name or '?'}' is read for mpt_causal_lm and hf_causal_lm; give --model)"
        )
        return None, ""
    d, heads, layers = (_cp_int(f, f"model.{k}") for k in ("d_model", "n_heads", "n_layers"))
    vocab = _cp_int(f, "model.vocab_size")
    if not (d and heads and layers and vocab):
        f.missing.append("model (d_model, n_heads, n_layers or vocab_size not in the logged config; give --model)")
        return None, ""
    bad = [f"model.{k}={v}" for k, v in (("d_model", d), ("n_heads", heads), ("n_layers", layers)) if v < 1]
    if bad or vocab < 1 or d % heads:
        why = ", ".join(bad) or (f"model.vocab_size={vocab}" if vocab < 1 else f"d_model {d} over n_heads {heads}")
        f.missing.append(f"model ({why}: not an MPT llm-foundry builds; give --model)")
        return None, ""
    ffn_type = _cp(f, "model.ffn_config.ffn_type") or "mptmlp"
    if ffn_type not in ("mptmlp", "te_ln_mlp"):  # mptglu is a gated MLP whose activation the config names
        f.missing.append(f"model (ffn_type '{ffn_type}': read for the GELU MLP mptmlp / te_ln_mlp only; give --model)")
        return None, ""
    act = _cp(f, "model.ffn_config.ffn_act_fn.name") or "gelu"
    if act != "gelu":  # configuration_mpt.py: ffn_act_fn defaults to {'name': 'gelu', 'approximate': 'none'}
        f.missing.append(f"model (ffn_act_fn '{act}': read for GELU only; give --model)")
        return None, ""
    norm_type = (_cp(f, "model.norm_type") or "low_precision_layernorm").lower()
    norm = _MPT_NORMS.get(norm_type)
    if not norm:
        f.missing.append(f"model (norm_type '{norm_type}' is not a LayerNorm or RMSNorm perfmodel reads; give --model)")
        return None, ""
    ratio = _positive(_cp(f, "model.expansion_ratio") or "4")
    ffn = _cp_int(f, "model.ffn_config.ffn_hidden_size") or (int(ratio * d) if ratio else 0)
    kv = _cp_int(f, "model.attn_config.kv_n_heads") or heads
    if ffn < 1 or kv < 1 or heads % kv:
        why = f"expansion_ratio {_cp(f, 'model.expansion_ratio')!r}" if ffn < 1 else f"kv_n_heads {kv} of {heads}"
        f.missing.append(f"model ({why}: not an MPT llm-foundry builds; give --model)")
        return None, ""
    bias = (_cp(f, "model.no_bias") or "False") != "True"
    alibi = (_cp(f, "model.attn_config.alibi") or "False") == "True"
    learned = (_cp(f, "model.learned_pos_emb") or "True") == "True"
    max_pos = _cp_int(f, "model.max_seq_len") or seq or 2048
    doc = dict(
        id="log-model",
        name=f"MPT of the llm-foundry config (d_model {d}, {layers} layers)",
        num_layers=layers,
        hidden_size=d,
        vocab_size=vocab,
        tied_embeddings=(_cp(f, "model.tie_word_embeddings") or "True") == "True",
        position_embedding="learned" if learned and not alibi else "none",
        max_position_embeddings=max_pos,
        norm=norm,
        attention=_attention(heads, kv, d // heads, qkv_bias=bias, o_bias=bias),
        ffn={"activation": "gelu", "intermediate_size": ffn, "bias": bias},
        seq_len=max_pos,
    )
    try:
        spec = ModelSpec(**doc)
    except ValueError as exc:
        f.missing.append(f"model (the logged MPT config is not a model perfmodel can build: {_why(exc)}; give --model)")
        return None, ""
    return spec, "built from the logged llm-foundry config (model.*: an MPT)"


def composer_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A Composer log's run: the GPUs from --gpus or the world size its two throughput rates imply (logparse
    CP_METRIC); where llm-foundry logged its config (logparse CP_CONFIG), the model (an MPT, or --model), the batch
    (global_train_batch_size, device_train_microbatch_size), max_seq_len, precision, fsdp_config (sharding
    strategy, activation checkpointing, mixed precision) and attn_impl; predicted on the llm-foundry preset."""
    gpus = gpus_flag or log.world_size or None
    gpus_from = "--gpus" if gpus_flag else ("world size" if log.world_size else "")
    if not f.args and not f.over:
        f.missing.append(
            "the run's model and layout (a Composer log without the 'Logging config' block llm-foundry prints: "
            "predict the run with perfmodel predict --stack llm-foundry-2024, or validate it as a CSV row)"
        )
        return Built("composer", None, f.missing, Facts(gpus=gpus, gpus_from=gpus_from))
    seq = _cp_int(f, "max_seq_len")
    gbs = _cp_int(f, "global_train_batch_size")
    facts = Facts(gbs, seq, gpus, "global_train_batch_size" if gbs else "", "max_seq_len" if seq else "", gpus_from)
    notes: list[str] = []
    model, how = (load_model(model_ref), f"--model {model_ref}") if model_ref else _cp_model(f, seq)
    prec_name = _cp(f, "precision") or ""
    precision, recipe = _CP_PRECISION.get(prec_name, (None, ""))
    if precision is None:
        f.missing.append(f"precision ('{prec_name}': perfmodel prices amp_bf16, amp_fp16 and amp_fp8)")
    built = Built("composer", None, f.missing, facts, model, precision, notes)
    mbs = _cp_int(f, "device_train_microbatch_size")
    said = _cp(f, "device_train_microbatch_size")
    if said == "auto" and gbs and gpus and gbs % gpus == 0:
        # Composer's auto micro-batching (trainer.py @v0.16.4): the per-device batch, halved on every CUDA OOM
        mbs = log.auto_microbatch or gbs // gpus
        notes.append(
            f"device_train_microbatch_size auto: {mbs}, "
            + (
                "the last size Composer's OOM warnings decreased it to"
                if log.auto_microbatch
                else "the per-device batch (no OOM warning in the log)"
            )
        )
    if gpus is None:
        f.missing.append("gpus (no throughput lines with both rates; give --gpus N)")
    if not gbs or not seq:
        f.missing.append("global_train_batch_size / max_seq_len (not in the logged config)")
    if not mbs:
        f.missing.append(
            f"micro-batch (device_train_microbatch_size {repr(said) if said else 'not in the logged config'}: "
            "give --arg device_train_microbatch_size=N)"
        )
    if f.missing or model is None or gpus is None or not (gbs and seq and mbs):
        return built
    if gbs % gpus == 0 and mbs > gbs // gpus:  # Composer runs a device's whole batch as one micro-batch
        notes.append(f"device_train_microbatch_size {mbs} > the {gbs // gpus} samples per device: one micro-batch")
        mbs = gbs // gpus
    if gbs % (gpus * mbs):
        f.missing.append(f"micro-batch (global batch {gbs} does not split over {gpus} GPUs x micro-batch {mbs})")
        return built
    # no fsdp_config (or fsdp_config: null): Composer wraps the model in DDP (composer/trainer/trainer.py @v0.16.4:
    # prepare_ddp_module where neither DeepSpeed nor FSDP is enabled and the world size is > 1)
    has_fsdp = _cp_given(f, "fsdp_config")
    strategy = (_cp(f, "fsdp_config.sharding_strategy") or "FULL_SHARD").upper() if has_fsdp else "NO_SHARD"
    if strategy not in ("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD"):
        f.missing.append(f"fsdp (sharding_strategy {strategy!r} is not one perfmodel maps)")
        return built
    ac = (_cp(f, "fsdp_config.activation_checkpointing") or "False") == "True"
    recompute = "full" if ac else "none"
    o = f.origin
    stated = {
        "recompute": Stated(
            recompute, f"fsdp_config.activation_checkpointing={ac}", o("fsdp_config.activation_checkpointing")
        )
    }
    src = f"fsdp_config.sharding_strategy={strategy}" if has_fsdp else "no fsdp_config: Composer's DDP"
    if strategy == "NO_SHARD":
        stated["fsdp"] = Stated("none", src, o("fsdp_config.sharding_strategy"))
    else:
        stated["fsdp"] = Stated("fsdp1", src, o("fsdp_config.sharding_strategy"))
        stated["reshard_after_forward"] = Stated(str(strategy != "SHARD_GRAD_OP").lower(), src, "log")
        if strategy == "HYBRID_SHARD":  # torch FSDP's intra-node group: the node's devices
            stated["hybrid_shard_group"] = Stated("8", src + ": sharded within each node of 8 GPUs", "log")
    mp = (_cp(f, "fsdp_config.mixed_precision") or "DEFAULT").upper()
    if not has_fsdp:  # DDP under autocast: fp32 parameters, so fp32 gradients all-reduced
        stated["grad_reduce_precision"] = Stated("fp32", "no fsdp_config: DDP all-reduces the fp32 gradients", "log")
    elif mp in _CP_REDUCE:
        stated["grad_reduce_precision"] = Stated(_CP_REDUCE[mp], f"fsdp_config.mixed_precision={mp}", "log")
    if _cp(f, "model.name") == "hf_causal_lm":
        stated.update(_hf_stated(f))
        if f.missing:
            return built
    attn = _cp(f, "model.attn_config.attn_impl")
    if attn in _CP_ATTN and "attention_kernel" not in stated:
        stated["attention_kernel"] = Stated(_CP_ATTN[attn][0], f"attn_impl={attn}: {_CP_ATTN[attn][1]}", "log")
    if recipe:
        stated["fp8_recipe"] = Stated(recipe, f"precision={prec_name}", "log")
    lay = Layout(gpus=gpus, gbs=gbs, seq=seq, mbs=mbs, fsdp=strategy != "NO_SHARD", recompute=recompute)  # type: ignore[arg-type]
    built.run = Run(
        model,
        how,
        lay,
        precision or "bf16",
        "composer",
        notes,
        stated,
        states="llm-foundry config ('Logging config' block)",
    )
    return built


# ---- DeepSpeed (deepspeedai/DeepSpeed): the DeepSpeedConfig dump and the optimizer the engine built ------------------

_DS_RECOMPUTE = ("none", "full", "selective")
# ZeRO offload of the optimizer or the parameters (zero_config's offload_* = DeepSpeedZeroOffload*Config(device=cpu or
# nvme), deepspeed/runtime/zero/offload_config.py): host-side Adam and PCIe copies perfmodel does not price
_DS_OFFLOAD = re.compile(r"offload_(?:optimizer|param)=DeepSpeedZeroOffload\w*Config\(device=[^,)]*(?:cpu|nvme)")


def _ds_precision(f: _Fields) -> tuple[str | None, str]:
    """The model dtype the engine trains in (deepspeed/runtime/engine.py get_data_types): fp16 where fp16 is enabled,
    else bf16 where bf16 is, else fp32; printed as fp16_enabled / bfloat16_enabled (to v0.17.0) or float16_config /
    bfloat16_config 'enabled=True ...' (v0.17.1 on)."""

    def on(flag: str, section: str) -> bool:
        v = f.raw(flag)
        if v is not None:
            return v == "True"
        return (f.raw(section) or "").startswith("enabled=True")

    if on("fp16_enabled", "float16_config"):
        return "fp16", "fp16 enabled"
    if on("bfloat16_enabled", "bfloat16_config"):
        return "bf16", "bf16 enabled"
    if f.raw("bfloat16_enabled", "bfloat16_config", "fp16_enabled", "float16_config") is None:
        f.missing.append("precision (no DeepSpeed configuration dump; give --arg bfloat16_enabled=True)")
        return None, ""
    f.missing.append("precision (the DeepSpeed config enables neither bf16 nor fp16: fp32 training is not priced)")
    return None, ""


def _ds_sharding(log: ParsedLog, f: _Fields, precision: str | None) -> tuple[str, str, str] | None:
    """(fsdp feature, what states it, origin): the optimizer wrapper the engine logged it created, else the dump's
    ZeRO stage with the engine's rule (engine.py _do_optimizer_sanity_check: ZeRO on -> DeepSpeedZeroOptimizer,
    BF16_Optimizer for bf16 + fp32 accumulation at stage 1; ZeRO off -> BF16_Optimizer or FP16_Optimizer, both
    unsharded gradients all-reduced over data parallel, or the basic optimizer in fp32)."""
    if "zero_optimization_stage" not in f.over and log.ds_optimizer:
        if log.ds_optimizer == "BF16 optimizer":
            return "bf16_optimizer", "the engine's 'Creating BF16 optimizer' line", "log"
        if log.ds_zero_logged > 0:
            return f"zero{log.ds_zero_logged}", f"the engine's 'Creating {log.ds_optimizer}' line", "log"
        return "none", f"the engine's 'Creating {log.ds_optimizer}' line (no ZeRO)", "log"
    stage = f.int("zero_optimization_stage")
    if stage is None:
        return None
    if not 0 <= stage <= 3:
        raise InputError("log", "zero_optimization_stage", f"{stage}: ZeRO stages are 0-3")
    said, o = f.said("zero_optimization_stage"), f.origin("zero_optimization_stage")
    accum = (f.raw("grad_accum_dtype") or "").lower()
    fp32_accum = accum in ("fp32", "float32", "torch.float32")
    if stage == 1 and precision == "bf16" and fp32_accum:
        return "bf16_optimizer", f"{said} with grad_accum_dtype={accum}: BF16_Optimizer", o
    if stage > 0:
        return f"zero{stage}", said, o
    if precision != "bf16":  # FP16_Optimizer (fp16) or the basic optimizer: unsharded, gradients all-reduced
        return "none", f"{said}: gradients all-reduced over data parallel", o
    if accum:
        if fp32_accum:
            return "bf16_optimizer", f"{said} with grad_accum_dtype={accum}: BF16_Optimizer", o
        return "none", f"{said} with grad_accum_dtype={accum}: bf16 gradients all-reduced over data parallel", o
    # grad_accum_dtype unset: engine.py get_data_types accumulates bf16 without ZeRO in fp32 from v0.9.2 (so
    # _do_optimizer_sanity_check returns BFLOAT16) up to v0.17.5; from v0.17.6 (889f0ead) in the model dtype
    v = tuple(int(x) for x in re.findall(r"\d+", log.ds_version)[:3])
    if len(v) == 3 and (0, 9, 2) <= v < (0, 17, 6):
        return "bf16_optimizer", f"{said}, bf16, DeepSpeed {log.ds_version}: fp32 accumulation, BF16_Optimizer", o
    if len(v) == 3 and v >= (0, 17, 6):
        return "none", f"{said}, bf16, DeepSpeed {log.ds_version}: bf16 gradients all-reduced over data parallel", o
    f.missing.append(
        "fsdp (bf16 at ZeRO stage 0: BF16_Optimizer or not depends on the DeepSpeed version, which the log "
        "does not state; give --arg grad_accum_dtype=fp32 or =bf16)"
    )
    return None


def deepspeed_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A plain DeepSpeed log's run (DeepSpeedEngine on a model of the user's code; no Megatron argument dump): the
    batch from the engine's configuration dump (train_batch_size, train_micro_batch_size_per_gpu,
    gradient_accumulation_steps, world_size = the data-parallel size), precision and ZeRO stage from the dump and the
    optimizer line. A DeepSpeed log states neither the model nor the sequence length nor whether the model code
    checkpoints activations: --model, --arg seq_length=N and --arg recompute=none|full|selective give them."""
    world_said = f.raw("world_size") or ""
    world = f.peek_int("world_size") if world_said.isdigit() or f.origin("world_size") == "--arg" else None
    if world_said and world is None:  # v0.17+ prints world / sequence-parallel size as a float under Ulysses
        f.missing.append(f"layout (world_size {world_said}: DeepSpeed-Ulysses sequence parallelism is not read)")
    # the PipelineEngine's stages (PipelineModule's 'stage=N layers=M' lines): the GPUs are data parallel x stages
    # (DeepSpeedConfig world_size = the grid's data-parallel size, runtime/config.py)
    pp = log.ds_stages if log.ds_pipeline and log.ds_stages > 0 else 1
    if log.ds_pipeline and not log.ds_stages:
        f.missing.append("layout (DeepSpeed's PipelineEngine ran, but its 'stage=N layers=M' lines are not in the log)")
    if gpus_flag and world and gpus_flag != world * pp:
        f.missing.append(
            f"layout (--gpus {gpus_flag}, but DeepSpeed's world_size, its data-parallel size, is {world}"
            + (f" over {pp} pipeline stages" if pp > 1 else "")
            + ": the model-parallel layout is not in a DeepSpeed log; predict it with perfmodel predict)"
        )
    gpus = gpus_flag or (world * pp if world else None)
    gpus_from = "--gpus" if gpus_flag else ("world_size (DeepSpeed config)" if world else "")
    if pp > 1 and world and not gpus_flag:
        gpus_from += f" x {pp} pipeline stages ('stage=N layers=M')"
    gbs = f.peek_int("train_batch_size")
    seq, seq_from = _hf_seq(log, f, f.peek_int("world_size"))
    facts = Facts(
        gbs if gbs and gbs > 0 else None,
        seq if seq and seq > 0 else None,
        gpus,
        f.origin("train_batch_size") if f.origin("train_batch_size") == "--arg" else "train_batch_size",
        seq_from,
        gpus_from,
    )
    notes: list[str] = [
        "DeepSpeed's ThroughputTimer times forward to step() of each micro-batch (deepspeed/utils/timer.py): data "
        "loading between them, outside DeepSpeed's own dataloader, is not in its step"
    ]
    if log.ds_per_micro_step:
        notes.append(
            "DeepSpeed < 0.8 logs CurrSamplesPerSec per micro-step (deepspeed/utils/timer.py @v0.7.0): the step is "
            "train_batch_size / that rate, exact at gradient_accumulation_steps 1"
        )
    if log.ds_running_average:
        notes.append(
            "DeepSpeed < 0.7 logs only SamplesPerSec, the average since its start_step (deepspeed/utils/timer.py "
            "@v0.5.0 avg_samples_per_sec): each interval is that running average"
        )
    precision, _ = _ds_precision(f)
    shard = _ds_sharding(log, f, precision)
    offload = f.raw("zero_config") or ""
    if _DS_OFFLOAD.search(offload):
        f.missing.append("layout (ZeRO-Offload to the host: perfmodel does not price host Adam or its PCIe copies)")
    mbs = f.int("train_micro_batch_size_per_gpu")
    gas = f.int("gradient_accumulation_steps")
    if not gbs:
        f.missing.append("train_batch_size (give --arg train_batch_size=N)")
    if not seq:
        f.missing.append("seq_length (a DeepSpeed log does not state it; give --arg seq_length=N)")
    if gpus is None:
        f.missing.append("gpus (no world_size in the DeepSpeed config dump; give --gpus N)")
    hf = _Fields(log.hf_args, f.over)  # the Trainer's arguments where DeepSpeed ran under it
    recompute, how_rc = _hf_recompute(hf)
    f.given |= hf.given
    if recompute is None:
        f.missing.append(
            "recompute (the model code's activation checkpointing, which a DeepSpeed log does not state; give "
            "--arg recompute=none|full|selective)"
        )
    if model_ref or log.hf_config or log.hf_banner:  # under the Trainer: its model config or parameter count
        model, how = hf_log_model(log, f, model_ref)
        _hf_partial(log, model, f)
    else:
        model, how = None, ""
        f.missing.append("model (a DeepSpeed log does not state the model's shape; give --model ID|FILE)")
    built = Built("deepspeed", None, f.missing, facts, model, precision, notes)
    if f.missing or model is None or not (gbs and seq and gpus and mbs and gas) or shard is None:
        return built
    _positive_fields(train_micro_batch_size_per_gpu=mbs, gradient_accumulation_steps=gas)
    dp = gpus // pp
    if gbs != mbs * gas * dp:  # DeepSpeedConfig._batch_assertion
        raise InputError(
            "log", "train_batch_size", f"{gbs} != micro-batch {mbs} x accumulation {gas} x data parallel {dp}"
        )
    fsdp, how_shard, o = shard
    if pp > 1 and fsdp in ("zero2", "zero3"):  # deepspeed/runtime/pipe/engine.py: asserted before the engine runs
        raise InputError(
            "log",
            "zero_optimization_stage",
            f"{fsdp} with the PipelineEngine: DeepSpeed refuses it ('ZeRO-2 and "
            "ZeRO-3 are incompatible with pipeline parallelism', runtime/pipe/engine.py)",
        )
    stated = {
        "fsdp": Stated(fsdp, how_shard, o),
        "recompute": Stated(recompute, how_rc, f.origin("recompute") if "recompute" in f.over else "log"),
    }
    if fsdp.startswith("zero"):  # zero_config's overlap_comm (deepspeed/runtime/zero/config.py: unset = stage 3)
        ov = re.search(r"\boverlap_comm=(True|False)\b", offload)
        if ov:
            stated["dp_grad_reduce_overlap"] = Stated(ov.group(1).lower(), f"zero_config overlap_comm={ov.group(1)}")
    if pp > 1:  # runtime/pipe/schedule.py TrainSchedule: 2 (m + p - 1) steps, forward and backward alternating
        # (PipeDream-flush 1F1B), ReduceGrads after the last backward
        why = f"DeepSpeed PipelineEngine over {pp} stages: TrainSchedule (1F1B), gradients reduced after the flush"
        stated["pipeline_schedule"] = Stated("1f1b", why)
        stated["dp_grad_reduce_overlap"] = Stated("false", why)
        notes.append(
            "the PipelineModule's layers are split as its partition method chose (the 'stage=N layers=M' lines); "
            "perfmodel splits the decoder layers evenly"
        )
    notes.append(
        "the model code's kernels (attention, fusions, projections) are not in a DeepSpeed log: they are "
        "megatron-deepspeed-2023's unless --stack-set names them"
    )
    lay = Layout(
        gpus=gpus,
        gbs=gbs,
        seq=seq,
        pp=pp,
        mbs=mbs,
        fsdp=fsdp in PARAM_SHARDING,
        recompute=recompute,  # type: ignore[arg-type]
    )
    software = f"DeepSpeed {log.ds_version}" if log.ds_version else ""
    built.run = Run(
        model,
        how,
        lay,
        precision or "bf16",
        "deepspeed",
        notes,
        stated,
        software=software,
        states="DeepSpeed engine configuration dump",
    )
    return built


# ---- the Hugging Face Trainer (huggingface/transformers): its banner, train metrics, model config, arguments -------

# transformers' attention default: 'sdpa' where torch >= 2.1.1 supports it, from v4.36.0 (huggingface/transformers
# v4.36.0 release notes, 'torch.nn.functional.scaled_dot_product_attention ... used by default'; modeling_utils
# _check_and_enable_sdpa), 'eager' before; sdpa on a causal mask without padding runs PyTorch's flash backend (FA2)
_HF_SDPA_FROM = (4, 36)
# transformers 5 loads a checkpoint in its own dtype by default (dtype="auto"; huggingface/trl#5457 on the v5
# default); 4.x from_pretrained loads float32 unless torch_dtype is passed (modeling_utils.PreTrainedModel
# from_pretrained, torch_dtype=None)
_HF_DTYPE_AUTO_FROM = (5, 0)
# TrainingArguments.fsdp (trainer_utils.py FSDPOption values) -> the torch FSDP sharding strategy it names
_HF_FSDP = {
    "full_shard": "FULL_SHARD",
    "shard_grad_op": "SHARD_GRAD_OP",
    "hybrid_shard": "HYBRID_SHARD",
    "hybrid_shard_zero2": "_HYBRID_SHARD_ZERO2",
}
# Hugging Face model types whose attention and MLP are separate q/k/v and gate/up projections (transformers
# modeling_llama.py LlamaAttention q_proj / k_proj / v_proj, LlamaMLP gate_proj / up_proj, and the models that copy
# them); GPT-NeoX, Phi-3 and Falcon fuse them
_HF_SEPARATE = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2")


def _hf_version(doc: dict[str, Any]) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.(\d+)", str(doc.get("transformers_version", "")))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _hf_doc(log: ParsedLog) -> dict[str, Any] | None:
    """The logged 'Model config' JSON as a dict (None when absent or not JSON)."""
    if not log.hf_config:
        return None
    try:
        doc = json.loads(log.hf_config)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def hf_log_model(log: ParsedLog, f: _Fields, model_ref: str | None) -> tuple[ModelSpec | None, str]:
    """The model of a Trainer log: --model; else the logged 'Model config' JSON (the catalog model its _name_or_path
    names where the shapes agree, else built from it as from a config.json); else the catalog model whose total
    parameter count is the banner's 'Number of trainable parameters' (a full fine-tune or pre-training run)."""
    if model_ref:
        return load_model(model_ref), f"--model {model_ref}"
    doc = _hf_doc(log)
    if doc is not None:
        from perfmodel.specs.hf_config import from_hf_config

        try:
            spec = from_hf_config(doc, "log-model-config.json", ModelSpec)
        except InputError as exc:
            f.missing.append(f"model (the logged 'Model config' is not a model perfmodel builds: {exc}; give --model)")
            return None, ""
        name = str(doc.get("_name_or_path", ""))
        cat = hf_catalog(name) if name else None
        if cat is not None and _shape(cat) == _shape(spec):
            return cat, f"the logged Model config ({log.hf_config_class}, _name_or_path {name}): catalog {cat.id}"
        return spec, f"built from the logged Model config ({log.hf_config_class})"
    n = log.hf_banner.get("Number of trainable parameters")
    if n:
        hits = [c for c in _catalog() if param_counts(c).total == n]
        if len(hits) == 1:
            return hits[0], f"'Number of trainable parameters = {n:,}': the catalog's {hits[0].id} has exactly that"
    f.missing.append(
        "model (no 'Model config' JSON in the log"
        + (f" and no catalog model has {n:,} parameters" if n else "")
        + "; give --model ID|FILE)"
    )
    return None, ""


# the Trainer's optimizers (transformers trainer.py Trainer.get_optimizer_cls_and_kwargs): adamw_torch and
# adamw_torch_fused are torch.optim.AdamW (foreach by default on CUDA, torch/optim/optimizer.py
# _default_to_fused_or_foreach; fused=True for _fused), adamw_apex_fused apex's FusedAdam: multi-tensor kernels, with
# torch's clip_grad_norm_ (foreach) beside them; adamw_hf is transformers.optimization.AdamW, a Python loop of 7-8
# in-place ops per parameter (the per_param count, 10 a tensor, includes 2 clipping kernels the foreach clip does not
# launch per tensor)
_HF_OPTIM = {
    "adamw_torch": "multi_tensor",
    "adamw_torch_fused": "multi_tensor",
    "adamw_apex_fused": "multi_tensor",
    "adamw_hf": "per_param",
}


def _hf_optim(f: _Fields) -> Stated | None:
    """The TrainingArguments optim as the stack's optimizer_launches; another optimizer (Adafactor, 8-bit Adam, ...)
    keeps a different state and is named as not priced."""
    raw = f.raw("optim")
    if raw is None:
        return None
    name = raw.split(".")[-1].strip("'\"").lower()  # 'OptimizerNames.ADAMW_TORCH' or 'adamw_torch'
    if name not in _HF_OPTIM:
        f.missing.append(f"optim ({raw}: perfmodel prices AdamW's state and kernels only)")
        return None
    return Stated(_HF_OPTIM[name], f"optim={raw}", f.origin("optim"))


def _hf_recompute(f: _Fields) -> tuple[str | None, str]:
    """--arg recompute, else TrainingArguments gradient_checkpointing (each decoder layer under torch.utils.checkpoint:
    modeling_utils gradient_checkpointing_enable, the whole layer recomputed = full)."""
    given = f.raw("recompute")
    if given is not None:
        if given not in _DS_RECOMPUTE:
            raise InputError("--arg", "recompute", f"{given!r}: one of {', '.join(_DS_RECOMPUTE)}")
        return given, f.said("recompute")
    gc = f.raw("gradient_checkpointing")
    if gc in ("True", "False"):
        return ("full" if gc == "True" else "none"), f"gradient_checkpointing={gc}"
    return None, ""


def _hf_seq(log: ParsedLog, f: _Fields, world: int | None) -> tuple[int | None, str]:
    """--arg seq_length, else world x train_tokens_per_second / train_samples_per_second: include_tokens_per_second
    counts the tokens of one process's first batch x max_steps x accumulation (trainer.py num_tokens: per device,
    padding included), the samples are the whole job's."""
    seq = f.peek_int("seq_length")
    if seq:
        return seq, "--arg seq_length"
    tok, smp = log.hf_metrics.get("train_tokens_per_second"), log.hf_metrics.get("train_samples_per_second")
    if world and tok and smp and tok > 0 and smp > 0 and tok * world / smp < 2**40:
        return round(tok * world / smp), (
            "train_tokens_per_second (per device) x processes / train_samples_per_second: the first batch's padded length"
        )
    return None, ""


def _hf_partial(log: ParsedLog, model: ModelSpec | None, f: _Fields) -> None:
    """A run that trains only part of the model (the banner's trainable parameters a fraction of its total) is named."""
    trainable = log.hf_banner.get("Number of trainable parameters")
    if model is not None and trainable and trainable < 0.99 * param_counts(model).total:
        f.missing.append(
            f"model ({trainable:,} of {param_counts(model).total:,} parameters trainable: a LoRA / PEFT or "
            "frozen-layer run; perfmodel prices full-parameter training)"
        )


def hf_trainer_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A Hugging Face Trainer log's run: the batch, micro-batch and accumulation of its 'Running training' banner
    (the data-parallel size their quotient), the measurement its train metrics (train_samples_per_second over the
    whole train_runtime), the model from its 'Model config' JSON (or its parameter count), precision,
    gradient_checkpointing and fsdp from its TrainingArguments dump (ZeRO from DeepSpeed's own lines when the Trainer
    ran DeepSpeed); predicted on llm-foundry-2024, the PyTorch FSDP / DDP stack on Hugging Face modules."""
    b = log.hf_banner
    gbs = b.get("Total train batch size (w. parallel, distributed & accumulation)")
    mbs = b.get("Instantaneous batch size per device") or f.peek_int("per_device_train_batch_size")
    gas = b.get("Gradient Accumulation steps") or f.peek_int("gradient_accumulation_steps")
    sps = log.hf_metrics.get("train_samples_per_second")
    if log.hf_bar:
        notes = [
            "step times from the Trainer's progress bar: tqdm's smoothed s/it of each optimizer step "
            "(trainer_callback.py ProgressCallback, tqdm format_meter rate)"
        ]
        if sps and gbs:
            notes.append(
                f"the train metrics' {sps:g} samples/s (the average over train_runtime, start-up, evaluation and "
                f"checkpoint saves included) is a step of {gbs / sps:.3f} s"
            )
    else:
        notes = [
            "the Trainer's train_samples_per_second is the average over train_runtime, which starts before the first "
            "step and includes evaluation and checkpoint saves (transformers trainer.py _inner_training_loop)"
        ]
    if "DataParallel batch" in b:
        f.missing.append("layout (torch DataParallel in one process: perfmodel prices one process per GPU)")
    world = gbs // (mbs * gas) if gbs and mbs and gas and gbs % (mbs * gas) == 0 else None
    if gpus_flag and world and gpus_flag != world:
        raise InputError(
            "--gpus", str(gpus_flag), f"the Trainer's batch {gbs} / ({mbs} per device x {gas}) is {world} processes"
        )
    gpus = gpus_flag or world
    gpus_from = "--gpus" if gpus_flag else ("total batch / (per device x accumulation)" if world else "")
    seq, seq_from = _hf_seq(log, f, world)
    facts = Facts(gbs, seq, gpus, "Total train batch size" if gbs else "", seq_from, gpus_from)
    if not gbs or not mbs or not gas:
        f.missing.append("batch (no 'Running training' banner with the batch sizes)")
    if not seq:
        f.missing.append("seq_length (the Trainer does not log it; give --arg seq_length=N)")
    model, how = hf_log_model(log, f, model_ref)
    if model is not None and model.is_moe:
        f.missing.append(f"model ({model.id} is an MoE: transformers' expert loop is not priced)")
    _hf_partial(log, model, f)
    if log.hf_resumed_at and not log.hf_bar:
        steps = b.get("Total optimization steps") or 0
        f.missing.append(
            f"a measurement (resumed at step {log.hf_resumed_at} of {steps}: train_samples_per_second counts every "
            "step over a runtime that ran only the rest, trainer.py speed_metrics)"
        )
    # DeepSpeed's dump where the Trainer ran it: its missing fields are the run's (one list)
    ds = _Fields(log.ds_config, f.over)
    ds.missing = f.missing
    precision = None
    if f.raw("bf16") == "True":
        precision = "bf16"
    elif f.raw("fp16") == "True":
        precision = "fp16"
    elif log.ds_config:
        precision, _ = _ds_precision(ds)
    elif f.present("bf16"):
        f.missing.append("precision (TrainingArguments bf16=False, fp16=False: fp32 training is not priced)")
    else:
        f.missing.append("precision (no TrainingArguments dump; give --arg bf16=True or --arg fp16=True)")
    recompute, how_rc = _hf_recompute(f)
    if recompute is None:
        f.missing.append(
            "recompute (no TrainingArguments gradient_checkpointing; give --arg recompute=none|full|selective)"
        )
    built = Built("hf_trainer", None, f.missing, facts, model, precision, notes)
    stated: dict[str, Stated] = {}
    if log.ds_config:
        shard = _ds_sharding(log, ds, precision)
        if shard is None:  # _ds_sharding named what it lacks
            return built
        stated["fsdp"] = Stated(*shard)
    else:
        options = set(re.findall(r"[a-z_0-9]+", (f.raw("fsdp") or "").lower())) - {"fsdpoption"}
        strategy = next((_HF_FSDP[o] for o in _HF_FSDP if o in options), None)
        if "offload" in options:
            f.missing.append("fsdp (FSDP offload to the host: perfmodel does not price host Adam or its PCIe copies)")
        if f.raw("deepspeed") not in (None, "None"):
            f.missing.append("fsdp (the Trainer ran DeepSpeed but its config dump is not in the log)")
            return built
        if not f.present("fsdp"):
            f.missing.append("fsdp (no TrainingArguments dump; give --arg fsdp=full_shard|shard_grad_op|none)")
            return built
        said = f.said("fsdp")
        fsdp_cfg = f.raw("fsdp_config") or ""
        v2 = re.search(r"'(?:fsdp_)?version': 2\b", fsdp_cfg)  # accelerate's FSDP2 (fully_shard)
        if strategy is None:
            stated["fsdp"] = Stated("none", f"{said}: DistributedDataParallel", f.origin("fsdp"))
            # the Trainer wraps the model in torch DDP through accelerate, bucket_cap_mb = ddp_bucket_cap_mb (None:
            # torch's 25 MiB): its buckets, not the stand-in preset's one collective per FSDP unit
            cap = f.raw("ddp_bucket_cap_mb")
            stated["dp_buckets"] = Stated(
                "torch_ddp", f"{said}: torch DDP buckets (ddp_bucket_cap_mb={cap})", f.origin("fsdp")
            )
            if cap not in (None, "25"):
                notes.append(f"ddp_bucket_cap_mb={cap}: perfmodel counts torch DDP's default 25 MiB buckets")
            notes.append(
                "torch DDP's buckets are counted on bf16 gradients: a model kept in fp32 under autocast has twice as "
                "many (a latency term only)"
            )
        else:
            kind = "fsdp2" if v2 else "fsdp1"
            stated["fsdp"] = Stated(kind, f"{said}: torch FSDP {strategy}" + (", fsdp_version 2" if v2 else ""), "log")
            keep = strategy in ("SHARD_GRAD_OP", "_HYBRID_SHARD_ZERO2")
            stated["reshard_after_forward"] = Stated(str(not keep).lower(), said, "log")
            if "HYBRID" in strategy:  # torch FSDP shards within the node: its size is not in the log
                group = f.peek_int("hybrid_shard_group")
                if not group:
                    f.missing.append(
                        "hybrid_shard_group (HYBRID_SHARD shards within a node; give --arg hybrid_shard_group=N)"
                    )
                else:
                    stated["hybrid_shard_group"] = Stated(str(group), f.said("hybrid_shard_group"), "--arg")
    if f.missing or model is None or not (gbs and seq and gpus and mbs and gas) or recompute is None:
        return built
    stated["recompute"] = Stated(recompute, how_rc, f.origin("recompute", "gradient_checkpointing"))
    doc = _hf_doc(log)
    mtype = str(doc.get("model_type", "")) if doc else ""
    if mtype in _HF_SEPARATE or (doc is None and model.hf_names):
        stated["projections"] = Stated(
            "separate", f"{mtype or model.id}: transformers' q_proj / k_proj / v_proj and gate_proj / up_proj", "log"
        )
    version = _hf_version(doc) if doc else None
    if version:
        sdpa = version >= _HF_SDPA_FROM
        stated["attention_kernel"] = Stated(
            "fa2" if sdpa else "unfused",
            f"transformers_version {doc.get('transformers_version') if doc else ''}: transformers' default "
            "attn_implementation (not logged; an explicit one overrides it) "
            + ("sdpa, PyTorch's flash backend (FA2) on a causal mask without padding" if sdpa else "eager"),
            "log",
        )
    if version and version < _HF_DTYPE_AUTO_FROM and stated["fsdp"].value == "none" and not log.ds_config:
        # DDP on a model from_pretrained loaded in float32: accelerate runs each forward under torch.autocast
        stated["param_dtype"] = Stated(
            "fp32_autocast",
            f"transformers_version {doc.get('transformers_version') if doc else ''} with {precision}=True and no "
            "FSDP: from_pretrained loads the weights in float32 unless torch_dtype is passed (not logged: "
            "assumed), and accelerate wraps the forward in torch.autocast, the weights staying fp32 (accelerate "
            "v1.6.0 accelerator.py prepare_model, utils/modeling.py get_mixed_precision_context_manager)",
            "log",
        )
    elif stated["fsdp"].value == "none" and not log.ds_config:
        notes.append(
            "the dtype the model was loaded in is not logged (transformers >= 5 loads the checkpoint's dtype by "
            "default): the weights are priced in bf16 with an fp32 master, without autocast casts"
        )
    if f.raw("torch_compile") == "True":
        stated["fusions"] = Stated("torch_compile", "torch_compile=True", "log")
    optim = _hf_optim(f)
    if optim is not None:
        stated["optimizer_launches"] = optim
    shard_params = stated["fsdp"].value in PARAM_SHARDING or stated["fsdp"].value == "fsdp1"
    lay = Layout(gpus=gpus, gbs=gbs, seq=seq, mbs=mbs, fsdp=shard_params, recompute=recompute)  # type: ignore[arg-type]
    built.run = Run(
        model,
        how,
        lay,
        precision or "bf16",
        "hf_trainer",
        notes,
        stated,
        states="Hugging Face Trainer banner and arguments",
    )
    return built


# ---- nanotron (huggingface/nanotron@0e0a27ea; logparse's module docstring for the lines) ----------------------------

# LlamaConfig's fields at 0e0a27ea (config/models_config.py) under their Hugging Face config.json names, the same
_NT_LLAMA_KEYS = (
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_hidden_layers",
    "num_key_value_heads",
    "vocab_size",
    "max_position_embeddings",
    "rope_theta",
    "rms_norm_eps",
    "hidden_act",
    "tie_word_embeddings",
)
_NT_ENGINE = {"OneForwardOneBackwardPipelineEngine": "1f1b", "AllForwardAllBackwardPipelineEngine": "gpipe"}
_NT_DTYPE = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}


def _nt_value(raw: str) -> Any:
    """A repr'd scalar of the dump as JSON would hold it (True -> true, '...' -> str, numbers)."""
    if raw in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[raw]
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return raw


def nanotron_model(log: ParsedLog, f: _Fields, model_ref: str | None) -> tuple[ModelSpec | None, str]:
    """--model; else the dump's LlamaConfig (models/llama.py builds the Llama decoder from it) as a config.json:
    the catalog model of the same shape and vocabulary, else the model built from it."""
    if model_ref:
        return load_model(model_ref), f"--model {model_ref}"
    cls = f.raw("model_config") or ""
    if cls != "LlamaConfig":
        f.missing.append(
            f"model (the config's model_config is {cls or 'not in the log'}: perfmodel reads nanotron's LlamaConfig; "
            "give --model)"
        )
        return None, ""
    doc: dict[str, Any] = {"model_type": "llama"}
    for k in _NT_LLAMA_KEYS:
        v = f.raw(k)
        if v is not None:
            doc[k] = _nt_value(v)
    from perfmodel.specs.hf_config import from_hf_config

    try:
        spec = from_hf_config(doc, "log-LlamaConfig", ModelSpec)
    except InputError as exc:
        f.missing.append(f"model (the logged LlamaConfig is not a model perfmodel builds: {exc}; give --model)")
        return None, ""
    hits = match_catalog(spec, 0, 1)
    if len(hits) == 1:
        return hits[0], f"the logged LlamaConfig: the catalog's {hits[0].id} (same shape and vocabulary)"
    return spec, "built from the logged LlamaConfig (nanotron's Llama decoder)"


def _nt_stated(f: _Fields, zero: int, dp: int) -> dict[str, Stated]:
    """The stack features the ParallelismArgs and OptimizerArgs of the dump state over nanotron-2025's defaults."""
    out: dict[str, Stated] = {}
    mode = f.raw("tp_mode") or ""
    if "REDUCE_SCATTER" in mode or "ALL_REDUCE" in mode:
        out["sequence_parallel"] = Stated(_tf("REDUCE_SCATTER" in mode), f"tp_mode={mode}")
    async_tp = f.raw("tp_linear_async_communication")
    if async_tp in ("True", "False"):
        out["tp_bwd_async"] = Stated(async_tp.lower(), f"tp_linear_async_communication={async_tp}")
    engine = f.raw("pp_engine") or ""
    kind = next((v for k, v in _NT_ENGINE.items() if k in engine), None)
    if kind:
        out["pipeline_schedule"] = Stated(kind, f"pp_engine={engine.split(' object')[0].split('.')[-1]}")
    fp32 = f.raw("accumulate_grad_in_fp32")
    if zero == 1 and fp32 == "True" and dp > 1:
        # trainer.py @0e0a27ea init_model: make_ddp = dp > 1 and not (accumulate_grad_in_fp32 and zero_stage > 0): no
        # DDP; after the backward, sync_gradients_across_dp all-reduces the whole fp32 accumulation buffer
        # (reduce_scatter=False), the optimizer states are sharded (ZeroDistributedOptimizer) and the updated
        # parameters all-gathered: DeepSpeed BF16_Optimizer's pattern
        why = "zero_stage=1 with accumulate_grad_in_fp32=True: no DDP, one all-reduce of the fp32 buffer (trainer.py)"
        out["fsdp"] = Stated("bf16_optimizer", why)
        out["optimizer_shard"] = Stated("dp", "zero_stage=1: ZeroDistributedOptimizer shards the optimizer states")
        out["dp_grad_reduce_overlap"] = Stated("false", why)
        out["dp_buckets"] = Stated("one", why)
    if fp32 == "False":
        for name in ("main_grad_precision", "grad_reduce_precision"):
            out[name] = Stated("bf16", "accumulate_grad_in_fp32=False: DDP all-reduces the bf16 .grad")
        out["grad_accumulation_fusion"] = Stated("true", "accumulate_grad_in_fp32=False: no fp32 accumulation pass")
    if f.present("clip_grad") and f.raw("clip_grad") is None:
        out["optimizer_launches"] = Stated("multi_tensor", "clip_grad=None: no per-tensor norm and clip loop")
    return out


def nanotron_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A nanotron log's run: dp / tp / pp, the micro-batch, accumulation and sequence of its pformat'ed Config (the
    batch and sequence of its 'mbs: .. | grad_accum: ..' start line where the Config is not in the log), the model from
    the dump's LlamaConfig, bf16 / fp16 from ModelArgs.dtype, recompute_layer as full recompute, and the TP mode, async
    TP, pipeline engine, ZeRO stage and fp32 accumulation as stack features over nanotron-2025."""
    st = log.nt_start
    cp = f.peek_int("context_parallel_size") or 1
    ep = f.peek_int("expert_parallel_size") or 1
    if cp > 1:
        f.missing.append(f"layout (context_parallel_size={cp}: nanotron's ring attention is not read)")
    if ep > 1:
        f.missing.append(f"layout (expert_parallel_size={ep}: nanotron's MoE is not read)")
    mbs = f.peek_int("micro_batch_size") or _int_or_none(st.get("mbs"))
    accum = f.peek_int("batch_accumulation_per_replica") or _int_or_none(st.get("grad_accum"))
    seq = f.peek_int("sequence_length") or _int_or_none(st.get("sequence_length"))
    logged = _int_or_none(st.get("global_batch_size"))  # samples on the start line, in every version
    dp_start = logged // (mbs * accum) if logged and mbs and accum and logged % (mbs * accum) == 0 else None
    dp = f.int("dp", default=dp_start)
    tp, pp = f.int("tp"), f.int("pp")
    world = dp * tp * pp if dp and tp and pp else None
    if gpus_flag and world and gpus_flag != world:
        raise InputError("--gpus", str(gpus_flag), f"the config's dp x tp x pp is {world}")
    gbs = mbs * accum * dp if mbs and accum and dp else logged
    if gbs and logged and logged != gbs:
        raise InputError("log", "global_batch_size", f"{logged} on the start line, {gbs} = mbs x accumulation x dp")
    gpus = gpus_flag or world
    facts = Facts(
        gbs,
        seq,
        gpus,
        "the start line's global_batch_size" if logged else ("micro_batch_size x accumulation x dp" if gbs else ""),
        "sequence_length" if seq else "",
        "--gpus" if gpus_flag else ("dp x tp x pp" if world else ""),
    )
    if not (mbs and accum):
        f.missing.append("batch (no TokensArgs in the config and no 'mbs: .. | grad_accum: ..' line)")
    if not seq:
        f.missing.append("sequence_length (give --arg sequence_length=N)")
    model, how = nanotron_model(log, f, model_ref)
    dtype = f.raw("dtype") or ""
    precision = _NT_DTYPE.get(dtype)
    if precision is None:
        f.missing.append(
            f"precision (ModelArgs.dtype={dtype}: perfmodel prices bf16 and fp16 nanotron runs)"
            if dtype
            else "precision (no ModelArgs.dtype in the log; give --arg dtype=torch.bfloat16)"
        )
    zero = f.peek_int("zero_stage")
    fp32 = f.raw("accumulate_grad_in_fp32")
    if zero not in (0, 1):
        f.missing.append(f"zero_stage ({zero}: nanotron has stages 0 and 1)" if zero is not None else "zero_stage")
    elif zero == 1 and fp32 == "False":
        f.missing.append(
            "zero_stage (1 without accumulate_grad_in_fp32: DDP all-reduces the bf16 gradients into a sharded "
            "optimizer, a combination no stack value prices)"
        )
    notes = [
        "step times from nanotron's interval lines: elapsed_time_per_iteration_ms to 3 significant digits "
        "(human_format), so each is known to +-0.5%"
    ]
    bucket = f.peek_int("ddp_bucket_cap_mb")
    if bucket is not None and bucket != 25:
        notes.append(f"ddp_bucket_cap_mb={bucket}: perfmodel counts torch DDP's default 25 MiB buckets")
    built = Built("nanotron", None, f.missing, facts, model, precision, notes)
    if f.missing or model is None or not (gbs and seq and gpus and mbs and dp) or zero is None:
        return built
    rc = f.raw("recompute_layer")
    recompute = "full" if rc == "True" else "none"
    stated = _nt_stated(f, zero, dp)
    stated["recompute"] = Stated(recompute, f"recompute_layer={rc}" if rc else "recompute_layer not in the log")
    lay = Layout(gpus=gpus, gbs=gbs, seq=seq, tp=tp or 1, pp=pp or 1, mbs=mbs, recompute=recompute)  # type: ignore[arg-type]
    built.run = Run(model, how, lay, precision or "bf16", "nanotron", notes, stated, states="nanotron Config dump")
    return built


def _int_or_none(text: str | None) -> int | None:
    try:
        v = int(text) if text is not None else None
    except ValueError:
        return None
    return v if v is not None and 0 < v < 2**40 else None


# ---- modded-nanogpt (logparse's module docstring) ----------------------------------------------------------------


def modded_nanogpt_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A modded-nanogpt record's log: its step times (train_time differences) and GPU count; the tokens of a step are
    in its script's hyperparameters, not read, so tokens/s per GPU is not measured; not predicted (its Muon optimizer,
    custom FP8 and FlexAttention kernels have no preset)."""
    gpus = gpus_flag or log.mn_gpus or None
    gbs, seq = f.peek_int("global_batch_size"), f.peek_int("seq_length")  # only as --arg: the script's, not read
    facts = Facts(
        gbs,
        seq,
        gpus,
        "--arg global_batch_size" if gbs else "",
        "--arg seq_length" if seq else "",
        "--gpus" if gpus_flag else ("the log's GPU list" if gpus else ""),
    )
    notes = [
        "modded-nanogpt's step times: the train_time difference of consecutive step lines over their steps (the "
        "script keeps its warm-up steps and validation out of train_time)"
    ]
    f.missing.append(
        "a modded-nanogpt preset (its Muon optimizer, custom FP8 and FlexAttention kernels are not priced; the "
        "tokens of a step are in the script's hyperparameters, not read)"
    )
    return Built("modded-nanogpt", None, f.missing, facts, None, None, notes)


# ---- nanoGPT (logparse's module docstring) -------------------------------------------------------------------------

NANOGPT_BLOCK = 1024  # karpathy/nanoGPT@dc81cb36 train.py: block_size = 1024 (the default a config may override)


def nanogpt_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """A nanoGPT log: its per-iteration times, the tokens of one step ('tokens per iteration will be'), the sequence
    block_size (an 'Overriding: block_size = N' line, else train.py's 1024) and the GPU count from --gpus (the log
    does not print the world size); measured, not predicted (no nanoGPT preset)."""
    raw_block = f.raw("block_size")
    if raw_block == "?":  # the config file sets it as an expression or a name (configurator.py exec's the file)
        f.missing.append("block_size (the printed config sets it as an expression; give --arg block_size=N)")
        block = None
    else:
        block = f.peek_int("block_size") or NANOGPT_BLOCK
    tokens = log.ng_tokens
    gbs = f.peek_int("global_batch_size") or (tokens // block if tokens and block and tokens % block == 0 else None)
    seq = f.peek_int("seq_length") or (block if gbs else None)
    facts = Facts(
        gbs,
        seq,
        gpus_flag,
        ("--arg global_batch_size" if f.present("global_batch_size") else "tokens per iteration / block_size")
        if gbs
        else "",
        ("block_size" if f.present("block_size") else "train.py's default block_size 1024") if seq else "",
        "--gpus" if gpus_flag else "",
    )
    notes = [
        "nanoGPT's per-iteration times (train.py: one iteration on the master process; the one after an evaluation "
        "left out); its mfu is against the A100's 312 TFLOP/s whatever the GPU (model.py estimate_mfu)"
    ]
    if not tokens:
        f.missing.append("batch (no 'tokens per iteration will be' line)")
    f.missing.append(
        "a nanoGPT preset (perfmodel has read no preset from nanoGPT's train.py; the measurement is reported)"
    )
    return Built("nanogpt", None, f.missing, facts, None, None, notes)


# ---- OLMo / OLMo-core (logparse's module docstring) ------------------------------------------------------------------


OLMO_SPEED_WINDOW = 100  # allenai/OLMo olmo/config.py SpeedMonitorConfig.window_size (v0.2.0 .. @59a53e3f)


def olmo_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Built:
    """An OLMo or OLMo-core log: its measurement (tokens/s per device, 1 / batches per second) with the batch, the
    sequence and the world size where OLMo logged its TrainConfig (global_train_batch_size / device_train_batch_size,
    model.max_sequence_length); not predicted: perfmodel has no preset read from OLMo's trainer."""
    gbs = f.peek_int("global_train_batch_size")
    per_device = f.peek_int("device_train_batch_size")
    seq = f.peek_int("max_sequence_length")
    world = gbs // per_device if gbs and per_device and gbs % per_device == 0 else None
    if gpus_flag and world and gpus_flag != world:
        raise InputError("--gpus", str(gpus_flag), f"global_train_batch_size / device_train_batch_size is {world}")
    gpus = gpus_flag or world
    facts = Facts(
        gbs,
        seq,
        gpus,
        "global_train_batch_size" if gbs else "",
        "model.max_sequence_length" if seq else "",
        "--gpus" if gpus_flag else ("global_train_batch_size / device_train_batch_size" if world else ""),
    )
    what = "OLMo-core" if log.ol_core else "OLMo"
    # OLMo's SpeedMonitor averages its window (SpeedMonitorConfig.window_size, olmo/config.py: default 100): a rate
    # logged within window steps of the start still holds the first, slow steps
    window = 0 if log.ol_core else (f.peek_int("window_size") or OLMO_SPEED_WINDOW)
    notes = [
        "OLMo-core's throughput/device tokens/s and batches/s of the logged step (speed_monitor.py); its MFU is "
        "against the H100's or B200's peak by device name and the A100's for any other GPU"
        if log.ol_core
        else "OLMo's throughput/device tokens/s and batches/s are averages over SpeedMonitor's window (up to 100 "
        "steps since the start or the last evaluation / checkpoint, olmo/train.py), so a slow early step weighs on "
        "the averages after it"
    ]
    f.missing.append(
        f"an {what} preset (perfmodel has read no preset from {what}'s trainer: its FSDP wrapping, kernels and "
        "model code are not priced; the measurement is reported)"
    )
    built = Built("olmo", None, f.missing, facts, None, None, notes, min_warmup=window)
    if window:
        notes.append(
            f"OLMo's rates average SpeedMonitor's window of {window} steps (window_size; olmo/config.py default 100): "
            f"the first {window} iterations after each start count as warm-up"
        )
    return built


def _positive(text: str | None) -> float | None:
    """A positive finite number, else None."""
    try:
        v = float(text) if text is not None else None
    except ValueError:
        return None
    return v if v is not None and math.isfinite(v) and v > 0 else None


def build_run(log: ParsedLog, overrides: dict[str, str], model_ref: str | None, gpus: int | None) -> Built:
    """The run the log states (with --arg overrides, --model and --gpus): never an error for a field the log
    does not state (it is in `missing`), an InputError for one it states inconsistently."""
    # each framework's reader and the fields it reads: the job config (torchtitan), the config params (MaxText),
    # llm-foundry's config (Composer), DeepSpeed's engine dump, the Trainer's TrainingArguments
    readers = {
        "torchtitan": (torchtitan_run, log.args),
        "maxtext": (maxtext_run, log.args),
        "composer": (composer_run, log.args),
        "deepspeed": (deepspeed_run, log.ds_config),
        "hf_trainer": (hf_trainer_run, log.hf_args),
        "nanotron": (nanotron_run, log.nt_config),
        "olmo": (olmo_run, log.ol_config),
        "nanogpt": (nanogpt_run, log.ng_overrides),
        "modded-nanogpt": (modded_nanogpt_run, {}),
    }
    if log.framework in readers:
        reader, fields = readers[log.framework]
        f = _Fields(fields, overrides)
        built = reader(log, f, model_ref, gpus)
    else:
        args, labels = bridge_args(log.config) if log.config else ({}, {})
        args.update(log.args)
        f = _Fields(args, overrides, labels)
        built = megatron_run(log, f, model_ref, gpus)
        if log.framework == "nemo" and not args and not overrides:  # one item naming every field, not fifteen
            names = ", ".join(dict.fromkeys(m.split(" (")[0] for m in f.missing))
            f.missing[:] = [
                "the run's layout and model (a NeMo log states neither: give --arg NAME=VALUE with Megatron's "
                f"names for {names}, or --model for the shape)"
            ]
    built.missing = list(dict.fromkeys(f.missing))
    built.given = sorted(f.given)
    if built.run is not None:
        if built.missing:
            built.run = None
        elif built.given:
            built.run.notes.insert(0, "given with --arg: " + ", ".join(f"{k}={overrides[k]}" for k in built.given))
    return built
