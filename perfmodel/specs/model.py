"""ModelSpec: a decoder-only transformer described fully enough to count parameters and FLOPs
exactly, loaded from models/*.toml or a Hugging Face config.json (see hf_config.py).

Layer patterns (0-based layer index i):
- attention: windowed (sliding or chunked) when `window > 0` and (i+1) % global_every != 0;
  global causal otherwise (Llama 4: global_every=4 -> NoPE layers 3,7,..; gpt-oss: 2).
- MoE: layer i is MoE when i >= first_dense_layers and (i+1) % interval == 0
  (DeepSeek-V3: first_dense_layers=3; Llama 4 Maverick: interval=2).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from perfmodel.specs.hashed import HashedSpec
from perfmodel.specs.specfile import read_document, resolve, split_sources, validate


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


PosInt = Field(ge=1, le=10**8)
NonNeg = Field(default=0, ge=0, le=10**8)

GLU_ACTIVATIONS = ("swiglu", "geglu", "clamped_swiglu")


class Attention(Frozen):
    kind: Literal["mha", "gqa", "mla"]
    num_heads: int = PosInt
    num_kv_heads: int = PosInt
    head_dim: int = PosInt  # q/k/v head dim (MHA/GQA); MLA uses the fields below
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: Literal["none", "rmsnorm", "l2"] = "none"  # rmsnorm: per-head learned (2*head_dim params)
    sinks: bool = False  # gpt-oss learned per-head sink logit
    # MLA (DeepSeek-V2/V3, Kimi K2)
    q_lora_rank: int = NonNeg  # 0 = plain q projection
    kv_lora_rank: int = NonNeg
    qk_nope_head_dim: int = NonNeg
    qk_rope_head_dim: int = NonNeg
    v_head_dim: int = NonNeg
    # windowed layers
    window: int = NonNeg  # 0 = every layer global causal
    window_kind: Literal["sliding", "chunked"] = "sliding"
    global_every: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _check(self) -> "Attention":
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of num_kv_heads ({self.num_kv_heads})")
        if self.kind == "mla" and not (self.kv_lora_rank and self.qk_nope_head_dim and self.v_head_dim):
            raise ValueError("MLA needs kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim")
        return self

    @property
    def qk_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.kind == "mla" else self.head_dim

    @property
    def v_dim(self) -> int:
        return self.v_head_dim if self.kind == "mla" else self.head_dim


class FFN(Frozen):
    activation: Literal["swiglu", "geglu", "clamped_swiglu", "gelu", "squared_relu", "relu"]
    intermediate_size: int = NonNeg  # dense FFN width (0 when every layer is MoE)
    bias: bool = False

    @property
    def matrices(self) -> int:
        return 3 if self.activation in GLU_ACTIVATIONS else 2


class MoE(Frozen):
    num_experts: int = PosInt
    top_k: int = PosInt
    expert_intermediate_size: int = PosInt
    shared_experts: int = NonNeg
    shared_intermediate_size: int = NonNeg  # 0 -> expert_intermediate_size
    first_dense_layers: int = NonNeg
    interval: int = Field(default=1, ge=1)
    router_bias: bool = False
    expert_bias: bool = False
    score_correction_bias: bool = False  # DeepSeek-V3 e_score_correction_bias buffer (counted in total)
    # group-limited ("node-limited") routing: experts form `route_groups` contiguous groups and a token
    # picks experts from only `route_group_topk` of them (DeepSeek-V2 §2.2.2, DeepSeek-V3 §2.1.2;
    # config.json n_group / topk_group). 0 = unrestricted.
    route_groups: int = NonNeg
    route_group_topk: int = NonNeg

    @model_validator(mode="after")
    def _check(self) -> "MoE":
        if self.top_k > self.num_experts:
            raise ValueError(f"top_k ({self.top_k}) exceeds num_experts ({self.num_experts})")
        if self.route_groups and (
            self.num_experts % self.route_groups or not 1 <= self.route_group_topk <= self.route_groups
        ):
            raise ValueError(
                f"route_groups ({self.route_groups}) must divide num_experts ({self.num_experts}) "
                f"and route_group_topk ({self.route_group_topk}) lie in 1..route_groups"
            )
        return self

    @property
    def shared_width(self) -> int:
        return self.shared_intermediate_size or self.expert_intermediate_size


class Published(Frozen):
    total_params: float = Field(gt=0)
    active_params: float | None = Field(default=None, gt=0)
    tolerance: float = Field(default=0.01, gt=0, le=0.2)  # allowed relative gap of our count
    active_tolerance: float = Field(default=0.01, gt=0, le=0.2)
    note: str = ""


class ModelSpec(Frozen, HashedSpec):
    HASH_EXCLUDE: ClassVar[set[str]] = {"sources", "notes", "path", "hf_names"}
    __hash__ = HashedSpec.__hash__  # in the class body: pydantic gives a frozen model its own hash otherwise
    id: str
    name: str
    num_layers: int = PosInt
    hidden_size: int = PosInt
    vocab_size: int = PosInt
    tied_embeddings: bool = False
    position_embedding: Literal["rope", "learned", "none"] = "rope"
    # the RoPE frequency scaling the model trains with: "yarn" (YaRN, Peng et al. 2023, arXiv 2309.00071) scales
    # the rotary cos / sin by its concentration factor (mscale), which Megatron-Core applies only on its unfused
    # RoPE path (workload._attention_block, constants.MCORE_UNFUSED_ROPE_*)
    rope_scaling: Literal["none", "yarn"] = "none"
    max_position_embeddings: int = Field(default=4096, ge=1)
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: int = Field(default=2, ge=0, le=8)
    final_norm: bool = True
    attention: Attention
    ffn: FFN
    moe: MoE | None = None
    mtp_layers: int = NonNeg  # DeepSeek-style multi-token-prediction modules
    seq_len: int = Field(default=4096, ge=1)  # pre-training sequence length
    published: Published | None = None
    notes: str = ""
    # the Hugging Face Hub repositories whose config.json has this shape (a log that names the model by its Hub
    # id, llm-foundry's hf_causal_lm pretrained_model_name_or_path, finds it here); descriptive, not hashed
    hf_names: tuple[str, ...] = ()
    sources: dict[str, str] = Field(default_factory=dict)
    path: str = ""

    @model_validator(mode="after")
    def _check(self) -> "ModelSpec":
        if self.moe is None and self.ffn.intermediate_size == 0:
            raise ValueError("ffn.intermediate_size must be > 0 for a dense model")
        if self.moe and self.moe.first_dense_layers >= self.num_layers:
            raise ValueError("moe.first_dense_layers must be below num_layers")
        if self.moe and self.num_dense_ffn_layers and self.ffn.intermediate_size == 0:
            raise ValueError("ffn.intermediate_size must be > 0: the model has dense FFN layers")
        return self

    # ---- layer pattern -------------------------------------------------------------
    def is_moe_layer(self, i: int) -> bool:
        m = self.moe
        return bool(m) and i >= m.first_dense_layers and (i + 1) % m.interval == 0

    def is_windowed_layer(self, i: int) -> bool:
        a = self.attention
        return a.window > 0 and (i + 1) % a.global_every != 0

    @property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    @property
    def num_dense_ffn_layers(self) -> int:
        return self.num_layers - self.num_moe_layers

    @property
    def num_windowed_layers(self) -> int:
        return sum(self.is_windowed_layer(i) for i in range(self.num_layers))

    @property
    def is_moe(self) -> bool:
        return self.moe is not None


@lru_cache(maxsize=256)
def _load(path: str) -> ModelSpec:
    p = Path(path)
    doc = read_document(p)
    if p.suffix.lower() == ".json":
        from perfmodel.specs.hf_config import from_hf_config

        return from_hf_config(doc, path, ModelSpec)
    plain, sources = split_sources(doc)
    plain.setdefault("id", p.stem)
    plain["sources"] = sources
    plain["path"] = path
    return validate(ModelSpec, plain, path)


def load_model(ref: str | ModelSpec) -> ModelSpec:
    """A catalog id (`deepseek-v3`), a TOML file or a Hugging Face config.json -> ModelSpec."""
    if isinstance(ref, ModelSpec):
        return ref
    return _load(str(resolve(ref, "models")))
