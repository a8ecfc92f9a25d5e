"""The run a training log states (perfmodel/analysis/logparse.py reads it): the model shape, the layout, the
precision and the stack switches its argument dump or job config states, each field with where it came from.
perfmodel/analysis/logcheck.py measures that run and predicts it.

Nothing is guessed silently: a field perfmodel needs that the log does not state is named, with how to give
it (--arg NAME=VALUE adds or overrides an argument-dump field); defaults that follow from the framework's own
code are listed as notes.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any, get_args

from perfmodel.analysis.logparse import ParsedLog, software_of
from perfmodel.errors import InputError
from perfmodel.specs.layout import Layout
from perfmodel.specs.model import ModelSpec, load_model
from perfmodel.specs.specfile import data_dir
from perfmodel.specs.stack import RecomputeModule

RECOMPUTE_MODULES = get_args(RecomputeModule)

DEVICE_NAMES = {
    "NVIDIA H100 80GB HBM3": "h100-sxm",
    "NVIDIA H200": "h200-sxm",
    "NVIDIA H800": "h800-sxm",
    "NVIDIA A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA B200": "b200",
}


@dataclass
class Run:
    """A run as the log states it, ready to predict."""

    model: ModelSpec
    model_source: str
    layout: Layout
    precision: str
    framework: str
    notes: list[str] = field(default_factory=list)
    # the stack features the log states: feature -> (value as --stack-set takes it, the log field(s) saying so)
    stated: dict[str, tuple[str, str]] = field(default_factory=dict)
    software: str = ""  # the release the log names (NeMo container banner), else ""
    compiled: bool = False  # torchtitan: torch.compile on


class _Fields:
    """Argument-dump fields (Megatron) or the flattened job config (torchtitan), --arg overrides first.
    Every field read that is absent goes to `missing` with how to give it."""

    def __init__(self, args: dict[str, str], overrides: dict[str, str]):
        self.args, self.over = args, overrides
        self.missing: list[str] = []

    def raw(self, *names: str) -> str | None:
        for n in names:
            for src in (self.over, self.args):
                if n in src:
                    v = src[n].strip()
                    return None if v in ("None", "") else v
        return None

    def present(self, name: str) -> bool:
        return name in self.over or name in self.args

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

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        v = self.raw(name)
        if v is None:
            return default
        if v in ("True", "true", "1"):
            return True
        if v in ("False", "false", "0"):
            return False
        raise InputError("log", name, f"not True/False ({v!r})")


# ---- the model ----------------------------------------------------------------------------------


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


def megatron_model(f: _Fields, log: ParsedLog, tp: int) -> tuple[ModelSpec | None, str, int, int]:
    """The model the argument dump describes (None if a shape field is missing) -> (spec, how named,
    padded vocab, padding multiple)."""
    L = f.int("num_layers")
    h = f.int("hidden_size")
    heads = f.int("num_attention_heads")
    ffn = f.int("ffn_hidden_size")
    gqa = f.bool("group_query_attention", False)
    kv = f.int("num_query_groups") if gqa else heads
    vocab = log.vocab_unpadded or f.int("vocab_size", default=0) or 0
    padded = log.vocab_padded or f.int("padded_vocab_size", default=0) or 0
    if not vocab and not padded:
        f.missing.append(
            "vocab_size (no ' > padded vocab' line and no vocab_size in the dump; give --arg vocab_size=N or --model)"
        )
    if None in (L, h, heads, ffn, kv):
        return None, "", 0, 0
    assert L and h and heads and ffn and kv
    head_dim = f.int("kv_channels", default=h // heads)
    swiglu = f.bool("swiglu")
    mla = f.bool("multi_latent_attention", False)
    norm = (f.raw("normalization") or "").lower()
    attn: dict[str, Any] = {
        "kind": "mla" if mla else ("gqa" if kv < heads else "mha"),
        "num_heads": heads,
        "num_kv_heads": heads if mla else kv,
        "head_dim": head_dim,
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
    experts = f.int("num_experts", default=0)
    moe = None
    if experts:
        pattern = _layer_freq(f.raw("moe_layer_freq"), L)
        if pattern is None:
            f.missing.append("moe_layer_freq (a layer pattern perfmodel cannot express: give --model)")
            pattern = (0, 1)
        shared = f.int("moe_shared_expert_intermediate_size", default=0) or 0
        moe = {
            "num_experts": experts,
            "top_k": f.int("moe_router_topk"),
            "expert_intermediate_size": f.int("moe_ffn_hidden_size", default=ffn),
            "shared_experts": 1 if shared else 0,
            "shared_intermediate_size": shared,
            "first_dense_layers": pattern[0],
            "interval": pattern[1],
        }
    if f.missing:
        return None, "", 0, 0
    doc: dict[str, Any] = {
        "id": "log-model",
        "name": "model of the log's argument dump",
        "num_layers": L,
        "hidden_size": h,
        "vocab_size": vocab or padded,
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
    try:
        spec = ModelSpec(**doc)
    except ValueError as exc:
        raise InputError(
            "log",
            "model",
            f"the argument dump's shape is not a model perfmodel can build ({str(exc).splitlines()[-1]}); give --model",
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
        attention={
            "kind": "gqa" if kv < heads else "mha",
            "num_heads": heads,
            "num_kv_heads": kv,
            "head_dim": dim // heads,
        },
        ffn={"activation": "swiglu", "intermediate_size": hidden},
    )
    found = match_catalog(spec, 0, 1)
    if found:
        return found[0], f"catalog {found[0].id}, matched by the model args' shape"
    return spec, "built from torchtitan's model args (no catalog model has this shape)"


# ---- the layout ---------------------------------------------------------------------------------


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


def megatron_stack_sets(
    f: _Fields, recompute: str, precision: str | None, notes: list[str]
) -> dict[str, tuple[str, str]]:
    """The stack features a Megatron argument dump states (megatron/training/arguments.py names), as
    feature -> (--stack-set value, the dump field(s) saying so). A field absent from the dump states
    nothing: the feature stays the preset's. A value perfmodel cannot express is a note, not a guess."""
    out: dict[str, tuple[str, str]] = {}
    b = lambda n: f.bool(n) if f.present(n) else None
    if (v := b("tp_comm_overlap")) is not None:  # Transformer Engine userbuffers (--tp-comm-overlap)
        out["tp_overlap"] = ("userbuffers" if v else "none", f"tp_comm_overlap={v}")
    if (v := b("overlap_grad_reduce")) is not None:
        out["dp_grad_reduce_overlap"] = (_tf(v), f"overlap_grad_reduce={v}")
    if (v := b("overlap_param_gather")) is not None:
        out["dp_param_gather_overlap"] = (_tf(v), f"overlap_param_gather={v}")
    if (v := b("sequence_parallel")) is not None:
        out["sequence_parallel"] = (_tf(v), f"sequence_parallel={v}")
    if (v := b("cross_entropy_loss_fusion")) is not None:  # the 'native' fused loss also works in fp32
        impl = (f.raw("cross_entropy_fusion_impl") or "native").strip("'\"")
        out["cross_entropy"] = (
            "te" if v and impl == "te" else "fp32",
            f"cross_entropy_loss_fusion={v}, cross_entropy_fusion_impl={impl}",
        )
    if f.present("recompute_granularity"):
        out["recompute"] = (recompute, f"recompute_granularity={f.raw('recompute_granularity')}")
        mods = _list(f.raw("recompute_modules"))
        if recompute == "selective" and mods:
            known = [m for m in mods if m in RECOMPUTE_MODULES]
            if len(known) < len(mods):
                notes.append(
                    f"recompute_modules {', '.join(m for m in mods if m not in known)}: not a module "
                    "perfmodel models; the rest are recomputed"
                )
            out["recompute_modules"] = (",".join(known) or "none", f"recompute_modules={mods}")
        elif recompute == "selective":  # Megatron-LM arguments.py: --recompute-modules defaults to core_attn
            out["recompute_modules"] = (
                "core_attn",
                "recompute_granularity=selective, recompute_modules=None (Megatron-LM default ['core_attn'])",
            )
    disp = f.raw("moe_token_dispatcher_type")
    if disp is not None and f.int("num_experts", default=0):
        backend = (f.raw("moe_flex_dispatcher_backend") or "").lower()
        if disp == "flex":
            kind = "hybridep" if backend == "hybridep" else "deepep"
            src = f"moe_token_dispatcher_type=flex, moe_flex_dispatcher_backend={backend or 'None (deepep)'}"
        else:
            kind = {"allgather": "allgather", "alltoall": "alltoall", "alltoall_seq": "alltoall"}.get(disp, "")
            src = f"moe_token_dispatcher_type={disp}"
        if f.bool("moe_enable_deepep", False):  # older Megatron-Core: --moe-enable-deepep with flex
            kind, src = "deepep", src + ", moe_enable_deepep=True"
        if kind:
            out["moe_dispatcher"] = (kind, src)
        else:
            notes.append(f"moe_token_dispatcher_type={disp}: not a dispatcher perfmodel models; the preset's kept")
    if (v := b("overlap_moe_expert_parallel_comm")) is not None:
        out["moe_a2a_overlap"] = (_tf(v), f"overlap_moe_expert_parallel_comm={v}")
    if (v := b("moe_grouped_gemm")) is not None and f.int("num_experts", default=0):
        out["grouped_gemm"] = ("te" if v else "none", f"moe_grouped_gemm={v}")
    if precision and precision.startswith(("fp8", "mxfp8")) and f.raw("fp8_recipe"):
        r = f.raw("fp8_recipe") or ""
        kind = {"delayed": "delayed", "tensorwise": "current", "mxfp8": "mxfp8", "blockwise": "blockwise"}.get(r)
        if kind:
            out["fp8_recipe"] = (kind, f"fp8_recipe={r}")
    impl, enable, scope = f.raw("cuda_graph_impl"), b("enable_cuda_graph"), _list(f.raw("cuda_graph_scope"))
    if impl is not None or enable is not None:
        on = (impl not in (None, "none")) or bool(enable)
        full = bool(scope) and any(x in ("full_iteration", "full") for x in scope or [])
        out["cuda_graphs"] = (
            "full_iteration" if on and full else ("per_layer" if on else "none"),
            ", ".join(
                x
                for x in (
                    f"cuda_graph_impl={impl}" if impl is not None else "",
                    f"enable_cuda_graph={enable}" if enable is not None else "",
                    f"cuda_graph_scope={scope}" if scope else "",
                )
                if x
            ),
        )
    acc, bf = b("accumulate_allreduce_grads_in_fp32"), b("grad_reduce_in_bf16")
    if acc is not None or bf is not None:
        # Megatron-Core DDP: the main_grad buffer and the reduce use fp32 when grads accumulate in fp32
        fp32 = bool(acc) if acc is not None else not bf
        src = ", ".join(
            x
            for x in (
                f"accumulate_allreduce_grads_in_fp32={acc}" if acc is not None else "",
                f"grad_reduce_in_bf16={bf}" if bf is not None else "",
            )
            if x
        )
        out["main_grad_precision"] = ("fp32" if fp32 else "bf16", src)
        out["grad_reduce_precision"] = ("fp32" if fp32 and not bf else "bf16", src)
    if f.bool("use_megatron_fsdp", False) or f.bool("use_custom_fsdp", False):
        out["fsdp"] = ("megatron_fsdp", "use_megatron_fsdp=True")
    elif f.bool("use_torch_fsdp2", False):
        out["fsdp"] = ("fsdp2", "use_torch_fsdp2=True")
    elif (v := b("use_distributed_optimizer")) is not None:
        out["fsdp"] = ("zero1" if v else "none", f"use_distributed_optimizer={v}")
        if v:  # Megatron-Core DistributedOptimizer: sharded over the data-parallel group with context parallel
            out["optimizer_shard"] = ("dp_cp", "use_distributed_optimizer=True (Megatron-Core shards over dp x cp)")
    cp = _list(f.raw("cp_comm_type"))
    if cp and f.int("context_parallel_size", default=1) != 1:
        kind = {
            "p2p": "p2p",
            "a2a": "a2a",
            "all_gather": "allgather",
            "allgather": "allgather",
            "a2a+p2p": "a2a_p2p",
        }.get(cp[0], "")
        if kind and len(set(cp)) == 1:
            out["cp_comm_type"] = (kind, f"cp_comm_type={cp}")
        else:
            notes.append(f"cp_comm_type={cp}: not one kind perfmodel models; the preset's kept")
    ab = (f.raw("attention_backend") or "").split(".")[-1].lower()
    if ab in ("fused", "unfused", "local"):
        # AttnBackend (megatron/core/transformer/enums.py): fused = TE cuDNN fused attention; unfused = TE
        # unfused; local = Megatron's own DotProductAttention (the s^2 scores in HBM, as unfused)
        out["attention_kernel"] = (
            "cudnn" if ab == "fused" else "unfused",
            f"attention_backend={f.raw('attention_backend')}",
        )
    elif ab == "flash":
        notes.append(
            "attention_backend=flash: FlashAttention 2 or 3, whichever flash-attn package the run had "
            "installed (not in the log); the preset's attention kernel kept"
        )
    return out


def megatron_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Run | None:
    notes: list[str] = []
    tp = f.int("tensor_model_parallel_size") or 1
    pp = f.int("pipeline_model_parallel_size") or 1
    mbs = f.int("micro_batch_size")
    gbs = f.int("global_batch_size")
    seq = f.int("seq_length", "encoder_seq_length")
    world = f.int("world_size", default=0) or None
    gpus = gpus_flag or world
    if gpus_flag and world and gpus_flag != world:
        raise InputError("--gpus", str(gpus_flag), f"the log's world_size is {world}")
    if gpus is None:
        f.missing.append("world_size (give --gpus N)")
    defaults = []

    def opt(name: str, dflt: int) -> int:
        if not f.present(name):
            defaults.append(f"{name}={dflt}")
        return f.int(name, default=dflt) or dflt

    cp = opt("context_parallel_size", 1)
    ep = opt("expert_model_parallel_size", 1)
    if defaults:
        notes.append("absent from the dump (the release predates the feature), taken as off: " + ", ".join(defaults))
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
    precision = _precision_megatron(f, notes)
    model: ModelSpec | None
    if model_ref:
        model, how = load_model(model_ref), f"--model {model_ref}"
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
    else:
        model, how, _, _ = megatron_model(f, log, tp)
    if f.missing or model is None or precision is None:
        return None
    assert gpus and mbs and gbs and seq
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
    stated = megatron_stack_sets(f, recompute, precision, notes)
    if len(log.gbs_logged) > 1:
        raise InputError(
            "log",
            "global batch size",
            f"varies in the log ({', '.join(map(str, sorted(log.gbs_logged)))}"
            "; batch-size ramp-up): check a log of a fixed batch",
        )
    if log.gbs_logged and gbs not in log.gbs_logged:
        raise InputError(
            "log", "global_batch_size", f"{gbs} in the dump but {min(log.gbs_logged)} in the iteration lines"
        )
    lay = Layout(
        gpus=gpus, gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, mbs=mbs, fsdp=fsdp, recompute=recompute
    )  # type: ignore[arg-type]
    return Run(
        model, how, lay, precision, "nemo" if log.framework == "nemo" else "megatron", notes, stated, software_of(log)
    )


def _tt(f: _Fields, key: str) -> str | None:
    """A torchtitan config value by its last component (sections moved between releases)."""
    v = f.raw(key)
    if v is not None:
        return v
    last = key.split(".")[-1]
    for src in (f.over, f.args):
        for k, val in src.items():
            if k.split(".")[-1] == last and val.strip() not in ("None", ""):
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
    except ValueError:
        raise InputError("log", key, f"not an integer ({v!r})") from None


def torchtitan_run(log: ParsedLog, f: _Fields, model_ref: str | None, gpus_flag: int | None) -> Run | None:
    notes: list[str] = []
    if not log.args and not f.over:
        f.missing.append(
            "job config (no 'Running with args: {...}' line: run with --job.print_args, or give "
            "--arg parallelism.tensor_parallel_degree=N ... )"
        )
    tp = _tt_int(f, "parallelism.tensor_parallel_degree", 1) or 1
    pp = _tt_int(f, "parallelism.pipeline_parallel_degree", 1) or 1
    cp = _tt_int(f, "parallelism.context_parallel_degree", 1) or 1
    ep = _tt_int(f, "parallelism.expert_parallel_degree", 1) or 1
    rep = _tt_int(f, "parallelism.data_parallel_replicate_degree", 1) or 1
    shard = _tt_int(f, "parallelism.data_parallel_shard_degree", -1)
    gpus = gpus_flag or log.mesh_world or None
    if gpus_flag and log.mesh_world and gpus_flag != log.mesh_world:
        raise InputError("--gpus", str(gpus_flag), f"the log's device mesh has {log.mesh_world} GPUs")
    if gpus is None:
        f.missing.append("gpus (no 'Building N-D device mesh' line; give --gpus N)")
        return None
    if shard is None or shard < 0:
        shard = gpus // (rep * tp * pp * cp)
    dp = rep * shard
    if dp * tp * pp * cp != gpus:
        raise InputError(
            "log", "parallelism", f"dp_replicate {rep} x dp_shard {shard} x tp {tp} x pp {pp} x cp {cp} != {gpus} GPUs"
        )
    local = (
        log.trainer.get("local_batch_size")
        or _tt_int(f, "training.local_batch_size", 0)
        or _tt_int(f, "training.batch_size", 0)
    )
    seq = log.trainer.get("seq_len") or _tt_int(f, "training.seq_len")
    gbs = log.trainer.get("global_batch_size") or _tt_int(f, "training.global_batch_size", -1)
    if not local:
        f.missing.append("training.local_batch_size (give --arg training.local_batch_size=N)")
    if gbs is not None and gbs < 0 and local:
        gbs = local * dp
    mbs = local or 1
    schedule = _tt(f, "parallelism.pipeline_parallel_schedule") or "1F1B"
    vp = 1
    if pp > 1:
        mbs = _tt_int(f, "parallelism.pipeline_parallel_microbatch_size", 1) or 1
        if not re.fullmatch(r"1F1B|GPipe", schedule):
            lps = _tt_int(f, "parallelism.pipeline_parallel_layers_per_stage", 0)
            if not lps:
                f.missing.append(
                    f"parallelism.pipeline_parallel_layers_per_stage (schedule {schedule} has several "
                    "stages per rank; give --arg parallelism.pipeline_parallel_layers_per_stage=N)"
                )
            vp = -lps if lps else 1  # resolved below with the model's layer count
    mode = _tt(f, "activation_checkpoint.mode")
    if mode is None:
        f.missing.append("activation_checkpoint.mode (give --arg activation_checkpoint.mode=none|selective|full)")
    recompute = {"none": "none", "selective": "selective", "full": "full", None: "none"}.get(mode)
    if recompute is None:
        raise InputError("log", "activation_checkpoint.mode", f"{mode!r}: perfmodel models none, selective, full")
    sac = _tt(f, "activation_checkpoint.selective_ac_option") or "op"
    if recompute == "selective" and sac != "op":
        recompute = "full"
        notes.append(
            f"selective_ac_option={sac}: every {sac}th layer checkpointed in full, a per-layer mix perfmodel "
            "does not model; priced as full recompute of every layer (an upper bound on its recompute time)"
        )
    elif recompute == "selective":
        notes.append(
            "selective_ac_option=op: op-level SAC recomputes the element-wise ops and every second matmul "
            "(wk, wo, w3 of a Llama block, ~37% of its matmul FLOPs); perfmodel's nearest module list, "
            "layernorm + mlp, recomputes the norms, the SwiGLU and the MLP matmuls (~80%): recompute "
            "time over-, kept activations under-stated"
        )
    conv = (_tt(f, "model.converters") or "") + " " + (_tt(f, "quantize.linear.float8.recipe_name") or "")
    recipe = _tt(f, "float8.recipe_name") or _tt(f, "recipe_name") or "tensorwise"
    if "mx" in conv:
        precision = "mxfp8"
    elif "float8" in conv:
        precision = {"tensorwise": "fp8", "rowwise": "fp8-block", "rowwise_with_gw_hp": "fp8-block"}.get(recipe, "")
        if not precision:
            raise InputError("log", "float8.recipe_name", f"{recipe!r} has no perfmodel precision")
        if precision == "fp8-block":
            notes.append(f"torchtitan float8 recipe {recipe!r} (finer-than-tensor scales) read as fp8-block")
    else:
        mp = _tt(f, "training.mixed_precision_param") or "bfloat16"
        precision = {"bfloat16": "bf16", "float16": "fp16"}.get(mp, "")
        if not precision:
            raise InputError("log", "training.mixed_precision_param", f"{mp!r}: perfmodel predicts bf16/fp16/fp8 runs")
    if model_ref:
        model, how = load_model(model_ref), f"--model {model_ref}"
    else:
        model, how = torchtitan_model(log, f)  # type: ignore[assignment]
    if f.missing or model is None or not seq or not gbs:
        return None
    if vp < 0:
        vp = max(1, model.num_layers // (pp * -vp))
    fsdp = shard > 1
    if fsdp:
        notes.append(f"data_parallel_shard_degree={shard}: FSDP2 shards parameters, gradients and optimizer (ZeRO-3)")
    etp = 1
    lay = Layout(
        gpus=gpus, gbs=gbs, seq=seq, tp=tp, pp=pp, vp=vp, cp=cp, ep=ep, etp=etp, mbs=mbs, fsdp=fsdp, recompute=recompute
    )  # type: ignore[arg-type]
    compiled = any((f.raw(k) or "").lower() in ("true", "1") for k in ("compile.enable", "training.compile"))
    stated: dict[str, tuple[str, str]] = {"recompute": (recompute, "activation_checkpoint.mode")}
    if recompute == "selective":
        stated["recompute_modules"] = (
            "layernorm,mlp",
            "activation_checkpoint.selective_ac_option=op (nearest modules)",
        )
    if fsdp:
        stated["fsdp"] = ("fsdp2", f"parallelism.data_parallel_shard_degree={shard}")
    atp = _tt(f, "parallelism.enable_async_tensor_parallel")
    if atp is not None and tp > 1:
        stated["tp_overlap"] = (
            "async_tp" if atp.lower() in ("true", "1") else "none",
            f"parallelism.enable_async_tensor_parallel={atp}",
        )
    if "float8" in conv and "mx" not in conv:
        stated["fp8_recipe"] = ({"tensorwise": "current"}.get(recipe, "rowwise"), f"float8.recipe_name={recipe}")
    return Run(model, how, lay, precision, "torchtitan", notes, stated, compiled=compiled)


def build_run(log: ParsedLog, overrides: dict[str, str], model_ref: str | None, gpus: int | None, where: str) -> Run:
    f = _Fields(log.args, overrides)
    if log.framework == "torchtitan":
        run = torchtitan_run(log, f, model_ref, gpus)
    else:
        if log.framework == "nemo" and not log.args and not overrides:
            f.missing.append(
                "arguments (a NeMo progress-bar log states no layout: give the run's fields with "
                "--arg NAME=VALUE, Megatron names: tensor_model_parallel_size, ...)"
            )
        run = megatron_run(log, f, model_ref, gpus)
    if f.missing or run is None:
        seen: list[str] = []
        for m in f.missing:
            if m not in seen:
                seen.append(m)
        raise InputError(where, "missing", "; ".join(seen))
    return run
