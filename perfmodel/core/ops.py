"""Op records: the workload as data (see workload.py, which builds them, and cost.py / memory.py, which read
them). Every numeric field is a numpy array over layouts or a scalar that broadcasts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel.specs.model import ModelSpec


@dataclass(frozen=True)
class Gemm:
    """A linear layer per GPU: M rows (tokens), N outputs, K inputs; `count` identical GEMMs in one
    grouped kernel (the local experts); `low_precision` False keeps it in BF16 (router, LM head).
    Forward is [M,N,K]; backward dgrad [M,K,N] and wgrad [N,K,M]."""

    name: str
    M: np.ndarray
    N: np.ndarray
    K: np.ndarray
    count: np.ndarray | float = 1.0
    low_precision: bool = True
    module: str = ""  # recompute module (Megatron-Core recompute_modules names)
    grouped: bool = True  # `count` > 1 runs as one grouped kernel (else one kernel per GEMM)
    axes: tuple[str, ...] | None = None  # the layout axes M, N, K and count depend on (None: any, workload.AXES)
    experts: bool = False  # the local experts of an MoE layer: a grouped kernel prices with the grouped shape

    @property
    def flops_fwd(self):
        return 2.0 * self.M * self.N * self.K * self.count


@dataclass(frozen=True)
class AttentionCore:
    """Flash attention over `mean_keys` keys per query doing `flops_fwd` score FLOPs in forward, run by
    `share` of the layers (global vs sliding-window layers each get a record)."""

    name: str
    flops_fwd: np.ndarray
    mean_keys: np.ndarray
    share: float = 1.0
    module: str = "core_attn"
    dim_factor_fwd: float = 1.0  # the kernel's rate at this head dimension relative to head_dim 128
    dim_factor_bwd: float = 1.0  # (software.head_dim_factor)
    items: np.ndarray | float | None = None  # independent work items per call (kernels.work_items); None: ample


@dataclass(frozen=True)
class Stream:
    """A memory-bound op: HBM bytes moved in forward and backward, and the kernels it launches."""

    name: str
    bytes_fwd: np.ndarray | float
    bytes_bwd: np.ndarray | float
    kernels_fwd: float = 0.0
    kernels_bwd: float = 0.0
    module: str = ""


@dataclass(frozen=True)
class Collective:
    """A collective of one micro-batch, as data: its kind, the bytes per call, the group (size members `stride`
    ranks apart), `calls_fwd` / `calls_bwd` calls, and the overlap switch `overlap` ("tp", "tp_async", "cp",
    "ep") of the stack that may hide it. Priced by one function, comm.collective_time (`price`):
    - "all_gather": an all-gather or reduce-scatter of `nbytes` (the gathered buffer; nccl-tests bus bandwidth);
    - "all_to_all": an NCCL all-to-all of `nbytes` per GPU;
    - "moe_dispatch": DeepEP-style dispatch of `nbytes` of token vectors to `top_k` of `num_experts` experts;
    - "p2p": `steps` send/recv of `nbytes` between neighbours `stride` ranks apart (the CP ring: cp - 1 steps).
    `active` False where the group does nothing (cp = 1): 0 s."""

    name: str
    overlap: str
    kind: str
    nbytes: np.ndarray | float
    size: np.ndarray | float
    stride: np.ndarray | float
    calls_fwd: float
    calls_bwd: float
    module: str = ""
    window: tuple[str, ...] = ()  # overlap "tp_async": the GEMMs (by name, same layer) whose backward it runs under
    steps: np.ndarray | float = 1.0
    active: np.ndarray | bool | None = None  # None: always
    top_k: int = 1  # moe_dispatch: the routing
    num_experts: int = 1
    groups: int = 0
    group_topk: int = 0
    # a collective whose exposure follows from its own mechanism rather than a shared overlap budget (overlap
    # "mechanism"): "ag" / "rs" = PyTorch AsyncTP's all-gather-matmul / matmul-reduce-scatter over the GEMMs
    # `window` (parallel/tp.py async_tp_exposed); "cp_ag" / "cp_dkv" = PyTorch context_parallel's K/V all-gather
    # and dK/dV ring hop (parallel/cp.py torch_allgather_exposed)
    mechanism: str = ""
    axes: tuple[str, ...] | None = None  # the layout axes its fields depend on (None: any, workload.AXES), as Gemm.axes

    def price(self, hw) -> np.ndarray:
        """Seconds per call on `hw` (comm.collective_time)."""
        from perfmodel.core.comm import collective_time

        return collective_time(self, hw)


@dataclass(frozen=True)
class Fixed:
    """A fixed time per micro-batch (host synchronisation, eager launches), forward and backward, and the
    recompute module whose forward it belongs to (a selective recompute of that module runs it again)."""

    name: str
    seconds_fwd: float
    seconds_bwd: float
    module: str = ""


@dataclass(frozen=True)
class Saved:
    """Activation bytes one GPU keeps for backward, per layer and micro-batch, and the recompute module
    they belong to (Megatron-Core recompute_modules names; "input" is the layer input every policy keeps)."""

    name: str
    nbytes: np.ndarray
    module: str


@dataclass(frozen=True)
class Layer:
    """One transformer layer of a kind (dense FFN or MoE) as op records."""

    kind: str
    count: int  # layers of this kind in the model
    gemms: tuple[Gemm, ...]
    attention: tuple[AttentionCore, ...]
    streams: tuple[Stream, ...]
    comms: tuple[Collective, ...]
    fixed: tuple[Fixed, ...]
    saved: tuple[Saved, ...]


@dataclass(frozen=True)
class Head:
    """The LM head, loss, embedding and MTP modules (first and last pipeline stage)."""

    gemms: tuple[Gemm, ...]
    streams: tuple[Stream, ...]  # logits / loss traffic
    comms: tuple[Collective, ...]  # TP gathers of the head, not overlapped
    embedding: Stream
    mtp_gemm: Gemm | None
    mtp_layers: int


@dataclass(frozen=True)
class Workload:
    model: ModelSpec
    T: np.ndarray  # tokens per micro-batch on one CP rank (GEMM rows)
    Ts: np.ndarray  # ... per GPU after sequence-parallel sharding
    layers: tuple[Layer, ...]
    head: Head
    low_precision: bool
    layer_kinds: tuple[int, ...] = ()  # for each of the model's layers, in order, its index in `layers`
    tp: np.ndarray | float = 1.0  # the TP and expert-TP group sizes of each combination (overlap domains)
    etp: np.ndarray | float = 1.0
    cp: np.ndarray | float = 1.0  # the CP group size of each combination (parallel/cp.py torch_allgather_exposed)
