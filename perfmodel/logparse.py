"""Read a training log: Megatron-LM / NeMo / Megatron-Bridge or torchtitan, streamed line by line.

Pure functions over bytes; no prediction here (commands/check.py turns a ParsedLog into a run). The
formats are the frameworks' own logging code, read at these versions (never a copied log):

- Megatron-LM megatron/training/arguments.py @000c4ac `_print_args`: a header
  '------------------------ arguments ------------------------', then one line per argument
  '  {arg} {dots} {value}' with dots = '.' * (48 - len(arg)), sorted, then
  '-------------------- end of arguments ---------------------'. Values are str() of Python values.
- Megatron-LM megatron/training/training.py @001b00c `training_log`: ' [%Y-%m-%d %H:%M:%S.%f] iteration
  {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): {:.1f} | throughput per GPU
  (TFLOP/s/GPU): {:.1f} | learning rate: {:.6E} | global batch size: {:5d} | lm loss: ... |'; the time is the
  mean over the logging interval (interval-time timer / iterations); the first iteration is logged alone
  (is_first_iteration, initialization overhead). `evaluate_and_print_results`: ' validation loss at
  iteration N | ...'. Megatron-Bridge src/megatron/bridge/training/utils/train_utils.py @031e7de prints the
  same iteration line (timestamp without microseconds).
- Megatron-LM megatron/training/utils.py @00caa53 `report_memory`: '[Rank R] (after N iterations) memory (MB)
  | allocated: X | max allocated: X | reserved: X | max reserved: X' (MB = 2**20 bytes). Megatron-Bridge
  train_utils.py @031e7de: '[Rank R] (after N iterations) memory (GB) | mem-max-allocated-gigabytes: X |
  mem-max-reserved-gigabytes: X | ...' (GB = 1e9 bytes, MEMORY_KEYS names with bytes -> gigabytes).
- Megatron tokenizer `_vocab_size_with_padding`: ' > padded vocab (size: V) with D dummy tokens (new size: P)'.
- NeMo 2 (Lightning progress bar): '... global_step=50.0, ... train_step_timing in s=5.900 ...' (the step
  time of the last step, one value per refresh).
- torchtitan torchtitan/components/metrics.py @00fbaaf `MetricsProcessor.log`: colour codes, then
  'step: {step:2}  loss: {loss:7.4f}  grad_norm: {gn:7.4f}  memory: {gib:5.2f}GiB({pct:.2f}%)  tps:
  {round(tps):,}  tflops: {tflops:,.2f}  mfu: {mfu:.2f}%' (grad_norm absent in older releases; tps = tokens
  per second per device over the interval; memory = max reserved GiB); 'validate step: ...' for
  validation. torchtitan/train.py @000204a: 'Running with args: {job_config.to_dict()}', 'Building {name}
  {flavor} with {model_args}', 'Trainer is initialized with local batch size B, global batch size G,
  gradient accumulation steps A, sequence length S, ...'; torchtitan/distributed/parallel_dims.py:
  'Building {n}-D device mesh with {names}, {dims}'.

Robustness: ANSI colour codes and per-line prefixes (timestamps, '[rank3]:', srun '3: ') are ignored
because every pattern is searched, not anchored; bytes that are not UTF-8 are replaced; gzip is read
transparently; a line longer than MAX_LINE is cut (binary junk without newlines cannot grow memory);
several ranks printing the same interval are kept once (the last DEDUP_WINDOW iterations are
remembered). Memory is bounded: the per-interval numbers are float arrays (8 bytes each).
"""
from __future__ import annotations

import ast
import re
import zlib
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from .errors import InputError

BLOCK = 1 << 23             # 8 MiB read at a time
MAX_LINE = 1 << 20          # a longer line is cut here (its tail is dropped)
DEDUP_WINDOW = 256          # iterations remembered to drop the same interval printed by several ranks

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")

ARG_HEAD = b"------------------------ arguments ------------------------"
ARG_END = b"-------------------- end of arguments"
# '  {arg} {dots} {value}', dots = 48 - len(arg) (>= 1 for every field perfmodel reads)
ARG_LINE = re.compile(rb"\s([A-Za-z_][A-Za-z0-9_]*) \.{1,48} (.*?)\s*$")

MEG_ITER = re.compile(rb"\biteration\s+(\d+)/\s*(\d+)\s*\|")
# every number must be followed by its separator: a line cut mid-number (a truncated file) is not read
MEG_MS = re.compile(rb"elapsed time per iteration \(ms\):\s*([0-9.]+) \|")
MEG_TFLOPS = re.compile(rb"throughput per GPU \(TFLOP/s/GPU\):\s*([0-9.]+) \|")
MEG_GBS = re.compile(rb"global batch size:\s*(\d+) \|")
MEG_MEM_MB = re.compile(rb"memory \(MB\) \| allocated: ([0-9.]+) \| max allocated: ([0-9.]+) \| reserved: ([0-9.]+)"
                        rb" \| max reserved: ([0-9.]+)")
BRIDGE_MEM = re.compile(rb"memory \(GB\)(.*)")
BRIDGE_KEY = re.compile(rb"mem-max-(allocated|reserved)-gigabytes: ([0-9.eE+-]+)")
PADDED_VOCAB = re.compile(rb"padded vocab \(size: (\d+)\) with (\d+) dummy tokens \(new size: (\d+)\)")
NEMO_STEP = re.compile(rb"global_step=(\d+)(?:\.0)?,.*?train_step_timing in s=([0-9.]+)[,\]]")

TT_STEP = re.compile(rb"(?<!validate )step:\s*(\d+)\s+loss:\s*\S+\s+(?:grad_norm:\s*\S+\s+)?memory:\s*([0-9.]+)GiB"
                     rb"\(([0-9.]+)%\)\s+tps:\s*([0-9,]+)\s+tflops:\s*([0-9,.]+)\s+mfu:\s*([0-9.]+)%")
TT_ARGS = re.compile(rb"Running with args: (\{.*\})")
TT_BUILD = re.compile(rb"Building (\S+) (\S+) with (\w+)\((.*)\)")
TT_TRAINER = re.compile(rb"local batch size (\d+), global batch size (-?\d+), gradient accumulation steps (\d+), "
                        rb"sequence length (\d+)")
TT_MESH = re.compile(rb"Building (\d+)-D device mesh with \[([^\]]*)\], \[([^\]]*)\]")
TT_DEVICE = re.compile(rb"capacity: (.+?) with ([0-9.]+)GiB memory")
KV = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,()\[\]{}]+)")

# lines that start an evaluation or a checkpoint save: the interval logged next may include it
EVENT_WORDS = (b"validation loss at", b"saving checkpoint", b"saving the checkpoint", b"validate step:",
               b"evaluating on", b"save-checkpoint")


@dataclass
class ParsedLog:
    """What a log states. `args`: the Megatron argument dump (raw strings) or torchtitan's flattened job
    config; `iters`/`step_s`/`tflops`/`tps`: one entry per logged interval, in log order; `flagged`: 1 where
    the interval is warm-up (first WARMUP iterations after a start) or may include an evaluation or a
    checkpoint save."""
    framework: str = ""                      # megatron | torchtitan | nemo | "" (nothing recognised)
    args: dict[str, str] = field(default_factory=dict)
    model_args: dict[str, str] = field(default_factory=dict)   # torchtitan 'Building ... with X(...)'
    model_name: str = ""
    iters: array = field(default_factory=lambda: array("q"))
    step_s: array = field(default_factory=lambda: array("d"))
    tflops: array = field(default_factory=lambda: array("d"))   # NaN where not logged
    tps: array = field(default_factory=lambda: array("d"))      # torchtitan tokens/s/device; NaN otherwise
    event_after: array = field(default_factory=lambda: array("b"))   # 1: an eval/checkpoint preceded it
    starts: array = field(default_factory=lambda: array("b"))        # 1: first interval of a (re)start
    gbs_logged: set[int] = field(default_factory=set)
    mem_max_allocated: float = 0.0           # bytes, max over ranks and reports
    mem_max_reserved: float = 0.0
    mem_unit: str = ""
    vocab_unpadded: int = 0
    vocab_padded: int = 0
    trainer: dict[str, int] = field(default_factory=dict)     # torchtitan 'Trainer is initialized with ...'
    mesh_world: int = 0
    device_name: str = ""                    # torchtitan 'CUDA capacity: NVIDIA H100 80GB HBM3 with ...'
    lines: int = 0
    cut_lines: int = 0
    dumps: int = 0                           # argument dumps seen (a restart prints another)
    gzip: bool = False
    gzip_truncated: bool = False


def open_log(path: str | Path) -> tuple[BinaryIO, bool]:
    """A binary stream of the log and whether it is gzip (by its magic bytes); InputError if unreadable."""
    p = Path(path)
    if not p.exists():
        raise InputError(str(p), "", "file not found")
    if not p.is_file():
        raise InputError(str(p), "", "not a regular file")
    try:
        fh = p.open("rb")
        gz = fh.read(2) == b"\x1f\x8b"
        fh.seek(0)
    except OSError as exc:
        raise InputError(str(p), "", f"cannot read file ({exc.strerror or exc})") from None
    return fh, gz


def gunzip_blocks(fh: BinaryIO, stats: ParsedLog | None = None) -> Iterator[bytes]:
    """Decompressed blocks of a gzip stream (several members allowed). A stream cut short (a log copied
    while still being written) ends quietly after what could be decompressed; `stats.gzip_truncated`."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        chunk = fh.read(BLOCK // 4)
        if not chunk:
            break
        while chunk:
            try:
                out = d.decompress(chunk, BLOCK)
            except zlib.error:
                if stats is not None:
                    stats.gzip_truncated = True
                return
            if out:
                yield out
            chunk = d.unconsumed_tail
            if d.eof:                          # next member, if any
                rest = d.unused_data
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                chunk = rest + chunk if rest else chunk
    if not d.eof and stats is not None:
        stats.gzip_truncated = True


def _raw_blocks(fh: BinaryIO) -> Iterator[bytes]:
    while True:
        block = fh.read(BLOCK)
        if not block:
            return
        yield block


def iter_lines(blocks: Iterable[bytes], stats: ParsedLog | None = None) -> Iterator[bytes]:
    """Lines of a stream of blocks (split on \\n and \\r: progress bars rewrite lines with \\r); a line
    longer than MAX_LINE is cut there and the rest of it dropped."""
    carry = b""
    skipping = False
    for block in blocks:
        if b"\r" in block:
            block = block.replace(b"\r", b"\n")
        parts = block.split(b"\n")
        parts[0] = carry + parts[0]
        carry = parts.pop()
        for ln in parts:
            if skipping:             # the tail of a line already cut
                skipping = False
                continue
            if len(ln) > MAX_LINE:
                if stats is not None:
                    stats.cut_lines += 1
                ln = ln[:MAX_LINE]
            yield ln
        if len(carry) > MAX_LINE:
            if not skipping:
                if stats is not None:
                    stats.cut_lines += 1
                yield carry[:MAX_LINE]
            skipping, carry = True, b""
    if carry and not skipping:
        yield carry


def _f(b: bytes) -> float:
    return float(b.replace(b",", b""))


class _Parser:
    """State of one pass over a log (kept small: no line is stored)."""

    def __init__(self) -> None:
        self.log = ParsedLog()
        self.in_dump = False
        self.recent: deque[int] = deque(maxlen=DEDUP_WINDOW)
        self.recent_set: set[int] = set()
        self.pending_event = False
        self.new_start = True
        self.last_iter = -1

    def _interval(self, it: int, step: float, tflops: float, tps: float) -> None:
        L = self.log
        if it in self.recent_set:          # the same interval from another rank (or a repeated print)
            return
        if len(self.recent) == self.recent.maxlen:
            self.recent_set.discard(self.recent[0])
        self.recent.append(it)
        self.recent_set.add(it)
        if it < self.last_iter:            # iterations went back: a resumed job appended to the log
            self.new_start = True
        self.last_iter = it
        L.iters.append(it)
        L.step_s.append(step)
        L.tflops.append(tflops)
        L.tps.append(tps)
        L.event_after.append(1 if self.pending_event else 0)
        L.starts.append(1 if self.new_start else 0)
        self.pending_event = self.new_start = False

    def line(self, raw: bytes) -> None:
        L = self.log
        L.lines += 1
        if b"\x1b" in raw:
            raw = ANSI.sub(b"", raw)
        if self.in_dump:
            if ARG_END in raw:
                self.in_dump = False
                return
            m = ARG_LINE.search(raw)
            if m:
                L.args[m.group(1).decode()] = _text(m.group(2))
            return
        if ARG_HEAD in raw:
            self.in_dump = True
            L.framework = L.framework or "megatron"
            L.dumps += 1
            self.new_start = True
            return
        if b"iteration" in raw:
            m = MEG_ITER.search(raw)
            if m:
                ms = MEG_MS.search(raw, m.end())
                if ms:
                    L.framework = L.framework or "megatron"
                    tf = MEG_TFLOPS.search(raw, m.end())
                    g = MEG_GBS.search(raw, m.end())
                    if g:
                        L.gbs_logged.add(int(g.group(1)))
                    self._interval(int(m.group(1)), float(ms.group(1)) / 1e3,
                                   float(tf.group(1)) if tf else float("nan"), float("nan"))
                    return
        if b"step:" in raw:
            m = TT_STEP.search(raw)
            if m:
                L.framework = L.framework or "torchtitan"
                L.mem_max_reserved = max(L.mem_max_reserved, _f(m.group(2)) * 2**30)
                L.mem_unit = L.mem_unit or "GiB"
                self._interval(int(m.group(1)), float("nan"), _f(m.group(5)), _f(m.group(4)))
                return
        if b"train_step_timing" in raw:
            m = NEMO_STEP.search(raw)
            if m:
                L.framework = L.framework or "nemo"
                self._interval(int(m.group(1)), float(m.group(2)), float("nan"), float("nan"))
                return
        if b"memory (" in raw:
            m = MEG_MEM_MB.search(raw)
            if m:
                L.mem_max_allocated = max(L.mem_max_allocated, float(m.group(2)) * 2**20)
                L.mem_max_reserved = max(L.mem_max_reserved, float(m.group(4)) * 2**20)
                L.mem_unit = L.mem_unit or "MB (2^20 bytes)"
                return
            m = BRIDGE_MEM.search(raw)
            if m:
                for kind, v in BRIDGE_KEY.findall(m.group(1)):
                    attr = "mem_max_allocated" if kind == b"allocated" else "mem_max_reserved"
                    setattr(L, attr, max(getattr(L, attr), float(v) * 1e9))
                L.mem_unit = L.mem_unit or "GB (1e9 bytes)"
                return
        if b"padded vocab" in raw:
            m = PADDED_VOCAB.search(raw)
            if m:
                L.vocab_unpadded, L.vocab_padded = int(m.group(1)), int(m.group(3))
                return
        if b"Running with args:" in raw:
            m = TT_ARGS.search(raw)
            if m:
                L.framework = L.framework or "torchtitan"
                L.args.update(_flatten(_literal(m.group(1))))
                L.dumps += 1
                self.new_start = True
                return
        if b"Building " in raw:
            m = TT_MESH.search(raw)
            if m:
                dims = [int(x) for x in re.findall(rb"\d+", m.group(3))]
                w = 1
                for d in dims:
                    w *= d
                L.mesh_world = w
                return
            m = TT_BUILD.search(raw)
            if m:
                L.framework = L.framework or "torchtitan"
                L.model_name = f"{_text(m.group(1))} {_text(m.group(2))}"
                L.model_args = {k: v.strip().strip("'\"") for k, v in KV.findall(_text(m.group(4)))}
                return
        if b"capacity: " in raw:
            m = TT_DEVICE.search(raw)
            if m:
                L.device_name = _text(m.group(1))
                return
        if b"Trainer is initialized" in raw:
            m = TT_TRAINER.search(raw)
            if m:
                L.trainer = {"local_batch_size": int(m.group(1)), "global_batch_size": int(m.group(2)),
                             "gradient_accumulation_steps": int(m.group(3)), "seq_len": int(m.group(4))}
                return
        low = raw.lower()
        if any(w in low for w in EVENT_WORDS):
            self.pending_event = True


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="replace").strip()


def _literal(b: bytes) -> object:
    """The dict torchtitan printed (Python literal syntax); an unreadable one counts as absent."""
    try:
        return ast.literal_eval(_text(b))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return {}


def _flatten(d: object, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}{k}"
            if isinstance(v, dict):
                out.update(_flatten(v, key + "."))
            else:
                out[key] = str(v)
    return out


def parse_lines(lines: Iterable[bytes]) -> ParsedLog:
    """Parse an iterable of raw lines (bytes, without line ends)."""
    p = _Parser()
    for ln in lines:
        p.line(ln)
    return p.log


def parse_text(text: str) -> ParsedLog:
    """Parse a log given as a string (tests, small inputs)."""
    return parse_lines(text.encode("utf-8", errors="replace").replace(b"\r", b"\n").split(b"\n"))


def parse_file(path: str | Path) -> ParsedLog:
    """Parse a log file (plain or gzip), streamed in BLOCK-sized reads."""
    fh, gz = open_log(path)
    p = _Parser()
    p.log.gzip = gz
    try:
        with fh:
            for ln in iter_lines(gunzip_blocks(fh, p.log) if gz else _raw_blocks(fh), p.log):
                p.line(ln)
    except OSError as exc:
        raise InputError(str(path), "", f"cannot read file ({exc.strerror or exc})") from None
    return p.log
