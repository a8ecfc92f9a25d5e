"""The cost model's few global constants (perfmodel/calibration.toml), with their meaning and source."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

_FILE = Path(__file__).with_name("calibration.toml")


@dataclass(frozen=True)
class Constants:
    tensor_sustained: float
    gemm_k_half: float
    gemm_mn_half: float
    kernel_fixed_s: float
    attention_keys_half: float
    step_overhead_s: float
    tp_overlap: float
    ep_overlap: float
    cp_overlap: float
    dp_overlap: float
    pp_overlap: float
    moe_imbalance: float
    moe_layer_overhead_s: float
    moe_permute_bytes: float
    fp8_cast_bytes: float
    reserved_bytes: float

    def with_(self, **kw: float) -> "Constants":
        return replace(self, **kw)


@lru_cache(maxsize=1)
def table() -> dict[str, dict]:
    return tomllib.loads(_FILE.read_text())


@lru_cache(maxsize=1)
def constants() -> Constants:
    t = table()
    return Constants(**{f.name: float(t[f.name]["value"]) for f in fields(Constants)})


def fitted_names() -> list[str]:
    return [k for k, v in table().items() if v.get("fit")]
