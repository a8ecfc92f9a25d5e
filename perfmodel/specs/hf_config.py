"""Hugging Face `config.json` -> ModelSpec.

`load_model("path/to/config.json")` ends here (model.py `_load`). The family is chosen by
`model_type` (top level, else `text_config.model_type`), falling back on `architectures`.

Supported families and the HF keys each reads:

- gpt2: n_layer, n_embd, n_head, vocab_size, n_positions, n_inner (null -> 4*n_embd),
  activation_function, tie_word_embeddings (default true). GELU MLP, learned positions,
  LayerNorm with bias, biases on qkv / o / MLP.
- llama, mistral, qwen2, qwen3 (dense): num_hidden_layers, hidden_size, num_attention_heads,
  num_key_value_heads (default = heads), head_dim (default hidden/heads), intermediate_size,
  vocab_size, tie_word_embeddings, max_position_embeddings, attention_bias, mlp_bias, hidden_act
  (silu -> SwiGLU, gelu* -> GeGLU); RMSNorm. qwen2: bias on q/k/v only; qwen3: per-head RMS qk-norm.
- mixtral: + num_local_experts, num_experts_per_tok; every layer MoE, expert width intermediate_size.
- qwen3_moe: + num_experts, num_experts_per_tok, moe_intermediate_size, decoder_sparse_step,
  mlp_only_layers; qk-norm RMSNorm; no shared expert; intermediate_size = dense width.
- deepseek_v3, deepseek_v2, kimi_k2 (DeepseekV3 architecture): MLA (q_lora_rank null -> 0,
  kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim), n_routed_experts,
  n_shared_experts, num_experts_per_tok, moe_intermediate_size, first_k_dense_replace,
  moe_layer_freq, num_nextn_predict_layers -> mtp_layers, topk_method "noaux_tc" ->
  score_correction_bias.
- llama4 (usually nested under `text_config`): num_local_experts, num_experts_per_tok,
  intermediate_size (expert and shared-expert width), intermediate_size_mlp (dense width),
  interleave_moe_layer_step / moe_layers, attention_chunk_size -> chunked window on the RoPE
  layers, no_rope_layers / no_rope_layer_interval (default 4) -> global_every, use_qk_norm -> "l2".
- gpt_oss: num_local_experts, num_experts_per_tok, sliding_window + layer_types (default: sliding on
  even layers), clamped SwiGLU, attention sinks, router and expert biases, rope_scaling.rope_type yarn.

HF layer patterns are converted into ModelSpec's (see model.py): MoE layers must be
"i >= first_dense_layers and (i+1) % interval == 0", windowed layers "(i+1) % global_every != 0"
(every layer windowed -> global_every = num_layers + 1). A config whose pattern cannot be
written that way is rejected with an InputError naming the key, never approximated.

Keys that HF would fill with a class default when absent are defaulted the same way; the
shape keys (layers, hidden, heads, vocab, FFN widths, expert counts) are required. Values
must be JSON integers (or integral floats) >= 1 (>= 0 where 0 means "none").

`seq_len` (pre-training sequence length) is not in config.json; it is set to:
1. `rope_scaling.original_max_position_embeddings` when present (YaRN / llama3 scaling record the
   context length before long-context extension, e.g. DeepSeek-V3 and Kimi K2 4096, Llama 3.1 8192),
2. else `max_position_embeddings` when it is <= 8192 (short-context models are pre-trained at their
   full context: GPT-2 1024, Llama 2 4096, Llama 3 8192),
3. else 4096 (= min(max_position_embeddings, 4096)), a common pre-training length.
The rule used is recorded in `sources["seq_len"]`; override seq_len on the command line or use a
catalog TOML when the real value is known.

id = the parent folder's name for a file called config.json, else the file stem;
name = f"{model_type} {id}". Every error is an InputError naming the file and the HF key.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from perfmodel.errors import InputError, did_you_mean

if TYPE_CHECKING:
    from perfmodel.specs.model import ModelSpec
from perfmodel.specs.specfile import validate

MAX_LAYERS = 10_000  # sanity bound: the layer-pattern checks loop over the layers
MAX_DIM = 10**8  # ModelSpec's bound on every size field

_REQUIRED = object()
_MISSING = object()

# architectures[] entries -> family, for configs without a (known) model_type
ARCHITECTURES = {
    "GPT2LMHeadModel": "gpt2",
    "GPT2Model": "gpt2",
    "LlamaForCausalLM": "llama",
    "LlamaModel": "llama",
    "MistralForCausalLM": "mistral",
    "MistralModel": "mistral",
    "MixtralForCausalLM": "mixtral",
    "MixtralModel": "mixtral",
    "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "GptOssForCausalLM": "gpt_oss",
}


class _Reader:
    """Typed access to one HF config (optionally its `text_config`) that builds the ModelSpec
    dict, and remembers which HF key fed each ModelSpec field (for sources and error messages)."""

    def __init__(self, doc: dict[str, Any], where: str, nested: dict[str, Any] | None):
        self.where = where
        self.top = doc
        self.cfg = nested if nested is not None else doc
        self.prefix = "text_config." if nested is not None else ""
        self.out: dict[str, Any] = {"attention": {}, "ffn": {}}
        self.sources: dict[str, str] = {}
        self.keys: dict[str, str] = {}  # ModelSpec dotted field -> HF key (as reported)

    # ---- raw lookup --------------------------------------------------------------------
    def raw(self, key: str) -> tuple[Any, str]:
        """(value or _MISSING, reported field name). Nested configs fall back on the top level
        (Llama 4 keeps tie_word_embeddings there)."""
        if key in self.cfg:
            return self.cfg[key], self.prefix + key
        if self.prefix and key in self.top:
            return self.top[key], key
        return _MISSING, self.prefix + key

    def missing(self, key: str) -> str:
        """'required field is missing', naming a close key of the file (a misspelling) when there is one."""
        close = difflib.get_close_matches(key, [k for k in self.cfg if isinstance(k, str)], n=1, cutoff=0.8)
        return "required field is missing" + (f" (the file has '{close[0]}': misspelled?)" if close else "")

    def fail(self, key: str, reason: str) -> InputError:
        return InputError(self.where, self.raw(key)[1], reason)

    # ---- typed readers (None / absent -> default) -----------------------------------------
    def int(self, key: str, default: Any = _REQUIRED, minimum: int = 1, maximum: int = MAX_DIM) -> Any:
        val, field = self.raw(key)
        if val is _MISSING or val is None:
            if default is _REQUIRED:
                raise InputError(
                    self.where, field, self.missing(key) if val is _MISSING else "must be an integer, got null"
                )
            return default
        if (
            isinstance(val, bool)
            or not isinstance(val, (int, float))
            or (isinstance(val, float) and not (math.isfinite(val) and val.is_integer()))
        ):
            raise InputError(self.where, field, f"must be an integer (got {val!r})")
        val = int(val)
        if val < minimum:
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            raise InputError(self.where, field, f"must be {what} (got {val})")
        if val > maximum:
            raise InputError(self.where, field, f"must be at most {maximum} (got {val})")
        return val

    def bool(self, key: str, default: bool) -> bool:
        val, field = self.raw(key)
        if val is _MISSING or val is None:
            return default
        if not isinstance(val, bool):
            raise InputError(self.where, field, f"must be true or false (got {val!r})")
        return val

    def str(self, key: str, default: str | None) -> str | None:
        val, field = self.raw(key)
        if val is _MISSING or val is None:
            return default
        if not isinstance(val, str):
            raise InputError(self.where, field, f"must be a string (got {val!r})")
        return val

    def int_list(self, key: str, upper: int | None = None) -> list[int] | None:
        """A list of integers >= 0 (layer indices when `upper` is given: each < upper)."""
        val, field = self.raw(key)
        if val is _MISSING or val is None:
            return None
        if not isinstance(val, list):
            raise InputError(self.where, field, f"must be a list of integers (got {val!r})")
        for x in val:
            if isinstance(x, bool) or not isinstance(x, int) or x < 0:
                raise InputError(self.where, field, f"must be a list of integers >= 0 (got {x!r})")
            if upper is not None and x >= upper:
                raise InputError(self.where, field, f"layer index {x} is out of range (num_hidden_layers = {upper})")
        return val

    # ---- writing the ModelSpec dict ---------------------------------------------------------
    def set(self, field: str, value: Any, source: str | None = None, key: str | None = None) -> Any:
        d = self.out
        *parents, last = field.split(".")
        for p in parents:
            d = d.setdefault(p, {})
        d[last] = value
        if key is not None:
            self.keys[field] = self.raw(key)[1]
        if source is not None:
            self.sources[field] = source
        return value

    def take(self, field: str, key: str, value: Any) -> Any:
        """Set `field` to `value`, read from HF key `key`."""
        name = self.raw(key)[1]
        return self.set(field, value, f"config.json {name}", key)


# ---- layer-pattern conversion ------------------------------------------------------------------


def _moe_layout(moe_layers: set[int], num_layers: int) -> tuple[int, int] | None:
    """(first_dense_layers, interval) reproducing exactly the MoE layer set, or None if impossible.
    ModelSpec: layer i is MoE when i >= first_dense and (i+1) % interval == 0."""
    layers = sorted(moe_layers)
    m0 = layers[0]
    if len(layers) >= 2:
        candidates = [layers[1] - m0]
    else:
        candidates = [g for g in range(1, num_layers + 1) if (m0 + 1) % g == 0]
    for g in candidates:
        if (m0 + 1) % g:
            continue
        first = max(0, m0 - g + 1)  # smallest first_dense giving the same set
        if {i for i in range(first, num_layers) if (i + 1) % g == 0} == moe_layers:
            return first, g
    return None


def _window_every(windowed: list[bool]) -> int | None:
    """global_every such that layer i is windowed iff (i+1) % global_every != 0; None if impossible.
    Every layer windowed -> num_layers + 1 (no layer index i+1 is a multiple of it)."""
    n = len(windowed)
    if all(windowed):
        return n + 1
    for g in range(1, n + 1):
        if all(w == ((i + 1) % g != 0) for i, w in enumerate(windowed)):
            return g
    return None


def _set_moe(r: _Reader, moe_set: set[int], L: int, key: str, **fields: Any) -> bool:
    """Write the `moe` table for the HF MoE-layer set; False (no moe table) when it is empty."""
    if not moe_set:
        return False
    lay = _moe_layout(moe_set, L)
    if lay is None:
        dense = [i for i in range(L) if i not in moe_set]
        shown = str(dense if len(dense) <= 16 else dense[:16])[:-1] + ("]" if len(dense) <= 16 else ", ...]")
        raise r.fail(
            key,
            f"the dense (non-MoE) layers {shown} cannot be expressed as 'layer i is MoE when "
            "i >= first_dense_layers and (i+1) % interval == 0'; write a catalog TOML for this "
            "model instead",
        )
    first, interval = lay
    for f, (val, src_key) in fields.items():
        if src_key is None:
            r.set(f"moe.{f}", val)
        elif src_key.startswith("="):
            r.set(f"moe.{f}", val, src_key[1:].strip())
        else:
            r.take(f"moe.{f}", src_key, val)
    r.set("moe.first_dense_layers", first, f"{len(moe_set)} MoE layers from config.json {r.raw(key)[1]}", key)
    r.set("moe.interval", interval, f"{len(moe_set)} MoE layers from config.json {r.raw(key)[1]}", key)
    return True


def _set_window(r: _Reader, windowed: list[bool], window: int, kind: str, key: str) -> None:
    """Windowed-attention pattern (`windowed[i]` per layer) with window size `window`."""
    if not any(windowed) or window <= 0:
        return
    every = _window_every(windowed)
    if every is None:
        raise r.fail(
            key,
            "the windowed/global attention layer pattern cannot be expressed as "
            "'layer i is global when (i+1) % global_every == 0'; write a catalog TOML instead",
        )
    src = f"config.json {r.raw(key)[1]}"
    r.set("attention.window", window, src, key)
    r.set("attention.window_kind", kind, src, key)
    r.set("attention.global_every", every, src + (" (every layer windowed)" if every == len(windowed) + 1 else ""), key)


def _layer_types(r: _Reader, L: int) -> list[str] | None:
    """Newer HF configs list `layer_types` (full_attention / sliding_attention / chunked_attention)."""
    val, field = r.raw("layer_types")
    if val is _MISSING or val is None:
        return None
    if not isinstance(val, list) or not all(isinstance(x, str) for x in val):
        raise InputError(r.where, field, "must be a list of strings")
    if len(val) != L:
        raise InputError(r.where, field, f"has {len(val)} entries but num_hidden_layers is {L}")
    allowed = {"full_attention", "sliding_attention", "chunked_attention"}
    for x in val:
        if x not in allowed:
            raise InputError(r.where, field, f"unsupported layer type {x!r}; supported: {', '.join(sorted(allowed))}")
    if "sliding_attention" in val and "chunked_attention" in val:
        raise InputError(r.where, field, "mixes sliding and chunked layers; not supported")
    return val


# ---- shared pieces -----------------------------------------------------------------------------


def _glu(r: _Reader, default: str = "silu") -> str:
    act = r.str("hidden_act", default) or default
    a = act.lower()
    if a in ("silu", "swish"):
        return "swiglu"
    if a.startswith("gelu"):
        return "geglu"
    raise r.fail("hidden_act", f"unsupported activation {act!r} for a gated MLP; supported: silu, gelu*")


def _decoder(r: _Reader, *, tied_default: bool) -> dict[str, int]:
    """The keys every Llama-style decoder has; returns the main sizes."""
    L = r.take("num_layers", "num_hidden_layers", r.int("num_hidden_layers", maximum=MAX_LAYERS))
    h = r.take("hidden_size", "hidden_size", r.int("hidden_size"))
    V = r.take("vocab_size", "vocab_size", r.int("vocab_size"))
    heads = r.take("attention.num_heads", "num_attention_heads", r.int("num_attention_heads"))
    r.take("max_position_embeddings", "max_position_embeddings", r.int("max_position_embeddings"))
    tied = r.bool("tie_word_embeddings", tied_default)
    r.set(
        "tied_embeddings",
        tied,
        f"config.json {r.raw('tie_word_embeddings')[1]}"
        + ("" if r.raw("tie_word_embeddings")[0] is not _MISSING else f" (absent: HF default {str(tied).lower()})"),
        "tie_word_embeddings",
    )
    r.set("position_embedding", "rope")
    r.set("norm", "rmsnorm")
    return {"L": L, "h": h, "V": V, "heads": heads}


def _gqa(r: _Reader, d: dict[str, int], head_dim_default: int | None = None) -> None:
    heads, h = d["heads"], d["h"]
    kv = r.int("num_key_value_heads", heads)
    if heads % kv:
        raise r.fail(
            "num_key_value_heads", f"num_attention_heads ({heads}) must be a multiple of num_key_value_heads ({kv})"
        )
    r.set(
        "attention.num_kv_heads",
        kv,
        f"config.json {r.raw('num_key_value_heads')[1]}"
        if r.raw("num_key_value_heads")[0] not in (_MISSING, None)
        else "= num_attention_heads (key absent)",
        "num_key_value_heads",
    )
    r.set("attention.kind", "mha" if kv == heads else "gqa")
    hd = r.int("head_dim", None)
    if hd is not None:
        r.take("attention.head_dim", "head_dim", hd)
    elif head_dim_default:
        r.set(
            "attention.head_dim", head_dim_default, f"HF default head_dim {head_dim_default} (key absent)", "head_dim"
        )
    else:
        if h % heads:
            raise r.fail(
                "head_dim", f"absent, and hidden_size ({h}) is not a multiple of num_attention_heads ({heads})"
            )
        r.set("attention.head_dim", h // heads, "hidden_size / num_attention_heads", "head_dim")


def _biases(r: _Reader, qkv_key: str = "attention_bias") -> None:
    b = r.bool(qkv_key, False)
    r.set("attention.qkv_bias", b, f"config.json {r.raw(qkv_key)[1]}", qkv_key)
    r.set("attention.o_bias", b, f"config.json {r.raw(qkv_key)[1]}", qkv_key)


def _top_k(r: _Reader, experts: int, key: str = "num_experts_per_tok", default: Any = _REQUIRED) -> int:
    k = r.int(key, default)
    if k > experts:
        raise r.fail(key, f"top-k ({k}) exceeds the number of experts ({experts})")
    return k


def _seq_len(r: _Reader) -> None:
    maxpos = r.out["max_position_embeddings"]
    rs, rs_field = r.raw("rope_scaling")
    orig = rs.get("original_max_position_embeddings") if isinstance(rs, dict) else None
    if isinstance(orig, int) and not isinstance(orig, bool) and orig >= 1:
        seq = min(orig, maxpos)
        src = (
            f"config.json {rs_field}.original_max_position_embeddings = {orig} "
            "(context before long-context extension, taken as the pre-training length)"
        )
    elif maxpos <= 8192:
        seq = maxpos
        src = f"config.json max_position_embeddings = {maxpos} (short-context model: pre-trained at full context)"
    else:
        seq = 4096
        src = (
            f"assumed 4096: config.json gives only the maximum context ({maxpos}), not the pre-training sequence length"
        )
    r.set("seq_len", seq, src)


# ---- families ----------------------------------------------------------------------------------


def _gpt2(r: _Reader, model_type: str) -> None:
    r.take("num_layers", "n_layer", r.int("n_layer", maximum=MAX_LAYERS))
    h = r.take("hidden_size", "n_embd", r.int("n_embd"))
    heads = r.take("attention.num_heads", "n_head", r.int("n_head"))
    if h % heads:
        raise r.fail("n_head", f"n_embd ({h}) must be a multiple of n_head ({heads})")
    r.take("vocab_size", "vocab_size", r.int("vocab_size"))
    npos = r.take("max_position_embeddings", "n_positions", r.int("n_positions"))
    r.set("attention.kind", "mha")
    r.set("attention.num_kv_heads", heads, "MHA: = n_head")
    r.set("attention.head_dim", h // heads, "n_embd / n_head")
    r.set("attention.qkv_bias", True, "GPT-2 Conv1D c_attn has a bias")
    r.set("attention.o_bias", True, "GPT-2 Conv1D c_proj has a bias")
    inner = r.int("n_inner", None)
    if inner is None:
        r.set("ffn.intermediate_size", 4 * h, "4 * n_embd (config.json n_inner null)", "n_inner")
    else:
        r.take("ffn.intermediate_size", "n_inner", inner)
    act = r.str("activation_function", "gelu_new") or "gelu_new"
    if act.lower().startswith("gelu"):
        r.set("ffn.activation", "gelu", f"config.json activation_function {act!r}", "activation_function")
    elif act.lower() == "relu":
        r.set("ffn.activation", "relu", "config.json activation_function 'relu'", "activation_function")
    else:
        raise r.fail("activation_function", f"unsupported activation {act!r}; supported: gelu*, relu")
    r.set("ffn.bias", True, "GPT-2 MLP Conv1D layers have biases")
    tied = r.bool("tie_word_embeddings", True)
    r.set("tied_embeddings", tied, "config.json tie_word_embeddings (HF GPT-2 default true)", "tie_word_embeddings")
    r.set("position_embedding", "learned", "GPT-2 learned absolute position embedding (wpe)")
    r.set("norm", "layernorm", "GPT-2 pre-LN LayerNorm with bias, 2 per layer + final")
    r.set("seq_len", npos, f"config.json n_positions = {npos} (GPT-2 is trained at full context)")


def _llama_like(r: _Reader, model_type: str) -> None:
    """llama, mistral, qwen2, qwen3 (dense) and mixtral."""
    d = _decoder(r, tied_default=False)
    L = d["L"]
    _gqa(r, d)
    if model_type == "qwen2":
        r.set("attention.qkv_bias", True, "Qwen2 q/k/v projections always have a bias")
        r.set("attention.o_bias", False, "Qwen2 o_proj has no bias")
    else:
        _biases(r)
    if model_type == "qwen3":
        r.set("attention.qk_norm", "rmsnorm", "Qwen3: per-head RMSNorm on q and k")
    r.set("ffn.activation", _glu(r), f"config.json {r.raw('hidden_act')[1]}", "hidden_act")
    r.set("ffn.bias", r.bool("mlp_bias", False), f"config.json {r.raw('mlp_bias')[1]}", "mlp_bias")
    width = r.int("intermediate_size")
    if model_type == "mixtral":
        experts = r.int("num_local_experts")
        k = _top_k(r, experts)
        r.set("ffn.intermediate_size", 0, "mixtral: every layer is MoE (no dense FFN)")
        _set_moe(
            r,
            set(range(L)),
            L,
            "num_local_experts",
            num_experts=(experts, "num_local_experts"),
            top_k=(k, "num_experts_per_tok"),
            expert_intermediate_size=(width, "intermediate_size"),
            shared_experts=(0, "= mixtral has no shared expert"),
        )
    else:
        r.take("ffn.intermediate_size", "intermediate_size", width)
    _sliding(r, model_type, L)


def _sliding(r: _Reader, model_type: str, L: int) -> None:
    """Sliding-window attention of Mistral / Mixtral / Qwen2 / Qwen3 configs."""
    types = _layer_types(r, L)
    win = r.int("sliding_window", 0, minimum=0)
    if types is not None:
        if "chunked_attention" in types:
            raise r.fail("layer_types", f"chunked attention is not supported for model_type {model_type!r}")
        if any(t == "sliding_attention" for t in types) and win == 0:
            raise r.fail("sliding_window", "layer_types has sliding_attention layers but sliding_window is not set")
        _set_window(r, [t == "sliding_attention" for t in types], win, "sliding", "layer_types")
    elif model_type in ("mistral", "mixtral"):
        _set_window(r, [True] * L, win, "sliding", "sliding_window")
    elif model_type.startswith("qwen") and r.bool("use_sliding_window", False) and win:
        # HF Qwen2/3: sliding attention on layers i >= max_window_layers
        mwl = r.int("max_window_layers", L, minimum=0)
        _set_window(r, [i >= mwl for i in range(L)], win, "sliding", "max_window_layers")


def _qwen3_moe(r: _Reader, model_type: str) -> None:
    d = _decoder(r, tied_default=False)
    L = d["L"]
    _gqa(r, d)
    _biases(r)
    r.set("attention.qk_norm", "rmsnorm", "Qwen3: per-head RMSNorm on q and k")
    r.set("ffn.activation", _glu(r), f"config.json {r.raw('hidden_act')[1]}", "hidden_act")
    experts = r.int("num_experts", 0, minimum=0)
    step = r.int("decoder_sparse_step", 1)
    mlp_only = set(r.int_list("mlp_only_layers", upper=L) or [])
    # HF Qwen3MoeDecoderLayer: sparse when i not in mlp_only_layers and num_experts > 0
    # and (i+1) % decoder_sparse_step == 0
    moe_set = {i for i in range(L) if i not in mlp_only and experts > 0 and (i + 1) % step == 0}
    key = "mlp_only_layers" if mlp_only else "decoder_sparse_step"
    if moe_set:
        k = _top_k(r, experts)
        _set_moe(
            r,
            moe_set,
            L,
            key,
            num_experts=(experts, "num_experts"),
            top_k=(k, "num_experts_per_tok"),
            expert_intermediate_size=(r.int("moe_intermediate_size"), "moe_intermediate_size"),
            shared_experts=(0, "= Qwen3-MoE has no shared expert"),
        )
    if len(moe_set) < L:
        r.take("ffn.intermediate_size", "intermediate_size", r.int("intermediate_size"))
    else:
        r.set("ffn.intermediate_size", 0, "every layer is MoE (config.json intermediate_size unused)")
    _sliding(r, model_type, L)


def _deepseek(r: _Reader, model_type: str) -> None:
    d = _decoder(r, tied_default=False)
    L, heads = d["L"], d["heads"]
    r.set("attention.kind", "mla", "DeepSeek MLA")
    r.set("attention.num_kv_heads", heads, "MLA: per-head K/V from a shared latent (= num_attention_heads)")
    r.take("attention.q_lora_rank", "q_lora_rank", r.int("q_lora_rank", 0, minimum=0))
    r.take("attention.kv_lora_rank", "kv_lora_rank", r.int("kv_lora_rank"))
    r.take("attention.qk_nope_head_dim", "qk_nope_head_dim", r.int("qk_nope_head_dim"))
    r.take("attention.qk_rope_head_dim", "qk_rope_head_dim", r.int("qk_rope_head_dim", minimum=0))
    v = r.take("attention.v_head_dim", "v_head_dim", r.int("v_head_dim"))
    r.set("attention.head_dim", v, "config.json v_head_dim (MLA)", "v_head_dim")
    _biases(r)
    r.set("ffn.activation", _glu(r), f"config.json {r.raw('hidden_act')[1]}", "hidden_act")
    r.take("mtp_layers", "num_nextn_predict_layers", r.int("num_nextn_predict_layers", 0, minimum=0))
    experts = r.int("n_routed_experts", 0, minimum=0)
    first = r.int("first_k_dense_replace", 0, minimum=0)
    freq = r.int("moe_layer_freq", 1)
    if first >= L:
        raise r.fail("first_k_dense_replace", f"must be below num_hidden_layers ({L}) (got {first})")
    # HF DeepseekV3DecoderLayer: MoE when n_routed_experts and i >= first_k_dense_replace
    # and i % moe_layer_freq == 0
    moe_set = {i for i in range(L) if experts and i >= first and i % freq == 0}
    if moe_set:
        k = _top_k(r, experts)
        method = r.str("topk_method", "greedy")
        _set_moe(
            r,
            moe_set,
            L,
            "moe_layer_freq" if freq > 1 else "first_k_dense_replace",
            num_experts=(experts, "n_routed_experts"),
            top_k=(k, "num_experts_per_tok"),
            expert_intermediate_size=(r.int("moe_intermediate_size"), "moe_intermediate_size"),
            shared_experts=(r.int("n_shared_experts", 0, minimum=0), "n_shared_experts"),
            **_route_groups(r, experts),
            score_correction_bias=(
                method == "noaux_tc",
                f"= config.json topk_method {method!r} "
                f"({'e_score_correction_bias buffer' if method == 'noaux_tc' else 'no bias buffer'})",
            ),
        )
    if len(moe_set) < L:
        r.take("ffn.intermediate_size", "intermediate_size", r.int("intermediate_size"))
    else:
        r.set("ffn.intermediate_size", 0, "every layer is MoE")


def _route_groups(r: _Reader, experts: int) -> dict:
    """Group-limited routing (DeepSeek-V2 §2.2.2): n_group expert groups, topk_group of them per token.
    n_group <= 1 means unrestricted (Kimi K2 ships n_group = topk_group = 1)."""
    groups = r.int("n_group", 0, minimum=0)
    if groups <= 1:
        return {}
    top = r.int("topk_group", groups, minimum=1)
    if experts % groups or top > groups:
        raise r.fail("n_group", f"must divide n_routed_experts ({experts}) and be >= topk_group ({top})")
    return {"route_groups": (groups, "n_group"), "route_group_topk": (top, "topk_group")}


def _llama4(r: _Reader, model_type: str) -> None:
    d = _decoder(r, tied_default=False)
    L = d["L"]
    _gqa(r, d, head_dim_default=128)  # Llama4TextConfig head_dim default 128
    _biases(r)
    qk = r.bool("use_qk_norm", True)
    r.set(
        "attention.qk_norm",
        "l2" if qk else "none",
        f"config.json {r.raw('use_qk_norm')[1]} ({'parameter-free L2 norm on RoPE layers' if qk else 'off'})",
        "use_qk_norm",
    )
    r.set("ffn.activation", _glu(r), f"config.json {r.raw('hidden_act')[1]}", "hidden_act")
    experts = r.int("num_local_experts")
    k = _top_k(r, experts, default=1)
    width = r.int("intermediate_size")
    step = r.int("interleave_moe_layer_step", 1)
    listed = r.int_list("moe_layers", upper=L)
    moe_set = set(listed) if listed is not None else set(range(step - 1, L, step))
    if moe_set:
        _set_moe(
            r,
            moe_set,
            L,
            "moe_layers" if listed is not None else "interleave_moe_layer_step",
            num_experts=(experts, "num_local_experts"),
            top_k=(k, "num_experts_per_tok"),
            expert_intermediate_size=(width, "intermediate_size"),
            shared_experts=(1, "= Llama4TextMoe: one always-on shared expert"),
            shared_intermediate_size=(width, "intermediate_size"),
        )
    if len(moe_set) < L:
        r.take("ffn.intermediate_size", "intermediate_size_mlp", r.int("intermediate_size_mlp"))
    else:
        r.set("ffn.intermediate_size", 0, "every layer is MoE (intermediate_size_mlp unused)")
    # iRoPE: RoPE layers use chunked attention, NoPE layers ((i+1) % 4 == 0 by default) are global
    chunk = r.int("attention_chunk_size", 0, minimum=0)
    types = _layer_types(r, L)
    if types is not None:
        if "sliding_attention" in types:
            raise r.fail("layer_types", "sliding attention is not supported for llama4")
        _set_window(r, [t == "chunked_attention" for t in types], chunk, "chunked", "layer_types")
        return
    nope = r.int_list("no_rope_layers")
    if nope:  # HF: 1 = RoPE layer, 0 = NoPE layer
        if len(nope) != L or any(x not in (0, 1) for x in nope):
            raise r.fail("no_rope_layers", f"must list 0/1 for each of the {L} layers")
        rope = [bool(x) for x in nope]
        key = "no_rope_layers"
    else:
        interval = r.int("no_rope_layer_interval", 4)
        rope = [(i + 1) % interval != 0 for i in range(L)]
        key = "no_rope_layer_interval"
    _set_window(r, rope, chunk, "chunked", key if chunk else "attention_chunk_size")


def _gpt_oss(r: _Reader, model_type: str) -> None:
    d = _decoder(r, tied_default=False)
    L = d["L"]
    _gqa(r, d)
    _biases(r)
    r.set("attention.sinks", True, "gpt-oss: learned per-head attention sink")
    rs, rs_key = r.raw("rope_scaling")
    if isinstance(rs, dict) and (rs.get("rope_type") or rs.get("type")) == "yarn":
        r.set("rope_scaling", "yarn", f"config.json {rs_key}.rope_type = yarn")
    r.set("ffn.activation", "clamped_swiglu", "gpt-oss clamped SwiGLU (swiglu_limit)")
    r.set("ffn.intermediate_size", 0, "gpt-oss: every layer is MoE")
    experts = r.int("num_local_experts")
    k_key = "experts_per_token" if r.raw("num_experts_per_tok")[0] is _MISSING else "num_experts_per_tok"
    k = _top_k(r, experts, key=k_key)
    _set_moe(
        r,
        set(range(L)),
        L,
        "num_local_experts",
        num_experts=(experts, "num_local_experts"),
        top_k=(k, k_key),
        expert_intermediate_size=(r.int("intermediate_size"), "intermediate_size"),
        shared_experts=(0, "= gpt-oss has no shared expert"),
        router_bias=(True, "= gpt-oss router Linear has a bias"),
        expert_bias=(True, "= gpt-oss expert matrices have biases"),
    )
    types = _layer_types(r, L)
    win = r.int("sliding_window", 128)
    if types is None:
        windowed = [i % 2 == 0 for i in range(L)]  # HF default: sliding on even layers
        key = "sliding_window"
    else:
        if "chunked_attention" in types:
            raise r.fail("layer_types", "chunked attention is not supported for gpt_oss")
        windowed, key = [t == "sliding_attention" for t in types], "layer_types"
    _set_window(r, windowed, win, "sliding", key)


FAMILIES: dict[str, Callable[[_Reader, str], None]] = {
    "gpt2": _gpt2,
    "llama": _llama_like,
    "mistral": _llama_like,
    "mixtral": _llama_like,
    "qwen2": _llama_like,
    "qwen3": _llama_like,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v3": _deepseek,
    "deepseek_v2": _deepseek,
    "kimi_k2": _deepseek,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "gpt_oss": _gpt_oss,
}
# model_type values handled as another family's (same HF architecture)
ALIASES = {"llama4_text": "llama4"}


# ---- entry point -------------------------------------------------------------------------------


def _model_id(path: str) -> str:
    p = Path(path)
    if p.name.lower() == "config.json":
        return p.parent.name or p.resolve().parent.name or "config"
    return p.stem


def _family(doc: dict[str, Any], nested: dict[str, Any] | None, where: str) -> tuple[str, str]:
    """(family, model_type as reported) from model_type, text_config.model_type or architectures."""

    def model_type(d: dict[str, Any], field: str) -> str | None:
        mt = d.get("model_type")
        if mt is not None and not isinstance(mt, str):
            raise InputError(where, field, f"must be a string (got {mt!r})")
        return mt

    mt = model_type(doc, "model_type")
    inner = model_type(nested, "text_config.model_type") if nested is not None else None
    for cand in (mt, inner):
        if cand in FAMILIES:
            return ALIASES.get(cand, cand), cand
    for d, field in ((doc, "architectures"), (nested or {}, "text_config.architectures")):
        archs = d.get("architectures")
        if isinstance(archs, list):
            for a in archs:
                if isinstance(a, str) and a in ARCHITECTURES:
                    fam = ARCHITECTURES[a]
                    return fam, mt if isinstance(mt, str) and mt else fam
    supported = ", ".join(sorted(FAMILIES))
    if mt is None and inner is None:
        raise InputError(
            where,
            "model_type",
            f"missing, and no known entry in architectures; supported model_type values: {supported}",
        )
    shown = mt if mt is not None else inner
    field = "model_type" if mt is not None else "text_config.model_type"
    raise InputError(
        where, field, f"unsupported model_type {shown!r}{did_you_mean(shown, FAMILIES)}; supported: {supported}"
    )


def from_hf_config(doc: dict[str, Any], path: str, spec: "type[ModelSpec]") -> "ModelSpec":
    """A parsed Hugging Face config.json (`doc`, read from `path`) -> validated `spec` (model.ModelSpec, passed in
    by model.load_model so that this module does not import the one that imports it)."""
    where = str(path)
    if not isinstance(doc, dict):
        raise InputError(where, "", "top level must be a JSON object")
    nested = doc.get("text_config")
    if nested is not None and not isinstance(nested, dict):
        raise InputError(where, "text_config", f"must be an object (got {type(nested).__name__})")
    family, model_type = _family(doc, nested, where)
    r = _Reader(doc, where, nested)
    FAMILIES[family](r, family)
    if "seq_len" not in r.out:
        _seq_len(r)

    mid = _model_id(where)
    out = r.out
    out["id"] = mid
    out["name"] = f"{model_type} {mid}"
    out["notes"] = (
        f"Imported from a Hugging Face config.json (model_type {model_type!r}, read as {family!r}). "
        "No published parameter counts attached; seq_len follows the rule in perfmodel/specs/hf_config.py "
        f"({r.sources.get('seq_len', '')})."
    )
    out["sources"] = r.sources
    out["path"] = where
    try:
        return validate(spec, out, where)
    except InputError as exc:
        # name the HF key rather than the ModelSpec field when we know which key fed it
        key = r.keys.get(exc.field)
        if key is None:
            raise
        raise InputError(where, key, f"{exc.reason} (ModelSpec field {exc.field})") from None
