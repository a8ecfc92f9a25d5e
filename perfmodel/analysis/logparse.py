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
- NGC container banner (the images' /opt/nvidia/entrypoint.d banner script, `cat <<EOF`): a title line
  '== {product name} ==' then 'NVIDIA Release {version} (build {id})'; a NeMo Framework container's release
  is read as the software 'NeMo {version}' (perfmodel.specs.stack.stack_for_row maps it to its preset).
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
remembered; a new argument dump or job config, printed by a restart, clears them: a resumed job that
prints no new dump has intervals repeating iteration numbers just logged kept once). A line without a line
end at the end of the file (cut while written) is not read. Only lines holding a marker word are parsed:
each block is searched for the words in C, and once a Megatron or torchtitan log's intervals have begun,
one regex pass per block reads its interval lines. Memory is bounded: the per-interval numbers are arrays
(34 bytes per interval), a block is BLOCK bytes.
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

from perfmodel.errors import InputError

BLOCK = 1 << 22  # 4 MiB read at a time
MAX_LINE = 1 << 20  # a longer line is cut here (its tail is dropped)
DEDUP_WINDOW = 256  # iterations remembered to drop the same interval printed by several ranks

NAN = float("nan")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")

ARG_HEAD = b"------------------------ arguments ------------------------"
ARG_END = b"-------------------- end of arguments"
# '  {arg} {dots} {value}', dots = 48 - len(arg) (>= 1 for every field perfmodel reads)
ARG_LINE = re.compile(rb"\s([A-Za-z_][A-Za-z0-9_]*) \.{1,48} (.*?)\s*$")

# every number must be followed by its separator: a line cut mid-number (a truncated file) is not read
MEG_ITER = re.compile(
    rb"iteration\s+(\d+)/\s*\d+\s*\|[^\n]*?elapsed time per iteration \(ms\):\s*([0-9.]+) \|"
    rb"(?:[^\n]*?throughput per GPU \(TFLOP/s/GPU\):\s*([0-9.]+) \|)?"
    rb"(?:[^\n]*?global batch size:\s*(\d+) \|)?"
)
# a Megatron block is scanned once for 'iteration': an interval line matches in full, any other line naming
# an iteration (evaluation, checkpoint save, memory report) matches the bare word and is parsed as a line
MEG_SCAN = re.compile(
    rb"iteration(?:\s+(\d+)/\s*\d+\s*\|[^\n]*?elapsed time per iteration \(ms\):\s*([0-9.]+) \|"
    rb"(?:[^\n]*?throughput per GPU \(TFLOP/s/GPU\):\s*([0-9.]+) \|)?"
    rb"(?:[^\n]*?global batch size:\s*(\d+) \|)?)?"
)
MEG_RARE = (b"-- arguments --", b"padded vocab")
MEG_MEM_MB = re.compile(
    rb"memory \(MB\) \| allocated: ([0-9.]+) \| max allocated: ([0-9.]+) \| reserved: ([0-9.]+)"
    rb" \| max reserved: ([0-9.]+)(?= \||\s*$|\[Rank)"
)
BRIDGE_MEM = re.compile(rb"memory \(GB\)(.*)")
BRIDGE_KEY = re.compile(rb"mem-max-(allocated|reserved)-gigabytes: ([0-9.eE+-]+)(?= \||\s*$)")
PADDED_VOCAB = re.compile(rb"padded vocab \(size: (\d+)\) with (\d+) dummy tokens \(new size: (\d+)\)")
NEMO_STEP = re.compile(rb"global_step=(\d+)(?:\.0)?,.*?train_step_timing in s=([0-9.]+)[,\]]")

TT_STEP = re.compile(
    rb"step:(?<!validate step:)\s*(\d+)\s+loss:\s*\S+\s+(?:grad_norm:\s*\S+\s+)?memory:\s*([0-9.]+)GiB"
    rb"\(([0-9.]+)%\)\s+tps:\s*([0-9,]+)\s+tflops:\s*([0-9,.]+)\s+mfu:\s*([0-9.]+)%"
)
_A = rb"(?:\x1b\[[0-9;]*m)*"  # colour codes between the fields
# one pass finds the training step lines and the 'validate step:' lines (no tflops/mfu there; told apart
# by the word before 'step:'); checkpoint saves are found by their word; a restart shows as steps going back
TT_SCAN = re.compile(
    rb"step:\s*(\d+)\s+"
    + _A
    + rb"loss:\s*\S+\s+"
    + _A
    + rb"(?:grad_norm:\s*\S+\s+"
    + _A
    + rb")?memory:\s*([0-9.]+)GiB\(([0-9.]+)%\)\s+"
    + _A
    + rb"tps:\s*([0-9,]+)"
    + rb"(?:\s+"
    + _A
    + rb"tflops:\s*([0-9,.]+)\s+"
    + _A
    + rb"mfu:\s*([0-9.]+)%)?"
)
TT_RARE = (b"checkpoint",)
TT_ARGS = re.compile(rb"Running with args: (\{.*\})")
TT_BUILD = re.compile(rb"Building (\S+) (\S+) with (\w+)\((.*)\)")
TT_TRAINER = re.compile(
    rb"local batch size (\d+), global batch size (-?\d+), gradient accumulation steps (\d+), "
    rb"sequence length (\d+)"
)
TT_MESH = re.compile(rb"Building (\d+)-D device mesh with \[([^\]]*)\], \[([^\]]*)\]")
BANNER = re.compile(rb"^\s*== (.+?) ==\s*$")
BANNER_RELEASE = re.compile(rb"NVIDIA Release (\d+\.\d+(?:\.\d+)?) \(build")
TT_DEVICE = re.compile(rb"capacity: (.+?) with ([0-9.]+)GiB memory")
KV = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,()\[\]{}]+)")

# Only lines holding one of these words are parsed (each block is searched once per word, in C); the set
# narrows to the framework's own words once the log's framework is known.
MARKS_ALL = (
    b"-- arguments --",
    b"iteration",
    b"padded vocab",
    b"step:",
    b"train_step_timing",
    b"checkpoint",
    b"Running with args",
    b"device mesh with",
    b"Building ",
    b"Trainer is initialized",
    b"capacity: ",
    b"Evaluating on",
    b"memory (",
    b"== ",
    b"NVIDIA Release ",
)
MARKS = {
    "megatron": (b"-- arguments --", b"iteration", b"padded vocab"),
    "torchtitan": (
        b"step:",
        b"checkpoint",
        b"Running with args",
        b"device mesh with",
        b"Building ",
        b"Trainer is initialized",
        b"capacity: ",
    ),
    "nemo": (b"train_step_timing", b"-- arguments --", b"checkpoint"),
}
ARG_LINE_M = re.compile(rb"^[^\n]*?\s([A-Za-z_][A-Za-z0-9_]*) \.{1,48} ([^\n]*?)[ \t]*$", re.M)

# lines that start an evaluation or a checkpoint save: the interval logged next may include it
EVENT_WORDS = (
    b"validation loss at",
    b"saving checkpoint",
    b"saving the checkpoint",
    b"validate step:",
    b"evaluating on",
    b"save-checkpoint",
)


@dataclass
class ParsedLog:
    """What a log states. `args`: the Megatron argument dump (raw strings) or torchtitan's flattened job
    config; `iters`/`step_s`/`tflops`/`tps`: one entry per logged interval, in log order; `flagged`: 1 where
    the interval is warm-up (first WARMUP iterations after a start) or may include an evaluation or a
    checkpoint save."""

    framework: str = ""  # megatron | torchtitan | nemo | "" (nothing recognised)
    args: dict[str, str] = field(default_factory=dict)
    model_args: dict[str, str] = field(default_factory=dict)  # torchtitan 'Building ... with X(...)'
    model_name: str = ""
    iters: array = field(default_factory=lambda: array("q"))
    step_s: array = field(default_factory=lambda: array("d"))
    tflops: array = field(default_factory=lambda: array("d"))  # NaN where not logged
    tps: array = field(default_factory=lambda: array("d"))  # torchtitan tokens/s/device; NaN otherwise
    event_after: array = field(default_factory=lambda: array("b"))  # 1: an eval/checkpoint preceded it
    starts: array = field(default_factory=lambda: array("b"))  # 1: first interval of a (re)start
    gbs_logged: set[int] = field(default_factory=set)
    mem_max_allocated: float = 0.0  # bytes, max over ranks and reports
    mem_max_reserved: float = 0.0
    mem_unit: str = ""
    vocab_unpadded: int = 0
    vocab_padded: int = 0
    trainer: dict[str, int] = field(default_factory=dict)  # torchtitan 'Trainer is initialized with ...'
    mesh_world: int = 0
    device_name: str = ""  # torchtitan 'CUDA capacity: NVIDIA H100 80GB HBM3 with ...'
    container: str = ""  # NGC banner '== NeMo Framework ==' (the product name)
    container_release: str = ""  # ... 'NVIDIA Release 25.09 (build N)'
    lines: int = 0
    cut_lines: int = 0
    last_line_cut: bool = False  # the file does not end with a line end (cut while written)
    dumps: int = 0  # argument dumps seen (a restart prints another)
    last_dump_at: int = 0  # intervals logged before the last argument dump (an earlier start)
    gzip: bool = False
    gzip_truncated: bool = False


def software_of(log: ParsedLog) -> str:
    """The software release the log names: 'NeMo 25.09' from a NeMo Framework container banner, else ''."""
    if log.container_release and "nemo" in log.container.lower():
        return f"NeMo {log.container_release}"
    return ""


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
            if d.eof:  # next member, if any
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


def line_blocks(blocks: Iterable[bytes], stats: ParsedLog | None = None) -> Iterator[bytes]:
    """Blocks that end at a line end (\\r, which progress bars use to rewrite a line, counts as one). A
    line longer than MAX_LINE is cut there and the rest of it dropped, so memory stays bounded."""
    carry = b""
    skipping = False
    for block in blocks:
        if b"\r" in block:
            block = block.replace(b"\r", b"\n")
        if skipping:  # the tail of a line already cut
            i = block.find(b"\n")
            if i < 0:
                continue
            block, skipping = block[i + 1 :], False
        data = carry + block if carry else block
        i = data.rfind(b"\n")
        if i < 0:
            carry = data
        else:
            carry = data[i + 1 :]
            yield data[: i + 1]
        if len(carry) > MAX_LINE:
            if stats is not None:
                stats.cut_lines += 1
            yield carry[:MAX_LINE] + b"\n"
            carry, skipping = b"", True
    if carry and not skipping and stats is not None:
        stats.last_line_cut = True  # no line end: the file was cut while written; its last line is not read


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

    def _restart(self) -> None:
        """A new start (a new argument dump): its iteration numbers may repeat the earlier ones."""
        self.new_start = True
        self.recent.clear()
        self.recent_set.clear()
        self.last_iter = -1

    def _interval(self, it: int, step: float, tflops: float, tps: float) -> None:
        L = self.log
        if it in self.recent_set:  # the same interval from another rank (or a repeated print)
            return
        if len(self.recent) == self.recent.maxlen:
            self.recent_set.discard(self.recent[0])
        self.recent.append(it)
        self.recent_set.add(it)
        if it < self.last_iter:  # iterations went back: a resumed job appended to the log
            self.new_start = True
        self.last_iter = it
        L.iters.append(it)
        L.step_s.append(step)
        L.tflops.append(tflops)
        L.tps.append(tps)
        L.event_after.append(1 if self.pending_event else 0)
        L.starts.append(1 if self.new_start else 0)
        self.pending_event = self.new_start = False

    def block(self, data: bytes) -> None:
        """Parse a block of whole lines: only lines holding a marker word are looked at, plus the
        argument dump's lines."""
        L = self.log
        L.lines += data.count(b"\n")
        if L.iters and L.framework == "megatron" and b"\x1b" not in data:
            return self._block_megatron(data)
        if L.iters and L.framework == "torchtitan":
            return self._block_torchtitan(data)
        starts: set[int] = set()
        for mark in MARKS.get(L.framework, MARKS_ALL):
            p = data.find(mark)
            while p >= 0:
                starts.add(data.rfind(b"\n", 0, p) + 1)
                e = data.find(b"\n", p)
                p = data.find(mark, e) if e >= 0 else -1
        pos = self._dump(data, 0) if self.in_dump else 0
        for s in sorted(starts):
            if s < pos:
                continue
            e = data.find(b"\n", s)
            e = len(data) if e < 0 else e
            self.line(data[s : min(e, s + MAX_LINE)])
            if self.in_dump:
                pos = self._dump(data, e)

    def _line_at(self, data: bytes, p: int) -> int:
        """Parse the line holding offset p; returns the offset of its end."""
        s = data.rfind(b"\n", 0, p) + 1
        e = data.find(b"\n", p)
        e = len(data) if e < 0 else e
        self.line(data[s : min(e, s + MAX_LINE)])
        return e

    def _block_megatron(self, data: bytes) -> None:
        """The fast path of a Megatron log (most of a large log is interval lines): one regex pass finds
        every interval line and every other line naming an iteration; the rare lines (a new argument
        dump, the vocabulary padding) are found by their words and parsed in order."""
        rare = sorted(p for mark in MEG_RARE for p in _all(data, mark))
        ri = 0
        gbs_seen: set[bytes] = set()
        pos = self._dump(data, 0) if self.in_dump else 0
        while True:
            m = MEG_SCAN.search(data, pos)
            if m is None:
                break
            p = m.start()
            while ri < len(rare) and rare[ri] < p:
                if rare[ri] >= pos:
                    pos = self._line_at(data, rare[ri])
                    if self.in_dump:
                        pos = self._dump(data, pos)
                ri += 1
            if p < pos:
                continue
            it, ms, tf, g = m.groups()
            if it is None:
                pos = self._line_at(data, p)
                continue
            if g and g not in gbs_seen:
                gbs_seen.add(g)
                self.log.gbs_logged.add(int(g))
            self._interval(int(it), float(ms) / 1e3, float(tf) if tf else NAN, NAN)
            e = data.find(b"\n", m.end())  # the rest of an interval line names iterations again
            pos = len(data) if e < 0 else e
        for r in rare[ri:]:
            if r >= pos:
                pos = self._line_at(data, r)
                if self.in_dump:
                    pos = self._dump(data, pos)

    def _block_torchtitan(self, data: bytes) -> None:
        """The fast path of a torchtitan log once its intervals began: one regex pass over the step
        lines (colour codes included); checkpoint, validation and restart lines found by their words."""
        L = self.log
        rare = sorted(p for mark in TT_RARE for p in _all(data, mark))
        ri, pos = 0, 0
        recent = self.recent_set
        mem = L.mem_max_reserved / 2**30
        for m in TT_SCAN.finditer(data):
            p = m.start()
            if rare:
                while ri < len(rare) and rare[ri] < p:
                    if rare[ri] >= pos:
                        pos = self._line_at(data, rare[ri])
                    ri += 1
                if p < pos:
                    continue
            step, gib, _, tps, tflops, _ = m.groups()
            if tflops is None:  # no tflops: a 'validate step:' line (or a cut one)
                if data[max(0, p - 9) : p] == b"validate ":
                    self.pending_event = True
                continue
            g = float(gib)
            if g > mem:  # max over ranks
                mem = g
            it = int(step)
            if it in recent:  # the same step printed by another rank
                continue
            self._interval(it, NAN, float(tflops.replace(b",", b"")), float(tps.replace(b",", b"")))
        L.mem_max_reserved = mem * 2**30
        for r in rare[ri:]:
            if r >= pos:
                pos = self._line_at(data, r)

    def _dump(self, data: bytes, start: int) -> int:
        """Argument lines from `start` to the end-of-dump line (or the block's end: the dump goes on in
        the next block); returns where scanning resumes."""
        end = data.find(ARG_END, start)
        region = data[start : end if end >= 0 else len(data)]
        if b"\x1b" in region:
            region = ANSI.sub(b"", region)
        for m in ARG_LINE_M.finditer(region):
            self.log.args[m.group(1).decode()] = _text(m.group(2))
        if end < 0:
            return len(data)
        self.in_dump = False
        e = data.find(b"\n", end)
        return len(data) if e < 0 else e

    def line(self, raw: bytes) -> None:
        L = self.log
        if b"\x1b" in raw:
            raw = ANSI.sub(b"", raw)
        if b"elapsed time per iteration" in raw:
            m = MEG_ITER.search(raw)
            if m:
                L.framework = L.framework or "megatron"
                tf, g = m.group(3), m.group(4)
                if g:
                    L.gbs_logged.add(int(g))
                self._interval(int(m.group(1)), float(m.group(2)) / 1e3, float(tf) if tf else NAN, NAN)
                return
        if ARG_HEAD in raw:
            # a new start prints a new dump: its arguments replace the earlier ones (the layout may differ)
            self.in_dump = True
            L.framework = L.framework or "megatron"
            L.dumps += 1
            if L.dumps > 1:
                L.args = {}
                L.last_dump_at = len(L.iters)
            self._restart()
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
            found = False
            for m in MEG_MEM_MB.finditer(raw):  # two ranks' reports may share a line (unbuffered writes)
                L.mem_max_allocated = max(L.mem_max_allocated, float(m.group(2)) * 2**20)
                L.mem_max_reserved = max(L.mem_max_reserved, float(m.group(4)) * 2**20)
                L.mem_unit = L.mem_unit or "MB (2^20 bytes)"
                found = True
            if found:
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
                self._restart()
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
        if b"== " in raw and not L.container:
            m = BANNER.search(raw)
            if m:
                L.container = _text(m.group(1))
                return
        if b"NVIDIA Release " in raw and L.container and not L.container_release:
            m = BANNER_RELEASE.search(raw)
            if m:
                L.container_release = _text(m.group(1))
                return
        if b"capacity: " in raw:
            m = TT_DEVICE.search(raw)
            if m:
                L.device_name = _text(m.group(1))
                return
        if b"Trainer is initialized" in raw:
            m = TT_TRAINER.search(raw)
            if m:
                L.trainer = {
                    "local_batch_size": int(m.group(1)),
                    "global_batch_size": int(m.group(2)),
                    "gradient_accumulation_steps": int(m.group(3)),
                    "seq_len": int(m.group(4)),
                }
                return
        low = raw.lower()
        if any(w in low for w in EVENT_WORDS):
            self.pending_event = True


def _all(data: bytes, mark: bytes) -> Iterator[int]:
    p = data.find(mark)
    while p >= 0:
        yield p
        p = data.find(mark, p + len(mark))


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


def parse_blocks(blocks: Iterable[bytes]) -> ParsedLog:
    """Parse raw bytes given in blocks of any size (a line may span blocks)."""
    p = _Parser()
    for data in line_blocks(blocks, p.log):
        p.block(data)
    return p.log


def parse_text(text: str) -> ParsedLog:
    """Parse a log given as a string (tests, small inputs)."""
    return parse_blocks([text.encode("utf-8", errors="replace")])


def parse_file(path: str | Path) -> ParsedLog:
    """Parse a log file (plain or gzip), streamed in BLOCK-sized reads."""
    fh, gz = open_log(path)
    p = _Parser()
    p.log.gzip = gz
    try:
        with fh:
            for data in line_blocks(gunzip_blocks(fh, p.log) if gz else _raw_blocks(fh), p.log):
                p.block(data)
    except OSError as exc:
        raise InputError(str(path), "", f"cannot read file ({exc.strerror or exc})") from None
    return p.log
