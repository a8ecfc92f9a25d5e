"""Read a training log: Megatron-LM (and its ROCm fork) / Megatron-Bridge / NeMo 2, torchtitan, MaxText or Composer,
streamed line by line.

Pure functions over bytes; no prediction here (perfmodel/analysis/logrun.py turns a ParsedLog into a run,
perfmodel/analysis/logcheck.py measures and predicts it). The formats are the frameworks' own logging code, read at
these versions (never a copied log):

- Megatron-LM megatron/training/arguments.py @000c4ac / @d580efc `_print_args`: a header
  '------------------------ arguments ------------------------', then one line per argument
  '  {arg} {dots} {value}' with dots = '.' * (48 - len(arg)) (none for a name of 48 or more characters:
  '  microbatch_group_size_per_virtual_pipeline_stage  None'), sorted, then
  '-------------------- end of arguments ---------------------'. Values are str() of Python values.
  arguments.py @d580efc validate_args: 'using world size: {}, data-parallel size: {}, ...';
  megatron/core/num_microbatches_calculator.py @d580efc l.229 (rank 0, logger.info): 'setting number of
  microbatches to constant {n}' (n = gbs / (mbs x dp), so it gives the data-parallel size).
- Megatron-LM megatron/training/training.py @001b00c / @d580efc `training_log`: ' [%Y-%m-%d %H:%M:%S.%f] iteration
  {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): {:.1f} | throughput per GPU
  (TFLOP/s/GPU): {:.1f} | learning rate: {:.6E} | global batch size: {:5d} | lm loss: ... |'; the time is the
  mean over the logging interval (interval-time timer / iterations). `evaluate_and_print_results`: ' validation
  loss at iteration N | ...'. The ROCm fork (ROCm/Megatron-LM@27f7be5 training.py `training_log`) adds
  ' mem usages: {:.4f} |' (1 - free / total device memory, torch.cuda.mem_get_info) right after the elapsed time.
  The BigScience Megatron-DeepSpeed fork (bigscience-workshop/Megatron-DeepSpeed@8387ae17 megatron/training.py
  `training_log`, since @4c2aea04) prints ' consumed tokens: {:12d} |' after the samples and the time in seconds,
  ' elapsed time per iteration (s): {:.2f} |', then ' samples per second: ... | TFLOPs: ... |' at the end. The
  Microsoft fork (microsoft/Megatron-DeepSpeed@00caa0e9 megatron/training.py `training_log`, and the forks built
  on it) keeps milliseconds and adds ' actual seqlen: {:5d} |' and ' tokens per gpu per second (tgs): {:.3f} |'
  (samples per second x seq / world size) before its ' TFLOPs: {:.2f} |' (MDS_FIELD).
- Megatron-Bridge src/megatron/bridge/training/utils/train_utils.py @7af9601 (v0.2.0) `training_log`: the same
  iteration line (timestamp without microseconds; the TFLOP/s field only with logger.log_throughput), preceded by
  'Step Time : {:.2f}s GPU utilization: {:.1f}MODEL_TFLOP/s/GPU' (always printed); memory '[Rank R] (after N
  iterations) memory (GB) | mem-max-allocated-gigabytes: X | mem-max-reserved-gigabytes: X | ...' (GB = 1e9
  bytes). training/setup.py @7af9601 `maybe_log_and_save_config` (v0.2.0 .. v0.3.0): '------- Task Configuration
  -------', then `print(yaml.safe_dump(cfg.to_dict(), default_flow_style=False))` (training/utils/config_utils.py
  `print_yaml`: keys sorted, nested maps indented by 2, block lists, null / true / false), then a line of 34 '-'.
- Megatron-LM megatron/training/utils.py @00caa53 `report_memory`: '[Rank R] (after N iterations) memory (MB)
  | allocated: X | max allocated: X | reserved: X | max reserved: X' (MB = 2**20 bytes).
- Megatron tokenizer `_vocab_size_with_padding`: ' > padded vocab (size: V) with D dummy tokens (new size: P)'.
- NeMo 2: nemo/lightning/pytorch/callbacks/progress_printer.py @8cfedd7 `ProgressPrinter` (the default printer,
  MegatronStrategy replace_progress_bar=True): 'Training epoch {epoch}, iteration {n-1}/{max_steps-1}' then
  ' | {metric}: {int(val)}' for a whole number, else ' | {metric}: {val:.4}', each metric the mean over the
  log_interval steps (global_step the latest); 'train_step_timing in s' is nemo/utils/exp_manager.py @8cfedd7
  TimingCallback's step time. The Lightning bar form (replace_progress_bar=False): '... global_step=50.0, ...
  train_step_timing in s=5.900 ...' (the last step's values, tqdm format_num). megatron_strategy.py @8cfedd7
  setup_distributed: 'All distributed processes registered. Starting with {world_size} processes'.
- NGC container banner (the images' /opt/nvidia/entrypoint.d banner script, `cat <<EOF`): a title line
  '== {product name} ==' then 'NVIDIA Release {version} (build {id})'; a NeMo Framework container's release
  is read as the software 'NeMo {version}' (perfmodel.specs.stack.infer_stack maps it to its preset).
  ROCm: the `rocm/megatron-lm` image name (ROCm/ROCm@e396b48 docs/how-to/rocm-for-ai/training/benchmark-docker/
  megatron-lm.rst) and the device's marketing name 'AMD Instinct MI300X' (torch.cuda.get_device_name on ROCm).
- nanotron (huggingface/nanotron@v0.4 f2c83832, @0e0a27ea 2025-02-19, HEAD @2411b022): LoggerWriter
  .add_scalars_from_list (src/nanotron/logging.py to 0e0a27ea, logging/base.py at HEAD): 'iteration: {step} /
  {train_steps} | {tag}: {value} | ...', each value human_format (3 significant digits, a K / M / G (B at HEAD) / T
  suffix per thousand: '1.23K'); trainer.py train_step_logs: 'consumed_tokens', 'elapsed_time_per_iteration_ms' (to
  0e0a27ea; 'time_per_iteration_ms' at HEAD), 'tokens_per_sec', 'tokens_per_sec_per_gpu', 'global_batch_size'
  (samples; tokens at HEAD), 'lm_loss', 'lr', 'model_tflops_per_gpu', 'hardware_tflops_per_gpu', printed by one rank
  (dp = tp = 0 of the last stage); '[Start training] datetime: ... | mbs: {m} | grad_accum: {a} | global_batch_size: {g}
  (samples) | sequence_length: {s} | ...' (HEAD without the datetime, with 'cp:'); the config as 'Config:\n' +
  pprint.pformat(config) (nested dataclass reprs, key=value, indented continuation lines; nanotron needs Python
  >= 3.10, whose pprint breaks dataclasses over lines). NewLineStreamHandler formats every line of a message, so each
  continuation line carries the formatter's prefix: '%m/%d/%Y %H:%M:%S [INFO|DP=..|PP=..|TP=..(|EXP=..)(|node)]: ' to
  0e0a27ea, HEAD's '\x1b[2;3m%m/%d %H:%M:%S [...]\x1b[0m: '. log_memory: '... Peak allocated {:.2f}MiB. Peak
  reserved: {:.2f}MiB'.
- OLMo (allenai/OLMo v0.2.0 2023-12 .. @59a53e3f 2025-09, olmo/train.py Trainer.log_metrics_to_console and
  SpeedMonitor.check) and OLMo-core (allenai/OLMo-core@fa6c5014 src/olmo_core/train/callbacks/console_logger.py,
  speed_monitor.py, gpu_memory_monitor.py): a header '[step={s}/{max}]' (',epoch={e}' from v0.5, ',eta=...' in
  OLMo-core) then one '    {name}={format_float(value)}' line per metric (format_float: ',' thousands, 'B' / 'T'
  suffixes above 1e9 in OLMo-core, '1.23E-05' below 1e-4). OLMo: throughput/device/tokens_per_second and
  batches_per_second over SpeedMonitor's window, System/Peak GPU Memory (MB) (max allocated / 1e6, max over ranks);
  OLMo-core: throughput/device/TPS and BPS of the logged step, MFU (%), gpu_memory/GPU active / reserved mem (GiB).
  OLMo's scripts/train.py logs 'Configuration:' then the TrainConfig repr (with device_train_batch_size filled in)
  when it names fewer than 50 data paths.
- nanoGPT (karpathy/nanoGPT@dc81cb36 train.py, model.py, configurator.py): 'iter {n}: loss {:.4f}, time {dt*1000:.2f}ms,
  mfu {running_mfu*100:.2f}%' (dt one iteration on the master process, an evaluation before it included; mfu an EMA
  against the A100's 312 TFLOP/s, -100.00% for the first 5 iterations), 'step {n}: train loss ..., val loss ...' (an
  evaluation), 'tokens per iteration will be: {:,}' (gradient_accumulation_steps x world x batch_size x
  block_size), configurator.py's 'Overriding config with {file}:' + the file's lines and 'Overriding: {key} =
  {value}'.
- modded-nanogpt (KellerJordan/modded-nanogpt@f411b3d3 records/*: each record's log is its train_gpt.py source, then
  its output): 'step:{n}/{N} [train_loss:... | val_loss:...] train_time:{ms}ms step_avg:{ms}ms' (train_time in
  seconds, '{:.3f}s', in later records), train_time the cumulative training time that the first steps and every
  validation are kept out of (its timer restarts after the warm-up steps), so a step's time is the difference of two
  lines' train_time over their steps; the device from the nvidia-smi table the script prints ('|   0  NVIDIA H100
  80GB HBM3   Off |'), its GPU count the table's rows, or 'Running PyTorch ... on {device} with world_size {n}'.
- torchtitan metrics line, four forms (colour codes between the fields): @57387af (2025-02-15) train.py
  'step: {step:2}  loss: {loss:7.4f}  memory: {gib:5.2f}GiB({pct:.2f}%)  tps: {round(tps):,}  mfu: {mfu:.2f}%'
  (no tflops); from 4e32663 (v0.1.0 @f7084fc components/metrics.py `MetricsProcessor.log`) '...  tps: ...  tflops:
  {tflops:,.2f}  mfu: {mfu:.2f}%'; from a85e2a5 (v0.2.0 @29624e3) 'grad_norm: {gn:7.4f}' after the loss; HEAD
  @b5bcd76 'mfu: {mfu_str}' with 'N/A' when FP8/MX quantisation is on. tps = tokens per second per device over
  the interval; memory = max reserved GiB; 'validate step: ...' for validation. Start-up lines: 'Running with
  args: {job_config.to_dict()}', 'Building {name} {flavor} with {model_args}' (a dataclass repr), 'Building
  {n}-D device mesh with {names}, {dims}' (dims > 1 only), '{DEVICE} capacity: {device_name} with
  {gib:.2f}GiB memory', 'Peak FLOPS used for computing MFU: {:.3e}', 'Peak flops undefined for: {device_name},
  fallback to A100' (@57387af utils.py get_peak_flops); trainer: 'Training starts at step {s}, with local batch
  size {b}, global batch size {g}, sequence length {q}, total steps {n} (warmup {w})' (@57387af train.py) or
  'Trainer is initialized with local batch size B, global batch size G, gradient accumulation steps A,
  sequence length S, ...' (from 12983cc; v0.2.0 train.py); 'Applied {mode} activation checkpointing to the
  model' (@57387af models/llama/parallelize_llama.py apply_ac; HEAD: the class name, SelectiveAC / FullAC),
  'Applied FSDP to the model' / 'Applied HSDP to the model', 'Compiling each TransformerBlock with
  torch.compile'; quantisation: 'Float8 training active' (@57387af float8.py), 'Float8 training active with
  recipe {r}' / 'Float8 tensorwise scaled training active' (v0.1.0, v0.2.0 components/quantization/float8.py),
  'MX training active with recipe {r}' (v0.2.0 mx.py); profiler: 'Dumping profiler traces at step {n}'
  (@57387af profiling.py).
- DeepSpeed (deepspeedai/DeepSpeed): the ThroughputTimer's samples/s line, the engine's configuration dump, its
  version and optimizer lines (DS_* below). The Hugging Face Trainer (huggingface/transformers): the 'Running
  training' banner, the final train metrics dict, the example scripts' 'Model config' JSON and TrainingArguments
  dump (HF_* below); a DeepSpeed log under the Trainer has both, its ThroughputTimer lines the intervals.
- A run that stopped: the first 'SomethingError: message' line and torchrun's ChildFailedError summary
  (pytorch/pytorch@0140b62 torch/distributed/elastic/multiprocessing/errors/__init__.py).

Robustness: ANSI colour codes and per-line prefixes (timestamps, '[rank3]:', srun '3: ') are ignored
because every pattern is searched, not anchored; bytes that are not UTF-8 are replaced; gzip is read
transparently; a line longer than MAX_LINE is cut (binary junk without newlines cannot grow memory);
several ranks printing the same interval are kept once (the last DEDUP_WINDOW iterations are
remembered; a new argument dump or job config, printed by a restart, clears them: a resumed job that
prints no new dump has intervals repeating iteration numbers just logged kept once). A line without a line
end at the end of the file (cut while written) is not read. Only lines holding a marker word are parsed:
each block is searched for the words in C, and once a Megatron or torchtitan log's intervals have begun,
one regex pass per block reads its interval lines. Memory is bounded: the per-interval numbers are arrays
(50 bytes per interval), a block is BLOCK bytes.
"""

from __future__ import annotations

import ast
import math
import re
import zlib
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from perfmodel.errors import InputError

BLOCK = 1 << 22  # 4 MiB read at a time
MAX_LINE = 1 << 20  # a longer line is cut here (its tail is dropped)
DEDUP_WINDOW = 256  # iterations remembered to drop the same interval printed by several ranks
MAX_CONFIG_LINES = 20000  # a Megatron-Bridge config dump longer than this has lost its closing line

NAN = float("nan")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")

ARG_HEAD = b"------------------------ arguments ------------------------"
ARG_END = b"-------------------- end of arguments"

# a number as the frameworks print it: digits with an optional fraction (never '1.2.3' or a bare '.', which float()
# refuses); _DC with thousands separators (torchtitan's '{:,}')
_D = rb"(?:\d+(?:\.\d*)?|\.\d+)"
_DC = rb"(?:\d[\d,]*(?:\.\d*)?|\.\d+)"
# every number must be followed by its separator: a line cut mid-number (a truncated file) is not read
_MEG_FIELDS = (
    rb"\s+(\d+)/\s*\d+\s*\|[^\n]*?elapsed time per iteration \((ms|s)\):\s*(" + _D + rb") \|"
    rb"(?: mem usages: (" + _D + rb") \|)?"  # the ROCm fork, right after the elapsed time
    rb"(?:[^\n]*?throughput per GPU \(TFLOP/s/GPU\):\s*(" + _D + rb") \|)?"
    rb"(?:[^\n]*?global batch size:\s*(\d+) \|)?"
)
MEG_ITER = re.compile(rb"iteration" + _MEG_FIELDS)
# microsoft/Megatron-DeepSpeed@00caa0e9 megatron/training.py training_log (and the forks that print its fields,
# argonne-lcf's among them): ' actual seqlen: {:5d} |', ' samples per second: {:.3f} |', ' tokens per gpu per
# second (tgs): {:.3f} |' (= samples per second x seq / world size) and ' TFLOPs: {:.2f} |' (its own
# throughput_calculator, per GPU); the BigScience fork prints ' TFLOPs: {:.2f} |' too. Read in any order.
MDS_FIELD = re.compile(rb"(actual seqlen|tokens per gpu per second \(tgs\)|TFLOPs):\s*(\d+(?:\.\d*)?) \|")


# DeepSpeed (deepspeedai/DeepSpeed deepspeed/utils/timer.py ThroughputTimer.stop, logged every steps_per_print
# global steps): from v0.8.0 (0f0e38c5) 'epoch={}/micro_step={}/global_step={}, RunningAvgSamplesPerSec={},
# CurrSamplesPerSec={}, MemAllocated={}GB, MaxMemAllocated={}GB' with CurrSamplesPerSec = train_batch_size / the
# step's summed forward-to-step() time; v0.7 '{epoch}/{micro step}, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...'
# per micro-step; v0.3-v0.6 '{epoch}/{micro step}, SamplesPerSec={the average since start_step}'. GB is GiB
# (memory_allocated / 1024**3).
_DS_NUM = _D + rb"(?:[eE][+-]?\d+)?"
DS_TPUT = re.compile(
    rb"(?:epoch=\d+/micro_step=\d+/global_step=(\d+)|(?<![\w/=])\d+/\d+), "
    rb"(?:RunningAvgSamplesPerSec="
    + _DS_NUM
    + rb", CurrSamplesPerSec=("
    + _DS_NUM
    + rb")|SamplesPerSec=("
    + _DS_NUM
    + rb"))(?:, MemAllocated="
    + _D
    + rb"GB, MaxMemAllocated=("
    + _D
    + rb")GB)?"
)
# DeepSpeedConfig.print (deepspeed/runtime/config.py): '  {arg} {dots(29 - len(arg))} {value}' for every config
# attribute, through DeepSpeed's logger ('[time] [INFO] [config.py:N:print] ' + the message, deepspeed/utils/
# logging.py)
DS_CONFIG = re.compile(rb"\[config\.py:\d+:print\]   ([A-Za-z_]\w*) \.* ?(\S[^\n]*?)\s*$")
DS_VERSION = re.compile(rb"DeepSpeed info: version=([\w.+\-]+)")
# the optimizer wrapper the engine built (deepspeed/runtime/engine.py _configure_bf16_optimizer /
# _configure_zero_optimizer / _configure_fp16_optimizer log lines)
DS_OPTIMIZER = re.compile(
    rb"Creating (BF16 optimizer|(?:torch\.)?(\w+) ZeRO stage ([0-3]) optimizer|fp16 (?:unfused )?optimizer)"
)


# Hugging Face transformers Trainer (huggingface/transformers@2cda12cb src/transformers/trainer.py
# _inner_training_loop): the '***** Running training *****' banner's '  Name = {value:,}' lines, then at the end the
# train metrics dict (speed_metrics: train_runtime, train_samples_per_second, train_steps_per_second and, with
# include_tokens_per_second, train_tokens_per_second; rounded to 3 decimals) printed as a Python dict by
# ProgressCallback / PrinterCallback on_log
HF_BANNER = b"***** Running training *****"
HF_FIELD = re.compile(
    rb"  (Num examples|Num Epochs|Instantaneous batch size per device|Total train batch size \(w\. parallel, "
    rb"distributed & accumulation\)|Gradient Accumulation steps|Total optimization steps|Number of trainable "
    rb"parameters) = (\d[\d,]*)\s*$|  Training with DataParallel so batch size has been adjusted to: (\d[\d,]*)"
)
HF_METRICS = re.compile(rb"\{'train_runtime': [^{}\n]*\}")
# the Trainer's progress bar (trainer_callback.py ProgressCallback: tqdm(total=state.max_steps), one update per
# optimizer step), a frame per '\r': tqdm std.py format_meter '| {n}/{total} [{elapsed}<{remaining}, {rate_fmt}'
# with rate_fmt '{:5.2f}s/it' or '{:5.2f}it/s', tqdm's exponential moving average of the step rate (smoothing 0.3)
HF_TQDM = re.compile(rb"\|\s*(\d+)/(\d+) \[[\d:]+<[^,\]]*,\s*(" + _D + rb")(s/it|it/s)[\],]")
# PretrainedConfig.__repr__ ('Model config LlamaConfig {' + to_json_string(use_diff=True), closed by '}' alone on a
# line; configuration_utils.py) and TrainingArguments.__str__ ('TrainingArguments(' then 'name=value,' per field,
# sorted, closed by ')'; training_args.py), as the example scripts log them at INFO
HF_CONFIG_HEAD = re.compile(rb"Model config (\w+) \{\s*$")
HF_ARGS_HEAD = re.compile(rb"TrainingArguments\(\s*$")
HF_ARG = re.compile(r"^([A-Za-z_]\w*)=(.*?),?\s*$")
HF_JSON_LINE = re.compile(r'^ {2,}(?:["\]}{\[\-\d]|true|false|null)')  # a line of the body (indent=2)
MAX_HF_LINES = 500  # a config or argument dump longer than this lost its closing line
# a per-line prefix the launcher adds to every line of a message, continuation lines too (torchrun --tee
# '[default0]:' / '[rank0]:', srun -l '0: ')
LAUNCHER = rb"(?:\[(?:rank|default)\d+\]:|\d+: )"
LINE_PREFIX = re.compile(rb"^" + LAUNCHER)
AT_LINE_START = rb"^" + LAUNCHER + rb"?"  # a line's start, after the launcher's prefix where it has one
# DeepSpeed's pipeline engine (deepspeed/runtime/pipe/engine.py PipelineEngine.__init__ @v0.12.6) and a resumed
# Trainer run (trainer.py _inner_training_loop: '  Continuing training from global step {n}')
DS_PIPE = re.compile(rb"CONFIG: micro_batches=(\d+)")
# PipelineModule._partition_layers (deepspeed/runtime/pipe/module.py @edaa7221), rank 0: 'stage={stage} layers={n}' per
# pipeline stage, then each layer's name indented below it
DS_STAGE = re.compile(AT_LINE_START + rb"stage=(\d{1,6}) layers=\d{1,9}\s*$")
HF_RESUMED = re.compile(rb"  Continuing training from global step (\d+)")
# nanotron (module docstring): the interval line, its 'tag: value' fields, the start line, the config dump, memory
NT_ITER = re.compile(rb"iteration: (\d{1,15}) / -?\d+ \| (.*)$")
NT_FIELD = re.compile(rb"([A-Za-z_][\w/]*): ([^|]*?)\s*(?=\||$)")
NT_HUMAN = re.compile(rb"(-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)([KMGBTPE]?)")
# the formatter prefix nanotron writes before every line of a message (module docstring), a launcher's before it
NT_PREFIX = re.compile(
    AT_LINE_START + rb"(?:\x1b\[[0-9;]*m)?\d\d/\d\d(?:/\d{4})? \d\d:\d\d:\d\d \[[^\]\n]*\](?:\x1b\[0m)?: "
)
NT_START = re.compile(rb"mbs: (\d{1,12}) \| grad_accum: (\d{1,12}) \|(.*)$")
NT_CONFIG_HEAD = re.compile(rb"(?<![\w.])Config\(general=GeneralArgs\(")
NT_KV = re.compile(r"(?<!\w)([A-Za-z_]\w*)=(<[^<>]*>|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\s<>]+)")
NT_QUOTED = re.compile(r"<[^<>]*>|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
NT_MEM = re.compile(rb"Peak allocated (\d{1,12}(?:\.\d+)?)MiB\. Peak reserved: (\d{1,12}(?:\.\d+)?)MiB")
MAX_NT_LINES = 1000  # a pformat'ed nanotron Config has ~150 lines; more is not a config dump
OL_HEAD = re.compile(rb"\[step=(\d{1,15})/(?:\d{1,15}|\?\?\?)(?:,epoch=\d{1,9})?(?:,eta=[^\]\n]{0,64})?\]\s*$")
OL_METRIC = re.compile(
    AT_LINE_START + rb"\s{4}"
    rb"(throughput/device/(?:tokens_per_second|batches_per_second|TPS|BPS|MFU)|System/Peak GPU Memory \(MB\)"
    rb"|gpu_memory/GPU (?:active|reserved) mem \(GiB\))="
    rb"(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?)([BTPE]?)\s*$"
)
MN_STEP = re.compile(
    rb"^step:(\d{1,9})/\d{1,9}(?: [^\n]*?)? train_time:(\d{1,12}(?:\.\d+)?)(ms|s) step_avg:(?:nan|\d{1,12}(?:\.\d+)?)ms"
)
MN_SMI = re.compile(rb"^\|\s+(\d{1,3})\s+(NVIDIA [^|]*?)\s+(?:On|Off)\s+\|")
# `nvidia-smi -L`, which launcher scripts often print: 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)'
SMI_LIST = re.compile(AT_LINE_START + rb"GPU (\d{1,3}): (NVIDIA [^()\n]{1,80}?) \(UUID: GPU-")
MN_RUNNING = re.compile(rb"^Running [Pp]y[Tt]orch \S+ compiled for CUDA \S+ on (.+?) with world_size (\d{1,6})\s*$")
NG_ITER = re.compile(
    AT_LINE_START + rb"iter (\d{1,15}): loss \S+, time (\d{1,12}(?:\.\d+)?)ms, mfu (-?\d{1,6}(?:\.\d+)?)%\s*$"
)
NG_TOKENS = re.compile(AT_LINE_START + rb"tokens per iteration will be: (\d{1,3}(?:,\d{3}){0,5})\s*$")
NG_OVERRIDE = re.compile(AT_LINE_START + rb"Overriding: ([A-Za-z_]\w*) = (.{1,200}?)\s*$")
NG_EVAL = re.compile(AT_LINE_START + rb"step \d+: train loss ")
# a config file's line, printed by configurator.py: an integer literal, else (an expression, a name) not a number read
NG_BLOCK = re.compile(rb"^\s*block_size\s*=\s*(?:(\d{1,9})|([^#\n]{1,200}?))\s*(?:#[^\n]*)?$")
OL_CONFIG = re.compile(rb"(?<![\w.])TrainConfig\((.*)$")


def _seconds(value: bytes, unit: bytes) -> float:
    """An interval line's elapsed time per iteration in seconds: Megatron-LM prints ms; the BigScience fork of
    Megatron-DeepSpeed prints s from bigscience-workshop/Megatron-DeepSpeed@4c2aea04 (2022-01-28, 'Fix throughput
    unit (#241)': ' elapsed time per iteration (s): {:.2f} |')."""
    return float(value) / 1e3 if unit == b"ms" else float(value)


# a Megatron block is scanned once for 'iteration': an interval line matches in full, any other line naming
# an iteration (evaluation, checkpoint save, memory report) matches the bare word and is parsed as a line
MEG_SCAN = re.compile(rb"iteration(?:" + _MEG_FIELDS + rb")?")
MEG_RARE = (b"-- arguments --", b"padded vocab")
BRIDGE_RARE = MEG_RARE + (b"GPU utilization:", b"------- Task Configuration")  # a Megatron-Bridge log's
MEG_MEM_MB = re.compile(
    rb"memory \(MB\) \| allocated: (" + _D + rb") \| max allocated: (" + _D + rb")"
    rb" \| reserved: (" + _D + rb")"
    rb" \| max reserved: (" + _D + rb")(?= \||\s*$|\[Rank)"
)
BRIDGE_MEM = re.compile(rb"memory \(GB\)(.*)")
BRIDGE_KEY = re.compile(rb"mem-max-(allocated|reserved)-gigabytes: (-?" + _D + rb"(?:[eE][+-]?\d+)?)(?= \||\s*$)")
BRIDGE_STEP = re.compile(rb"Step Time : (" + _D + rb")s GPU utilization: (" + _D + rb")MODEL_TFLOP/s/GPU")
BRIDGE_HEAD = b"------- Task Configuration -------"
BRIDGE_END = b"-" * 34
PADDED_VOCAB = re.compile(rb"padded vocab \(size: (\d+)\) with (\d+) dummy tokens \(new size: (\d+)\)")
WORLD = re.compile(rb"using world size: (\d+),")
MICRO = re.compile(rb"setting number of microbatches to constant (\d+)")
NEMO_WORLD = re.compile(rb"All distributed processes registered\. Starting with (\d+) processes")
_NUM = rb"(-?(?:" + _D + rb"(?:e[+-]?\d+)?|nan|inf))"
NEMO_STEP = re.compile(rb"global_step=(" + _D + rb"(?:e\+?\d+)?),.*?train_step_timing in s=" + _NUM + rb"[,\]]")
NEMO_PRINT = re.compile(rb"Training epoch (\d+), iteration (\d+)/(-?\d+)((?: \| [^\n]*)?)")

_A = rb"(?:\x1b\[[0-9;]*m)*"  # colour codes between the fields
_TT_TAIL = (
    rb"tps:\s*(\d[\d,]*)(?:\s+" + _A + rb"tflops:\s*(" + _DC + rb"))?(?:\s+" + _A + rb"mfu:\s*(?:(" + _D + rb")%|N/A))?"
)
TT_STEP = re.compile(
    rb"step:(?<!validate step:)\s*(\d+)\s+loss:\s*\S+\s+(?:grad_norm:\s*\S+\s+)?memory:\s*(" + _D + rb")GiB"
    rb"\((" + _D + rb")%\)\s+" + _TT_TAIL
)
# one pass finds the training step lines and the 'validate step:' lines (told apart by the word before 'step:');
# checkpoint saves and profiler dumps are found by their words; a restart shows as steps going back
TT_SCAN = re.compile(
    rb"step:\s*(\d+)\s+"
    + _A
    + rb"loss:\s*\S+\s+"
    + _A
    + rb"(?:grad_norm:\s*\S+\s+"
    + _A
    + rb")?memory:\s*("
    + _D
    + rb")GiB\(("
    + _D
    + rb")%\)\s+"
    + _A
    + _TT_TAIL
)
TT_RARE = (b"checkpoint",)
# with the profiler on ('Profiling active. Traces will be saved at ...', 'Memory profiler active. Snapshot will be
# saved at ...', profiling.py @57387af) its 'Dumping profiler traces' / 'Dumping memory snapshot' lines too
TT_RARE_PROFILING = TT_RARE + (b"Dumping ",)
TT_ARGS = re.compile(rb"Running with args: (\{.*\})")
TT_BUILD = re.compile(rb"Building (\S+) (\S+) with (\w+)\((.*)\)")
TT_TRAINER = re.compile(
    rb"local batch size (\d+), global batch size (-?\d+), gradient accumulation steps (\d+), "
    rb"sequence length (\d+)"
)
TT_STARTS = re.compile(
    rb"Training starts at step \d+, with local batch size (\d+), global batch size (-?\d+), "
    rb"sequence length (\d+)"
)
TT_MESH = re.compile(rb"Building (\d+)-D device mesh with \[([^\]]*)\], \[([^\]]*)\]")
TT_AC = re.compile(rb"Applied (\w+) activation checkpointing to the model")
TT_SHARD = re.compile(rb"Applied (FSDP|HSDP) to the model")
TT_QUANT = re.compile(
    rb"(Float8|MX) (?:tensorwise scaled )?training active(?: with recipe (\w+))?|Converted Linear layers to (\w+)Linear"
)
TT_PEAK = re.compile(rb"Peak FLOPS used for computing MFU: (" + _D + rb"e[+-]\d+)")
TT_NOPEAK = re.compile(rb"Peak flops undefined for: (.+?), fallback to A100")
# MaxText (AI-Hypercomputer/maxtext): one line per step, 'completed step: {step}, seconds: {s:.3f}, TFLOP/s/device:
# {t:.3f}, Tokens/s/device: {x:.3f}, ... loss: ...' (MaxText/train.py @cae41ec2, 2024-07-09, 'Adding Tokens/s/device
# to the log'; src/maxtext/common/metric_logger.py @e591f30c _log_training_metrics: the same fields, total_weights
# before the loss); before cae41ec2 without Tokens/s/device. A batch-size ramp-up step ('[Rampup Batch Size Phase]',
# no TFLOP/s or Tokens/s) and a profiler boundary step ('completed profiler activation/deactivation step: N') are
# not intervals. Start-up: 'Config param {k}: {v}' per config key (MaxText/pyconfig.py @cae41ec2; @e591f30c
# src/maxtext/configs/pyconfig.py logger.info('Config param %s: %s')) and 'Num_devices: {n}, shape {mesh.shape}'
# (MaxText/max_utils.py @cae41ec2 create_device_mesh).
MT_STEP = re.compile(
    rb"(?<!Phase\], )completed step: (\d+), seconds: (" + _D + rb"),(?: [^\n]*?TFLOP/s(?:/device)?: (" + _D + rb"),)?"
    rb"(?: Tokens/s/device: (" + _D + rb"),)?"
)
MT_CONFIG = re.compile(rb"Config param ([A-Za-z_][A-Za-z0-9_]*): ([^\n]*?)\s*$")
MT_DEVICES = re.compile(rb"Num_devices: (\d+), shape")
# Composer (mosaicml/composer, llm-foundry's trainer): ConsoleLogger.log_to_console prints a progress header
# '[batch={b}/{total}]:' ('[epoch={e}][batch={b}/{n}]:' for an epoch duration, '[{unit}={n}/{total}]:' otherwise) and
# then one '\n\t Train {name}: {value}' line per metric logged since (composer/loggers/console_logger.py @v0.16.4
# and @640518880; floats as f'{data:.4f}', loggers/logger.py format_log_data_value); SpeedMonitor logs
# 'throughput/batches_per_sec' (batches over its window / wall clock), then 'throughput/device/batches_per_sec'
# (over the world size), then 'throughput/device/tokens_per_sec' (callbacks/speed_monitor.py batch_end, the same
# at both versions). An eval header reads '[Eval batch=...] Eval on ...'.
CP_HEAD = re.compile(rb"(?<![\w=])(?:\[epoch=\d+\])?\[(batch|token|sample|ep|dur)=(\d+)(?:/\d+)?\]:\s*$")
# llm-foundry's train (scripts/train/train.py @v0.6.0 main; llmfoundry/command_utils/train.py @8c8dd48f train):
# log.info('Logging config') then log_config -> print(om.to_yaml(cfg)) (llmfoundry/utils/config_utils.py), the
# run's whole config as block YAML with no closing line: it ends at the first line that is not a key or a list item
CP_CONFIG = re.compile(rb"Logging config\s*$")
# (an indented line that is no key is a long plain scalar PyYAML folded onto the next line, _YamlReader.line)
CP_CONFIG_LINE = re.compile(r"^(?: *[A-Za-z_][\w.-]*:(?: .*)?| *- .*| +\S.*|\s*)$")
RANK_PREFIX = re.compile(rb"^\[(?:rank|default)\d+\]:")
# device_train_microbatch_size 'auto' (composer/trainer/trainer.py @v0.16.4 _adjust_device_train_microbatch_size):
# it starts at the per-device batch and halves on every CUDA OOM, warning each time
CP_MICRO_WORD = b"Train microbatch size will be decreased from"
CP_MICRO = re.compile(rb"Train microbatch size will be decreased from (\d+) -> (\d+)")
CP_METRIC = re.compile(
    rb"\sTrain (throughput/(?:device/)?(?:batches|tokens)_per_sec|time/batch): (-?" + _D + rb"(?:[eE][+-]?\d+)?)\s*$"
)
BANNER = re.compile(rb"^\s*== (.+?) ==\s*$")
BANNER_RELEASE = re.compile(rb"NVIDIA Release (\d+\.\d+(?:\.\d+)?) \(build")
ROCM_IMAGE = re.compile(rb"rocm/megatron-lm(?::([\w.\-]+))?")
AMD_DEVICE = re.compile(rb"AMD Instinct (MI\d+[A-Z]*)( VF)?")
TT_DEVICE = re.compile(rb"capacity: (.+?) with (" + _D + rb")GiB memory")
ERROR = re.compile(rb"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)): (\S.{0,300})")
KV = re.compile(r"(\w+)=('[^']*'|\"[^\"]*\"|[^,()\[\]{}]+)")

# Only lines holding one of these words are parsed (each block is searched once per word, in C); the set
# narrows to the framework's own words once the log's framework is known.
_COMMON = (b"Error", b"== ", b"NVIDIA Release ", b"AMD Instinct", b"rocm/megatron-lm")
_TT_WORDS = (
    b"step:",
    b"checkpoint",
    b"Running with args",
    b"device mesh with",
    b"Building ",
    b"Trainer is initialized",
    b"Training starts at",
    b"capacity: ",
    b"activation checkpointing to the model",
    b"to the model",
    b"Compiling each",
    b"training active",
    b"Converted Linear layers to",
    b"Peak FLOPS used",
    b"Peak flops undefined",
    b"Dumping profiler traces",
    b"Dumping memory snapshot",
    b"profiler active",
    b"Profiling active",
)
_MEG_WORDS = (
    b"-- arguments --",
    b"iteration",
    b"padded vocab",
    b"using world size",
    b"GPU utilization:",
    BRIDGE_HEAD,
    b"setting number of microbatches",
)
_MN_WORDS = (b"train_time:", b" NVIDIA ", b"Running ")
_SMI_WORDS = (b"(UUID: GPU-",)
_NG_WORDS = (
    b"iter ",
    b"tokens per iteration will be:",
    b"Overriding: ",
    b"block_size = ",
    b"train loss",
    b"saving checkpoint",
)
_OL_WORDS = (
    b"[step=",
    b"throughput/device/",
    b"Peak GPU Memory",
    b"gpu_memory/GPU ",
    b"TrainConfig(",
    b"checkpoint",
    b"[eval=",
    b"evals...",
)
_NT_WORDS = (b"iteration: ", b"mbs: ", b"Config(general=", b"Peak allocated ", b"checkpoint")
_NEMO_WORDS = (b"train_step_timing", b"Starting with ", b"-- arguments --", b"checkpoint", b"Validation: iteration")
_MT_WORDS = (b"completed step:", b"Config param ", b"Num_devices: ", b"checkpoint")
# DeepSpeed's own lines (ThroughputTimer, DeepSpeedConfig.print, the engine's version and optimizer lines)
_DS_WORDS = (
    b"stage=",
    b"SamplesPerSec=",
    b":print]  ",
    b"DeepSpeed info:",
    b"Creating ",
    b"CONFIG: micro_batches=",
    b"checkpoint",
)
# the Trainer's own lines (HF_*); a DeepSpeed log under the Trainer prints them too
_HF_WORDS = (
    HF_BANNER,
    b"Num examples = ",
    b"Num Epochs = ",
    b"Instantaneous batch size per device = ",
    b"Total train batch size (",
    b"Gradient Accumulation steps = ",
    b"Total optimization steps = ",
    b"Number of trainable parameters = ",
    b"adjusted to: ",
    b"'train_runtime': ",
    b"/it]",
    b"it/s]",
    b"Model config ",
    b"TrainingArguments(",
    b"Continuing training from global step",
)
_CP_WORDS = (
    b"[batch=",
    b"[epoch=",
    b"[token=",
    b"[sample=",
    b"[dur=",
    b"[ep=",
    b"Train throughput/",
    b"Train time/batch:",
    b"[Eval batch=",
    b"checkpoint",
    b"Logging config",
    CP_MICRO_WORD,
)
MARKS_ALL = tuple(
    dict.fromkeys(
        _MEG_WORDS
        + _TT_WORDS
        + _NEMO_WORDS
        + _MT_WORDS
        + _CP_WORDS
        + _DS_WORDS
        + _HF_WORDS
        + _NT_WORDS
        + _OL_WORDS
        + _NG_WORDS
        + _MN_WORDS
        + _SMI_WORDS
        + _COMMON
        + (b"Evaluating on", b"memory (")
    )
)
MARKS = {
    "megatron": _MEG_WORDS + _COMMON,
    "torchtitan": _TT_WORDS + _COMMON,
    "nemo": _NEMO_WORDS + _COMMON,
    "maxtext": _MT_WORDS + _COMMON,
    "composer": _CP_WORDS + _COMMON,
    "deepspeed": _DS_WORDS + _HF_WORDS + _MEG_WORDS + _COMMON,  # Megatron-DeepSpeed prints its iteration lines later
    "hf_trainer": _HF_WORDS + _DS_WORDS + _COMMON,
    "nanotron": _NT_WORDS + _COMMON,
    "olmo": _OL_WORDS + _COMMON,
    "nanogpt": _NG_WORDS + _COMMON,
    "modded-nanogpt": _MN_WORDS + _COMMON,
}
# once a log's intervals have begun, the start-up words (device, container, world size, errors of a run that never
# started) are no longer looked for: a block that leaves the fast path (colour codes) is searched for these only
MARKS_RUNNING = {
    "megatron": (b"-- arguments --", b"iteration", b"padded vocab", b"GPU utilization:", BRIDGE_HEAD),
    "torchtitan": _TT_WORDS,
    "nemo": _NEMO_WORDS,
    "maxtext": _MT_WORDS,
    "composer": _CP_WORDS,
    "deepspeed": _DS_WORDS + _HF_WORDS + (b"-- arguments --", b"iteration"),
    "hf_trainer": _HF_WORDS + _DS_WORDS,
    "nanotron": _NT_WORDS,
    "olmo": _OL_WORDS,
    "nanogpt": _NG_WORDS,
    "modded-nanogpt": (b"train_time:",),
}
ARG_LINE_M = re.compile(
    rb"^[^\n]*?\s(?:([A-Za-z_][A-Za-z0-9_]*) \.{1,48}|([A-Za-z_][A-Za-z0-9_]{47,}) ) ([^\n]*?)[ \t]*$", re.M
)

# lines that start an evaluation, a checkpoint save or a profiler dump: the interval logged next may include it
EVENT_WORDS = (
    b"validation loss at",
    b"saving checkpoint",
    b"saving the checkpoint",
    b"validate step:",
    b"evaluating on",
    b"save-checkpoint",
    b"dumping profiler traces",
    b"dumping memory snapshot",
    b"validation: iteration",
    b"[eval batch=",  # Composer's evaluation progress (console_logger.py _get_eval_progress_string)
    b"[eval=",  # OLMo-core's evaluator callback (train/callbacks/evaluator_callback.py: 'Running ... evals...',
    b"evals...",  # '[eval={name},step=...]'): the step logged after it includes the evaluation
)


@dataclass
class ParsedLog:
    """What a log states. `args`: the Megatron argument dump (raw strings) or torchtitan's flattened job
    config; `config`: Megatron-Bridge's printed ConfigContainer, flattened ('model.num_layers'); `iters` /
    `step_s` / `tflops` / `tps` / `mfu`: one entry per logged interval, in log order (NaN where not logged)."""

    framework: str = ""  # megatron | torchtitan | nemo | maxtext | composer | deepspeed | hf_trainer | nanotron | olmo
    args: dict[str, str] = field(default_factory=dict)
    config: dict[str, str] = field(default_factory=dict)  # Megatron-Bridge 'Task Configuration' YAML
    model_args: dict[str, str] = field(default_factory=dict)  # torchtitan 'Building ... with X(...)'
    model_name: str = ""
    iters: array = field(default_factory=lambda: array("q"))
    step_s: array = field(default_factory=lambda: array("d"))
    tflops: array = field(default_factory=lambda: array("d"))  # the framework's TFLOP/s per GPU
    tps: array = field(default_factory=lambda: array("d"))  # tokens/s/device (torchtitan tps, Megatron-DeepSpeed tgs)
    mfu: array = field(default_factory=lambda: array("d"))  # torchtitan's MFU, %
    sps: array = field(default_factory=lambda: array("d"))  # samples/s (DeepSpeed's CurrSamplesPerSec)
    event_after: array = field(default_factory=lambda: array("b"))  # 1: an eval/checkpoint/profiler dump preceded it
    starts: array = field(default_factory=lambda: array("b"))  # 1: first interval of a (re)start
    gbs_logged: set[int] = field(default_factory=set)
    seq_logged: set[int] = field(default_factory=set)  # Megatron-DeepSpeed's 'actual seqlen'
    mem_max_allocated: float = 0.0  # bytes, max over ranks and reports
    mem_max_reserved: float = 0.0
    mem_unit: str = ""
    mem_usage: float = 0.0  # ROCm fork 'mem usages': device memory in use / total, max over the intervals
    vocab_unpadded: int = 0
    vocab_padded: int = 0
    trainer: dict[str, int] = field(default_factory=dict)  # torchtitan trainer line
    trainer_line: str = ""  # which one: 'Trainer is initialized' | 'Training starts at'
    mesh: dict[str, int] = field(default_factory=dict)  # torchtitan device mesh: dim name -> degree (> 1 only)
    mesh_world: int = 0
    ac_mode: str = ""  # torchtitan 'Applied {mode} activation checkpointing to the model'
    shard_line: str = ""  # torchtitan 'Applied FSDP / HSDP to the model'
    compiled: bool = False  # torchtitan 'Compiling each TransformerBlock with torch.compile'
    quant: str = ""  # torchtitan 'float8 rowwise', 'float8 tensorwise', 'mx mxfp8', ...
    peak_flops_logged: float = 0.0  # torchtitan 'Peak FLOPS used for computing MFU'
    world_size: int = 0  # Megatron 'using world size: N', NeMo 'Starting with N processes'
    microbatches: int = 0  # Megatron-Core 'setting number of microbatches to constant N' (gbs / (mbs x dp))
    auto_microbatch: int = 0  # Composer's last 'Train microbatch size will be decreased from A -> B': B
    device_name: str = ""  # 'NVIDIA H100 80GB HBM3' (torchtitan capacity line), 'AMD Instinct MI300X'
    device_source: str = ""  # the line kind that named it
    container: str = ""  # NGC banner '== NeMo Framework ==' (the product name)
    container_release: str = ""  # ... 'NVIDIA Release 25.09 (build N)'
    rocm_image: str = ""  # 'rocm/megatron-lm:v25.5'
    ds_config: dict[str, str] = field(default_factory=dict)  # DeepSpeedConfig.print: attribute -> printed value
    ds_version: str = ""  # 'DeepSpeed info: version=0.14.0'
    ds_optimizer: str = ""  # the wrapper the engine logged it created: 'BF16 optimizer', 'bfloat16 ZeRO stage 2 ...'
    ds_zero_logged: int = -1  # the ZeRO stage of that line (-1: none logged)
    ds_per_micro_step: bool = False  # the pre-0.8 ThroughputTimer line: a rate per micro-step
    ds_running_average: bool = False  # the pre-0.7 ThroughputTimer line: the average rate since the start
    hf_banner: dict[str, int] = field(default_factory=dict)  # Trainer 'Running training' fields (name -> value)
    hf_metrics: dict[str, float] = field(default_factory=dict)  # the final train metrics dict
    hf_config: str = ""  # the last 'Model config X {...}' JSON (a Hugging Face config.json)
    hf_config_class: str = ""  # its class ('LlamaConfig')
    hf_args: dict[str, str] = field(default_factory=dict)  # TrainingArguments(...) fields, raw
    hf_bar: bool = False  # the intervals are the Trainer's progress-bar frames (else its one train metrics dict)
    hf_resumed_at: int = 0  # 'Continuing training from global step N'
    ds_pipeline: bool = False  # DeepSpeed's PipelineEngine ran ('CONFIG: micro_batches=')
    ds_stages: int = 0  # its pipeline stages: PipelineModule's 'stage=N layers=M' lines
    nt_config: dict[str, str] = field(default_factory=dict)  # nanotron's pformat(Config): key -> raw value (first)
    nt_start: dict[str, str] = field(default_factory=dict)  # nanotron's 'mbs: .. | grad_accum: .. | ...' start line
    nt_fields: set[str] = field(default_factory=set)  # the tags its interval lines carry
    ol_config: dict[str, str] = field(default_factory=dict)  # OLMo's TrainConfig repr: key -> raw value (first)
    ol_core: bool = False  # OLMo-core's metric names (TPS / BPS) rather than OLMo's
    mn_gpus: int = 0  # modded-nanogpt: the GPUs of its nvidia-smi table or its 'with world_size N' line
    ng_tokens: int = 0  # nanoGPT's 'tokens per iteration will be: N'
    ng_overrides: dict[str, str] = field(default_factory=dict)  # its 'Overriding: key = value' lines
    error: str = ""  # the first 'XError: message' line
    failed: bool = False  # torchrun's ChildFailedError summary
    lines: int = 0
    cut_lines: int = 0
    last_line_cut: bool = False  # the file does not end with a line end (cut while written)
    dumps: int = 0  # argument dumps seen (a restart prints another)
    last_dump_at: int = 0  # intervals logged before the last argument dump (an earlier start)
    gzip: bool = False
    gzip_truncated: bool = False


def software_label(log: ParsedLog) -> str:
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


def _opt(b: bytes | None) -> float:
    return _f(b) if b else NAN


class _YamlReader:
    """The block YAML `yaml.safe_dump(default_flow_style=False)` writes (Megatron-Bridge print_yaml), read line
    by line into dotted keys: nested maps by indentation, a block list ('- item' lines) as a Python-literal list,
    scalars as Python would print them (null -> None, true -> True); a quoted scalar continued on further lines
    (PyYAML folds long strings) is skipped to its closing quote, a folded plain scalar's further lines (indented
    past its key) with it. Anything else is ignored."""

    KEY = re.compile(r"^( *)([^\s:#'\"-][^:]*?|'[^']*'):(?: (.*))?$")
    ITEM = re.compile(r"^( *)- (.*)$")

    def __init__(self, out: dict[str, str]) -> None:
        self.out = out
        self.stack: list[tuple[int, str]] = []
        self.lists: dict[str, list[str]] = {}
        self.quote = ""  # inside a multi-line quoted scalar: its quote character
        self.scalar_indent = -1  # indentation of the last key with a value on its line (-1: none)

    @staticmethod
    def scalar(v: str) -> str:
        v = v.strip()
        if v[:1] in ("'", '"') and v[-1:] == v[:1] and len(v) > 1:
            return v[1:-1].replace("''", "'") if v[0] == "'" else v[1:-1]
        return {"null": "None", "~": "None", "true": "True", "false": "False"}.get(v, v)

    def line(self, text: str) -> None:
        if self.quote:
            if text.rstrip().endswith(self.quote):
                self.quote = ""
            return
        ind = len(text) - len(text.lstrip(" "))
        if 0 <= self.scalar_indent < ind and text.strip():  # a plain scalar PyYAML folded past 80 columns
            return
        m = self.ITEM.match(text)
        if m:
            ind = len(m.group(1))
            path = [k for i, k in self.stack if i <= ind]
            if path:
                self.lists.setdefault(".".join(path), []).append(self.scalar(m.group(2)))
            return
        m = self.KEY.match(text)
        if not m:
            return
        ind, key, val = len(m.group(1)), self.scalar(m.group(2)), m.group(3)
        while self.stack and self.stack[-1][0] >= ind:
            self.stack.pop()
        path = ".".join([k for _, k in self.stack] + [key])
        if val is None or val.strip() == "":
            self.stack.append((ind, key))
            self.scalar_indent = -1
            return
        self.scalar_indent = ind
        v = val.strip()
        if v[:1] in ("'", '"') and (len(v) == 1 or v[-1] != v[0]):
            self.quote = v[0]  # continued on the next lines
        self.out[path] = self.scalar(v)

    def close(self) -> None:
        for k, items in self.lists.items():
            self.out[k] = repr(items)
        self.lists = {}


class _Parser:
    """State of one pass over a log (kept small: no line is stored)."""

    def __init__(self) -> None:
        self.log = ParsedLog()
        self.in_dump = False
        self.yaml: _YamlReader | None = None
        self.yaml_prefix = b""
        self.yaml_lines = 0
        self.yaml_open = False  # a config with no closing line (llm-foundry's): it ends at a non-YAML line
        self.recent: deque[int] = deque(maxlen=DEDUP_WINDOW)
        self.recent_set: set[int] = set()
        self.pending_event = False
        self.mds = True  # the interval lines may hold Megatron-DeepSpeed's fields (False once a line has none)
        self.pending_tflops = NAN  # Megatron-Bridge 'Step Time ... GPU utilization' before its iteration line
        self.pending = False
        self.bridge = False  # a Megatron-Bridge log: its own lines are looked for on the fast path too
        self.profiling = False  # torchtitan's profiler is on: its dump lines are looked for on the fast path too
        self.new_start = True
        self.last_iter = -1
        self.cp_iter, self.cp_rate, self.cp_dev_rate = -1, NAN, NAN  # Composer: the interval being printed
        self.cp_tokens = NAN  # its throughput/tokens_per_sec (all ranks)
        self.capture: tuple[str, list[str]] | None = None  # an HF config JSON or TrainingArguments dump being read
        self.capture_prefix = b""  # the launcher's prefix of its head line, stripped from its continuation lines
        self.nt_depth = 0  # nanotron: open parentheses of the Config being read
        self.ol_iter = -1  # OLMo: the step whose metric lines are being read
        self.mn_prev: tuple[int, float] | None = None  # modded-nanogpt: the last (step, train_time s) line
        self.mn_smi: set[int] = set()  # the GPU indices of its first nvidia-smi table
        self.ol_vals: dict[bytes, float] = {}
        self.ol_event = False  # an evaluation / checkpoint line came before the step being read
        L = self.log  # the per-interval arrays are appended to, never replaced
        self.appends = (
            L.iters.append,
            L.step_s.append,
            L.tflops.append,
            L.tps.append,
            L.mfu.append,
            L.sps.append,
            L.event_after.append,
            L.starts.append,
        )
        self.handlers: tuple[tuple[bytes, Callable[[bytes], bool]], ...] = (
            (b"elapsed time per iteration", self._meg_iter),
            (b"completed step:", self._mt_step),
            (b"Config param ", self._mt_config),
            (b"Num_devices: ", self._mt_devices),
            (b"Train throughput/", self._cp_metric),
            (b"Train time/batch:", self._cp_metric),
            (b"Logging config", self._cp_config),
            (CP_MICRO_WORD, self._cp_micro),
            (b"]:", self._cp_head),
            (ARG_HEAD, self._arg_head),
            (b"step:", self._tt_step),
            (b"Training epoch", self._nemo_print),
            (b"train_step_timing", self._nemo_bar),
            (b"GPU utilization:", self._bridge_step),
            (BRIDGE_HEAD, self._bridge_head),
            (b"memory (", self._memory),
            (b"padded vocab", self._vocab),
            (b"using world size", self._world),
            (b"setting number of microbatches", self._micro),
            (b"Starting with ", self._nemo_world),
            (b"Running with args:", self._tt_args),
            (b"Building ", self._tt_building),
            (b"== ", self._banner),
            (b"NVIDIA Release ", self._banner_release),
            (b"capacity: ", self._tt_device),
            (b"AMD Instinct", self._amd_device),
            (b"rocm/megatron-lm", self._rocm_image),
            (b"Trainer is initialized", self._tt_trainer),
            (b"Training starts at", self._tt_starts),
            (b" to the model", self._tt_applied),
            (b"Compiling each TransformerBlock", self._tt_compile),
            (b"training active", self._tt_quant),
            (b"Converted Linear layers to", self._tt_quant),
            (b"Peak FLOPS used", self._tt_peak),
            (b"Peak flops undefined", self._tt_nopeak),
            (b"rofil", self._tt_profiling),
            (b"SamplesPerSec=", self._ds_tput),
            (HF_BANNER, self._hf_banner),
            (b"  ", self._hf_field),
            (b"'train_runtime': ", self._hf_metrics),
            (b"/it]", self._hf_bar),
            (b"it/s]", self._hf_bar),
            (b"Model config ", self._hf_config_head),
            (b"CONFIG: micro_batches=", self._ds_pipe),
            (b"stage=", self._ds_stage),
            (b"Continuing training from global step", self._hf_resumed),
            (b"TrainingArguments(", self._hf_args_head),
            (b":print]  ", self._ds_config),
            (b"DeepSpeed info:", self._ds_version),
            (b"Creating ", self._ds_optimizer),
            (b"train_time:", self._mn_step),
            (b"(UUID: GPU-", self._smi_list),
            (b" NVIDIA ", self._mn_smi),
            (b"Running ", self._mn_running),
            (b"iter ", self._ng_iter),
            (b"tokens per iteration will be:", self._ng_tokens),
            (b"Overriding: ", self._ng_override),
            (b"train loss", self._ng_eval),
            (b"block_size = ", self._ng_block),
            (b"[step=", self._ol_head),
            (b"throughput/device/", self._ol_metric),
            (b"Peak GPU Memory", self._ol_metric),
            (b"gpu_memory/GPU ", self._ol_metric),
            (b"TrainConfig(", self._ol_config),
            (b"iteration: ", self._nt_iter),
            (b"mbs: ", self._nt_start),
            (b"Config(general=", self._nt_config_head),
            (b"Peak allocated ", self._nt_memory),
            (b"Error", self._error),
        )

    def finish(self) -> None:
        """The end of the log: a Bridge config still open (its closing line never came) is kept as read."""
        if self.yaml is not None:
            self.yaml.close()
            self.yaml = None
        if self.capture is not None and self.capture[0] == "nanotron":  # a Config cut at the end: what was read
            self._nt_captured(self.capture[1])
        self.capture = None  # an HF config or argument dump cut before its closing line is not read
        self.pending_event = False  # an evaluation after the last metric block belongs to a step never logged
        self._ol_flush()

    def _restart(self) -> None:
        """A new start (a new argument dump): its iteration numbers may repeat the earlier ones."""
        self.new_start = True
        self.recent.clear()
        self.recent_set.clear()
        self.last_iter = -1

    def _interval(self, it: int, step: float, tflops: float, tps: float, mfu: float = NAN, sps: float = NAN) -> None:
        if it >= 2**62:  # an iteration number no run reaches (a corrupted line) is not an interval
            return
        recent_set = self.recent_set
        if it in recent_set:  # the same interval from another rank (or a repeated print)
            return
        recent = self.recent
        if len(recent) == DEDUP_WINDOW:
            recent_set.discard(recent[0])
        recent.append(it)
        recent_set.add(it)
        if it < self.last_iter:  # iterations went back: a resumed job appended to the log
            self.new_start = True
        self.last_iter = it
        if self.pending:  # Bridge's 'Step Time ... GPU utilization' line came before this iteration line
            if tflops != tflops:
                tflops = self.pending_tflops
            self.pending = False
        a_it, a_step, a_tf, a_tps, a_mfu, a_sps, a_ev, a_st = self.appends
        a_it(it)
        a_step(step)
        a_tf(tflops)
        a_tps(tps)
        a_mfu(mfu)
        a_sps(sps)
        a_ev(1 if self.pending_event else 0)
        a_st(1 if self.new_start else 0)
        self.pending_event = self.new_start = False

    def block(self, data: bytes) -> None:
        """Parse a block of whole lines: only lines holding a marker word are looked at, plus the
        argument dump's and the Bridge config's lines."""
        L = self.log
        L.lines += data.count(b"\n")
        if L.iters and L.framework == "megatron" and b"\x1b" not in data and not self.yaml and not self.in_dump:
            return self._block_megatron(data)
        if L.iters and L.framework == "torchtitan":
            return self._block_torchtitan(data)
        starts: set[int] = set()
        for mark in (MARKS_RUNNING if L.iters else MARKS).get(L.framework, MARKS_ALL):
            p = data.find(mark)
            while p >= 0:
                starts.add(data.rfind(b"\n", 0, p) + 1)
                e = data.find(b"\n", p)
                p = data.find(mark, e) if e >= 0 else -1
        pos = self._continue(data, 0)
        for s in sorted(starts):
            if s < pos:
                continue
            e = data.find(b"\n", s)
            e = len(data) if e < 0 else e
            self.line(data[s : min(e, s + MAX_LINE)])
            pos = self._continue(data, e)

    def _continue(self, data: bytes, pos: int) -> int:
        """Inside an argument dump or a Bridge config: read its lines from `pos`; returns where scanning resumes."""
        if self.in_dump:
            return self._dump(data, pos)
        if self.yaml is not None:
            return self._yaml(data, pos)
        if self.capture is not None:
            return self._capture(data, pos)
        return pos

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
        dump, the vocabulary padding, Bridge's step-time line) are found by their words and parsed in order."""
        rare = sorted(p for mark in (BRIDGE_RARE if self.bridge else MEG_RARE) for p in _all(data, mark))
        ri = 0
        gbs_seen: set[bytes] = set()
        pos = 0
        while True:
            m = MEG_SCAN.search(data, pos)
            if m is None:
                break
            p = m.start()
            while ri < len(rare) and rare[ri] < p:
                if rare[ri] >= pos:
                    pos = self._continue(data, self._line_at(data, rare[ri]))
                ri += 1
            if p < pos:
                continue
            it, unit, t, mem, tf, g = m.groups()
            if it is None:
                pos = self._continue(data, self._line_at(data, p))
                continue
            if g and g not in gbs_seen:
                gbs_seen.add(g)
                self.log.gbs_logged.add(int(g))
            if mem:
                self.log.mem_usage = max(self.log.mem_usage, float(mem))
            e = data.find(b"\n", m.end())  # the rest of an interval line names iterations again
            pos = len(data) if e < 0 else e
            tf_, tps = self._mds_fields(data, m.start(), pos, tf) if self.mds else (float(tf) if tf else NAN, NAN)
            self._interval(int(it), _seconds(t, unit), tf_, tps)
        for r in rare[ri:]:
            if r >= pos:
                pos = self._continue(data, self._line_at(data, r))

    def _block_torchtitan(self, data: bytes) -> None:
        """The fast path of a torchtitan log once its intervals began: one regex pass over the step
        lines (colour codes included); checkpoint, profiler, validation and restart lines found by their words."""
        L = self.log
        rare = sorted(p for mark in (TT_RARE_PROFILING if self.profiling else TT_RARE) for p in _all(data, mark))
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
            step, gib, _, tps, tflops, mfu = m.groups()
            if tflops is None and data[max(0, p - 9) : p] == b"validate ":  # validation: no tflops / mfu
                self.pending_event = True
                continue
            g = float(gib)
            if g > mem:  # max over ranks
                mem = g
            it = int(step)
            if it in recent:  # the same step printed by another rank
                continue
            self._interval(
                it,
                NAN,
                float(tflops.replace(b",", b"")) if tflops else NAN,
                float(tps.replace(b",", b"")),
                float(mfu) if mfu else NAN,
            )
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
            self.log.args[(m.group(1) or m.group(2)).decode()] = _text(m.group(3))
        if end < 0:
            return len(data)
        self.in_dump = False
        e = data.find(b"\n", end)
        return len(data) if e < 0 else e

    def _yaml(self, data: bytes, start: int) -> int:
        """Megatron-Bridge config lines from `start` to its closing line of 34 '-' (or the block's end)."""
        reader = self.yaml
        assert reader is not None
        pos = start + 1 if start < len(data) and data[start : start + 1] == b"\n" else start
        pre = self.yaml_prefix
        while pos < len(data):
            e = data.find(b"\n", pos)
            e = len(data) if e < 0 else e
            raw = data[pos:e]
            if b"\x1b" in raw:
                raw = ANSI.sub(b"", raw)
            if pre and raw.startswith(pre):
                raw = raw[len(pre) :]
            elif pre and RANK_PREFIX.match(raw):  # another rank's line between the config's (torchrun --tee)
                pos = e + 1
                continue
            self.yaml_lines += 1
            text = raw.decode("utf-8", errors="replace").rstrip()
            if self.yaml_open and not CP_CONFIG_LINE.match(text) and not reader.quote:
                reader.close()
                self.yaml, self.yaml_open = None, False
                return pos  # the line after the config is read as any other
            if raw.rstrip() == BRIDGE_END or self.yaml_lines > MAX_CONFIG_LINES:
                reader.close()
                self.yaml = None
                return e
            reader.line(text)
            pos = e + 1
        return len(data)

    def _capture(self, data: bytes, start: int) -> int:
        """The lines of an HF config JSON (to a '}' alone on a line) or a TrainingArguments dump (to a ')')."""
        assert self.capture is not None
        kind, lines = self.capture
        if kind == "nanotron":
            return self._nt_capture(data, start, lines)
        end = "}" if kind == "config" else ")"
        pre = self.capture_prefix
        pos = start + 1 if start < len(data) and data[start : start + 1] == b"\n" else start
        while pos < len(data):
            e = data.find(b"\n", pos)
            e = len(data) if e < 0 else e
            raw = data[pos:e]
            if pre and raw.startswith(pre):
                raw = raw[len(pre) :]
            text = raw.decode("utf-8", errors="replace").rstrip()
            if text == end:
                self._captured(kind, lines, closed=True)
                return e
            # a JSON body line is indented (to_json_string indent=2), an argument line is 'name=value,': any other
            # line (the dump was cut, another rank's line) ends the capture and is read as any other line
            cont = bool((HF_JSON_LINE if kind == "config" else HF_ARG).match(text))
            if not cont or len(lines) > MAX_HF_LINES:
                self._captured(kind, lines, closed=False)
                return pos
            lines.append(text)
            pos = e + 1
        return len(data)

    def _captured(self, kind: str, lines: list[str], closed: bool) -> None:
        self.capture = None
        L = self.log
        if not closed:
            return
        if kind == "config":
            L.hf_config = "{" + "\n".join(lines) + "}"
            return
        out: dict[str, str] = {}
        for t in lines:
            m = HF_ARG.match(t)
            if m:
                out[m.group(1)] = m.group(2)
        L.hf_args = out

    def line(self, raw: bytes) -> None:
        if b"\x1b" in raw:
            raw = ANSI.sub(b"", raw)
        for mark, handler in self.handlers:
            try:
                if mark in raw and handler(raw):
                    return
            except (ValueError, OverflowError):  # a number no log prints (thousands of digits): the line is not read
                return
        low = raw.lower()
        if any(w in low for w in EVENT_WORDS):
            self.pending_event = True

    # ---- one handler per line kind: True when the line was that kind ----------------------------------

    def _meg_iter(self, raw: bytes) -> bool:
        m = MEG_ITER.search(raw)
        if not m:
            return False
        L = self.log
        if L.framework == "deepspeed":  # Megatron-DeepSpeed: its iteration lines, not the ThroughputTimer's
            self._drop_intervals()
            L.framework = "megatron"
        L.framework = L.framework or "megatron"
        it, unit, t, mem, tf, g = m.groups()
        if g:
            L.gbs_logged.add(int(g))
        if mem:
            L.mem_usage = max(L.mem_usage, float(mem))
        tf_, tps = self._mds_fields(raw, m.start(), len(raw), tf)
        self._interval(int(it), _seconds(t, unit), tf_, tps)
        return True

    def _mds_fields(self, data: bytes, start: int, end: int, tf: bytes | None) -> tuple[float, float]:
        """(TFLOP/s per GPU, tokens/s per GPU) of an interval line: Megatron-LM's own TFLOP/s field, else
        Megatron-DeepSpeed's 'TFLOPs'; its 'tgs'; its 'actual seqlen' into seq_logged (MDS_FIELD)."""
        tflops, tps = (float(tf) if tf else NAN), NAN
        if not self.mds:
            return tflops, tps
        if (
            data.find(b"TFLOPs:", start, end) < 0
            and data.find(b"seqlen:", start, end) < 0
            and data.find(b"(tgs)", start, end) < 0
        ):
            self.mds = False  # Megatron-LM's own line: a log prints one format
            return tflops, tps
        for k, v in MDS_FIELD.findall(data, start, end):
            if k == b"actual seqlen":
                if len(v) < 12:  # a number of digits no sequence has is not read
                    self.log.seq_logged.add(int(float(v)))
            elif k == b"TFLOPs":
                tflops = float(v) if tflops != tflops else tflops
            else:
                tps = float(v)
        return tflops, tps

    def _ds_tput(self, raw: bytes) -> bool:
        """DeepSpeed's ThroughputTimer line (DS_TPUT): an interval of a plain DeepSpeed log; in a Megatron-DeepSpeed
        log (its iteration lines, or its argument dump, came first) the iteration lines are the intervals."""
        m = DS_TPUT.search(raw)
        if not m:
            return False
        L = self.log
        if L.framework == "hf_trainer":  # DeepSpeed under the Trainer: its per-step rates are the intervals
            self._drop_intervals()
            L.framework = ""
        if L.framework not in ("", "deepspeed"):
            return True
        L.framework = "deepspeed"
        gstep, curr, avg, peak = m.groups()
        if gstep is None:  # before v0.8: the epoch's micro-step, reset every epoch: intervals counted in order
            L.ds_per_micro_step = True
            it = self.last_iter + 1
        else:
            it = int(gstep)
        if curr is None:  # v0.3-v0.6: only the running average is logged
            L.ds_running_average = True
        if peak:
            L.mem_max_allocated = max(L.mem_max_allocated, float(peak) * 2**30)
            L.mem_unit = L.mem_unit or "GiB"
        self._interval(it, NAN, NAN, NAN, NAN, _f(curr or avg))
        return True

    def _drop_intervals(self) -> None:
        L = self.log
        for a in (L.iters, L.step_s, L.tflops, L.tps, L.mfu, L.sps, L.event_after, L.starts):
            del a[:]
        L.mem_max_allocated, L.mem_unit = 0.0, ""
        self.recent.clear()
        self.recent_set.clear()
        self.last_iter, self.new_start = -1, True

    def _ds_config(self, raw: bytes) -> bool:
        m = DS_CONFIG.search(raw)
        if not m:
            return False
        key = m.group(1).decode()
        L = self.log
        if key == "activation_checkpointing_config" and key in L.ds_config:  # the first key of the sorted dump, again:
            L.ds_config = {}  # a second engine's (a restart's) dump holds
        L.ds_config[key] = _text(m.group(2))
        return True

    def _ds_version(self, raw: bytes) -> bool:
        m = DS_VERSION.search(raw)
        if m:
            self.log.ds_version = _text(m.group(1))
        return bool(m)

    def _ds_optimizer(self, raw: bytes) -> bool:
        m = DS_OPTIMIZER.search(raw)
        if not m:
            return False
        L = self.log
        L.ds_optimizer = _text(m.group(1))
        L.ds_zero_logged = int(m.group(3)) if m.group(3) else -1
        return True

    def _hf_banner(self, raw: bytes) -> bool:
        """The banner (accelerate's example scripts print one too; the Trainer's adds 'Number of trainable
        parameters', which names the framework)."""
        L = self.log
        L.hf_banner = {}  # a restart prints it again: the later one holds
        if L.framework == "hf_trainer":
            self._restart()
        return True

    def _hf_field(self, raw: bytes) -> bool:
        m = HF_FIELD.search(raw)
        if not m:
            return False
        name = _text(m.group(1)) if m.group(1) else "DataParallel batch"
        v = (m.group(2) or m.group(3)).replace(b",", b"")
        if len(v) < 16:  # a count no run has (a corrupted line) is not read
            self.log.hf_banner[name] = int(v)
        if name == "Number of trainable parameters" and not self.log.framework:
            self.log.framework = "hf_trainer"
        return True

    def _hf_metrics(self, raw: bytes) -> bool:
        m = HF_METRICS.search(raw)
        if not m:
            return False
        d = _literal(m.group(0))
        if not isinstance(d, dict):
            return True
        L = self.log
        L.hf_metrics = {str(k): _finite(v) for k, v in d.items() if isinstance(v, (int, float)) and _finite(v) >= 0}
        L.framework = L.framework or "hf_trainer"
        sps = L.hf_metrics.get("train_samples_per_second", NAN)
        if L.framework == "hf_trainer" and not L.hf_bar:  # no bar read: the average over train_runtime
            steps = L.hf_banner.get("Total optimization steps", 0)
            self._interval(steps if 0 < steps < 2**62 else self.last_iter + 1, NAN, NAN, NAN, NAN, sps)
        return True

    def _hf_bar(self, raw: bytes) -> bool:
        """A frame of the training bar: its total is the banner's optimization steps (an evaluation, data-map or
        checkpoint-loading bar has its own); the step time the frame's smoothed rate."""
        L = self.log
        if L.framework != "hf_trainer":
            return False
        m = HF_TQDM.search(raw)
        steps = L.hf_banner.get("Total optimization steps")
        if not m or not steps or int(m.group(2)) != steps:
            return False
        n, rate = int(m.group(1)), float(m.group(3))
        if n < 1 or rate <= 0 or n <= self.last_iter:
            return True
        L.hf_bar = True
        self._interval(n, rate if m.group(4) == b"s/it" else 1.0 / rate, NAN, NAN)
        return True

    def _hf_config_head(self, raw: bytes) -> bool:
        m = HF_CONFIG_HEAD.search(raw)
        if not m or self.capture is not None:
            return False
        self.log.hf_config_class = _text(m.group(1))
        self.capture = ("config", [])
        p = LINE_PREFIX.match(raw)
        self.capture_prefix = p.group(0) if p else b""
        return True

    def _hf_args_head(self, raw: bytes) -> bool:
        if not HF_ARGS_HEAD.search(raw) or self.capture is not None:
            return False
        self.capture = ("args", [])
        p = LINE_PREFIX.match(raw)
        self.capture_prefix = p.group(0) if p else b""
        return True

    # ---- modded-nanogpt (module docstring) ----

    def _mn_step(self, raw: bytes) -> bool:
        m = MN_STEP.search(raw)
        if not m or self.log.framework not in ("", "modded-nanogpt"):
            return False
        self.log.framework = "modded-nanogpt"
        step, t = int(m.group(1)), float(m.group(2)) / (1e3 if m.group(3) == b"ms" else 1.0)
        prev, self.mn_prev = self.mn_prev, (step, t)
        if prev is not None and step > prev[0] and t > prev[1]:  # (the timer restarts after the warm-up steps)
            self._interval(step, (t - prev[1]) / (step - prev[0]), NAN, NAN)
        return True

    def _mn_smi(self, raw: bytes) -> bool:
        m = MN_SMI.search(raw)
        if not m or self.log.framework not in ("", "modded-nanogpt") or self.log.iters:
            return False
        idx = int(m.group(1))
        if idx in self.mn_smi:  # a second table (printed again at the end): not more GPUs
            return True
        self.mn_smi.add(idx)
        L = self.log
        L.mn_gpus = max(L.mn_gpus, len(self.mn_smi))
        if not L.device_name:
            L.device_name, L.device_source = _text(m.group(2)), "nvidia-smi table"
        return True

    def _smi_list(self, raw: bytes) -> bool:
        """`nvidia-smi -L` before the first interval: the log's device where no other line named one."""
        m = SMI_LIST.search(raw)
        if not m or self.log.iters:
            return False
        L = self.log
        if not L.device_name:
            L.device_name, L.device_source = _text(m.group(2)), "nvidia-smi -L line"
        return True

    def _mn_running(self, raw: bytes) -> bool:
        m = MN_RUNNING.search(raw)
        if not m or self.log.framework not in ("", "modded-nanogpt"):
            return False
        L = self.log
        L.device_name, L.device_source = _text(m.group(1)), "'Running PyTorch ... on ...' line"
        L.mn_gpus = int(m.group(2))
        return True

    # ---- nanoGPT (module docstring) ----

    def _ng_iter(self, raw: bytes) -> bool:
        m = NG_ITER.search(raw)
        if not m or self.log.framework not in ("", "nanogpt"):
            return False
        self.log.framework = "nanogpt"
        mfu = float(m.group(3))
        self._interval(int(m.group(1)), float(m.group(2)) / 1e3, NAN, NAN, mfu if mfu >= 0 else NAN)
        return True

    def _ng_tokens(self, raw: bytes) -> bool:
        m = NG_TOKENS.search(raw)
        if not m or self.log.framework not in ("", "nanogpt"):
            return False
        self.log.framework = "nanogpt"
        self.log.ng_tokens = int(m.group(1).replace(b",", b""))
        self._restart()  # printed once per start, before the model is built
        return True

    def _ng_override(self, raw: bytes) -> bool:
        m = NG_OVERRIDE.search(raw)
        if not m or self.log.framework not in ("", "nanogpt"):
            return False
        self.log.ng_overrides[_text(m.group(1))] = _text(m.group(2))
        return True

    def _ng_block(self, raw: bytes) -> bool:
        """A config file's 'block_size = N' (configurator.py prints the file, then exec's it: the last one wins)."""
        m = NG_BLOCK.search(raw)
        if not m or self.log.framework not in ("", "nanogpt"):
            return False
        self.log.ng_overrides["block_size"] = _text(m.group(1)) if m.group(1) else "?"  # "?": set, not read
        return True

    def _ng_eval(self, raw: bytes) -> bool:
        if self.log.framework != "nanogpt" or not NG_EVAL.search(raw):
            return False
        self.pending_event = True  # the next iteration's time includes the evaluation
        return True

    # ---- OLMo / OLMo-core (module docstring) ----

    def _ol_head(self, raw: bytes) -> bool:
        m = OL_HEAD.search(raw)
        if not m or self.log.framework not in ("", "olmo"):
            return False
        # an evaluation or checkpoint line printed since the last block ran inside the step whose metrics follow
        # (OLMo-core's callbacks run before the console logger): its flag goes to this step, not the last one
        event, self.pending_event = self.pending_event, False
        self._ol_flush()
        self.ol_event = event
        self.ol_iter = int(m.group(1))
        return True

    def _ol_metric(self, raw: bytes) -> bool:
        m = OL_METRIC.search(raw)
        if not m or self.ol_iter < 0:
            return False
        try:
            v = (
                float(m.group(2).replace(b",", b""))
                * {b"": 1.0, b"B": 1e9, b"T": 1e12, b"P": 1e15, b"E": 1e18}[m.group(3)]
            )
        except (ValueError, OverflowError):
            v = NAN
        name, L = m.group(1), self.log
        if name == b"System/Peak GPU Memory (MB)":
            if math.isfinite(v) and v > 0:
                L.mem_max_allocated, L.mem_unit = max(L.mem_max_allocated, v * 1e6), L.mem_unit or "MB"
        elif name.startswith(b"gpu_memory/"):
            attr = "mem_max_reserved" if b"reserved" in name else "mem_max_allocated"
            if math.isfinite(v) and v > 0:
                setattr(L, attr, max(getattr(L, attr), v * 2**30))
                L.mem_unit = L.mem_unit or "GiB"
        else:
            self.ol_vals[name.rsplit(b"/", 1)[1]] = v
        return True

    def _ol_flush(self) -> None:
        """The interval of the step whose metrics were read: step = 1 / batches per second, tokens/s per device."""
        vals, it, event = self.ol_vals, self.ol_iter, self.ol_event
        self.ol_vals, self.ol_iter, self.ol_event = {}, -1, False
        tps = vals.get(b"tokens_per_second", vals.get(b"TPS", NAN))
        bps = vals.get(b"batches_per_second", vals.get(b"BPS", NAN))
        if it < 0 or not (tps == tps or bps == bps):
            return
        L = self.log
        L.framework = "olmo"
        L.ol_core = L.ol_core or b"TPS" in vals or b"BPS" in vals
        self.pending_event = self.pending_event or event
        self._interval(it, 1.0 / bps if bps > 0 else NAN, NAN, tps, vals.get(b"MFU", NAN))

    def _ol_config(self, raw: bytes) -> bool:
        m = OL_CONFIG.search(raw)
        if not m or self.log.framework not in ("", "olmo"):
            return False
        text = NT_QUOTED.sub("''", m.group(1).decode("utf-8", errors="replace"))  # a name holding 'k=v' is no key
        out = self.log.ol_config
        out.clear()
        for k, v in NT_KV.findall(text):
            out.setdefault(k, v)
        return True

    # ---- nanotron (module docstring) ----

    def _nt_iter(self, raw: bytes) -> bool:
        m = NT_ITER.search(raw)
        if not m or self.log.framework not in ("", "nanotron"):
            return False
        fields = {k: v for k, v in NT_FIELD.findall(m.group(2))}
        t = fields.get(b"elapsed_time_per_iteration_ms", fields.get(b"time_per_iteration_ms"))
        if t is None:
            return False
        L = self.log
        L.framework = "nanotron"
        L.nt_fields.update(_text(k) for k in fields)
        ms = _human(t)
        self._interval(
            int(m.group(1)),
            ms / 1e3,
            _human(fields.get(b"model_tflops_per_gpu", b"nan")),
            _human(fields.get(b"tokens_per_sec_per_gpu", b"nan")),
        )
        return True

    def _nt_start(self, raw: bytes) -> bool:
        m = NT_START.search(raw)
        if not m or self.log.framework not in ("", "nanotron"):
            return False
        L = self.log
        L.framework = "nanotron"
        out = {"mbs": _text(m.group(1)), "grad_accum": _text(m.group(2))}
        out.update((_text(k), _text(v)) for k, v in NT_FIELD.findall(m.group(3)))
        L.nt_start = out
        self._restart()
        return True

    def _nt_config_head(self, raw: bytes) -> bool:
        m = NT_CONFIG_HEAD.search(raw)
        if not m or self.capture is not None or self.log.framework not in ("", "nanotron"):
            return False
        self.log.framework = "nanotron"
        head = _text(raw[m.start() :])
        self.capture = ("nanotron", [head])
        self.nt_depth = _nt_depth(head)
        if self.nt_depth <= 0:  # the whole repr on one line
            self._nt_captured(self.capture[1])
        return True

    def _nt_capture(self, data: bytes, start: int, lines: list[str]) -> int:
        """pformat's continuation lines of a nanotron Config (indented after the formatter's prefix), to the closing
        parenthesis; a line that is not (the dump was cut, or another record) ends it, keeping what was read."""
        pos = start + 1 if start < len(data) and data[start : start + 1] == b"\n" else start
        while pos < len(data):
            e = data.find(b"\n", pos)
            e = len(data) if e < 0 else e
            raw = data[pos : min(e, pos + MAX_LINE)]
            p = NT_PREFIX.match(raw)
            text = raw[p.end() if p else 0 :].decode("utf-8", errors="replace").rstrip()
            if not text.startswith(" ") or len(lines) > MAX_NT_LINES:
                self._nt_captured(lines)
                return pos
            lines.append(text)
            pos = e + 1
            self.nt_depth += _nt_depth(text)  # pformat never breaks a quoted string over lines
            if self.nt_depth <= 0:
                self._nt_captured(lines)
                return e
        return len(data)

    def _nt_captured(self, lines: list[str]) -> None:
        self.capture = None
        out = self.log.nt_config
        out.clear()
        for k, v in NT_KV.findall(" ".join(x.strip() for x in lines)):
            out.setdefault(k, v)  # the first: ParallelismArgs' dp / pp / tp come before any nested namesake

    def _nt_memory(self, raw: bytes) -> bool:
        m = NT_MEM.search(raw)
        if not m:
            return False
        L = self.log
        L.mem_max_allocated = max(L.mem_max_allocated, float(m.group(1)) * 2**20)
        L.mem_max_reserved = max(L.mem_max_reserved, float(m.group(2)) * 2**20)
        L.mem_unit = L.mem_unit or "MiB"
        return True

    def _ds_pipe(self, raw: bytes) -> bool:
        if not DS_PIPE.search(raw):
            return False
        self.log.ds_pipeline = True
        return True

    def _ds_stage(self, raw: bytes) -> bool:
        m = DS_STAGE.search(raw)
        if not m:
            return False
        self.log.ds_stages = max(self.log.ds_stages, int(m.group(1)) + 1)
        return True

    def _hf_resumed(self, raw: bytes) -> bool:
        m = HF_RESUMED.search(raw)
        if m and len(m.group(1)) < 16:
            self.log.hf_resumed_at = int(m.group(1))
        return bool(m)

    def _cp_head(self, raw: bytes) -> bool:
        m = CP_HEAD.search(raw)
        if not m:
            return False
        self.cp_iter = int(m.group(2)) if m.group(1) == b"batch" else -1
        self.cp_rate = self.cp_dev_rate = self.cp_tokens = NAN
        return True

    def _cp_config(self, raw: bytes) -> bool:
        L = self.log
        if not CP_CONFIG.search(raw) or L.framework not in ("", "composer") or self.yaml is not None:
            return False
        L.args = {}  # a restarted job logs its config again: the later one holds
        L.auto_microbatch = 0  # and searches its micro-batch again
        self.yaml = _YamlReader(L.args)
        m = RANK_PREFIX.match(raw)
        self.yaml_prefix, self.yaml_lines, self.yaml_open = (m.group(0) if m else b""), 0, True
        return True

    def _cp_micro(self, raw: bytes) -> bool:
        m = CP_MICRO.search(raw)
        if not m:
            return False
        self.log.auto_microbatch = int(m.group(2))
        return True

    def _cp_metric(self, raw: bytes) -> bool:
        m = CP_METRIC.search(raw)
        if not m:
            return False
        name, v = m.group(1), _f(m.group(2))
        if name == b"time/batch":  # the batch count, where the header counts another unit
            if self.cp_iter < 0 and v == v:
                self.cp_iter = int(v)
        elif name == b"throughput/batches_per_sec":
            self.cp_rate = v
        elif name == b"throughput/device/batches_per_sec":
            self.cp_dev_rate = v
        elif name == b"throughput/tokens_per_sec":
            self.cp_tokens = v
        elif name == b"throughput/device/tokens_per_sec" and self.cp_iter >= 0:
            L = self.log
            L.framework = L.framework or "composer"
            # the world size from the two token rates (printed with 4 decimals, console_logger.py: the batch rates
            # of a large job round to a few significant digits), else from the two batch rates
            ratio = NAN
            if not L.world_size and self.cp_tokens > 0 and v > 0:
                ratio = self.cp_tokens / v
            elif self.cp_rate > 0 and self.cp_dev_rate > 0 and not L.world_size:
                ratio = self.cp_rate / self.cp_dev_rate
            if 0.5 <= ratio < 2**31:  # a world size (NaN or inf from a corrupted rate is not one)
                L.world_size = round(ratio)
            step = 1.0 / self.cp_rate if self.cp_rate > 0 else NAN
            self._interval(self.cp_iter, step, NAN, v)
        return True

    def _mt_step(self, raw: bytes) -> bool:
        m = MT_STEP.search(raw)
        if not m:
            return b"completed step:" in raw  # a ramp-up or profiler-boundary step: not an interval
        L = self.log
        L.framework = L.framework or "maxtext"
        step, secs, tf, tps = m.groups()
        self._interval(int(step), float(secs), _opt(tf), _opt(tps))
        return True

    def _mt_config(self, raw: bytes) -> bool:
        m = MT_CONFIG.search(raw)
        if not m:
            return False
        L = self.log
        if L.framework in ("", "maxtext"):
            L.framework = "maxtext"
            L.args[m.group(1).decode()] = _text(m.group(2))
        return True

    def _mt_devices(self, raw: bytes) -> bool:
        m = MT_DEVICES.search(raw)
        if not m:
            return False
        self.log.world_size = self.log.world_size or int(m.group(1))
        return True

    def _arg_head(self, raw: bytes) -> bool:
        # a new start prints a new dump: its arguments replace the earlier ones (the layout may differ)
        L = self.log
        self.in_dump = True
        L.framework = L.framework or "megatron"
        L.dumps += 1
        if L.dumps > 1:
            L.args = {}
            L.last_dump_at = len(L.iters)
        self._restart()
        return True

    def _bridge_head(self, raw: bytes) -> bool:
        L = self.log
        L.framework = L.framework or "megatron"
        L.dumps += 1
        if L.dumps > 1:
            L.config = {}
            L.last_dump_at = len(L.iters)
        self._restart()
        self.bridge = True
        self.yaml = _YamlReader(L.config)
        self.yaml_prefix = raw[: raw.find(BRIDGE_HEAD)]
        self.yaml_lines = 0
        return True

    def _bridge_step(self, raw: bytes) -> bool:
        m = BRIDGE_STEP.search(raw)
        if m:
            self.pending_tflops, self.pending, self.bridge = float(m.group(2)), True, True
        return bool(m)

    def _tt_step(self, raw: bytes) -> bool:
        m = TT_STEP.search(raw)
        if not m:
            return False
        L = self.log
        L.framework = L.framework or "torchtitan"
        L.mem_max_reserved = max(L.mem_max_reserved, _f(m.group(2)) * 2**30)
        L.mem_unit = L.mem_unit or "GiB"
        self._interval(int(m.group(1)), NAN, _opt(m.group(5)), _f(m.group(4)), _opt(m.group(6)))
        return True

    def _nemo_print(self, raw: bytes) -> bool:
        m = NEMO_PRINT.search(raw)
        if not m:
            return False
        metrics = {}
        for part in m.group(4).split(b" | ")[1:]:
            k, _, v = part.rpartition(b": ")
            metrics[k.strip()] = v.strip()
        step = metrics.get(b"train_step_timing in s")
        if step is None:
            return False
        L = self.log
        L.framework = L.framework or "nemo"
        g = metrics.get(b"global_batch_size")
        if g and re.fullmatch(rb"\d+", g):
            L.gbs_logged.add(int(g))
        for key, attr in ((b"max_memory_reserved", "mem_max_reserved"), (b"max_memory_allocated", "mem_max_allocated")):
            if key in metrics:
                setattr(L, attr, max(getattr(L, attr), _num(metrics[key])))
                L.mem_unit = L.mem_unit or "bytes"
        self._interval(int(m.group(2)), _num(step), _num(metrics.get(b"TFLOPS_per_GPU", b"nan")), NAN)
        return True

    def _nemo_bar(self, raw: bytes) -> bool:
        m = NEMO_STEP.search(raw)
        if not m:
            return False
        self.log.framework = self.log.framework or "nemo"
        self._interval(int(float(m.group(1))), _num(m.group(2)), NAN, NAN)
        return True

    def _memory(self, raw: bytes) -> bool:
        L = self.log
        found = False
        for m in MEG_MEM_MB.finditer(raw):  # two ranks' reports may share a line (unbuffered writes)
            L.mem_max_allocated = max(L.mem_max_allocated, float(m.group(2)) * 2**20)
            L.mem_max_reserved = max(L.mem_max_reserved, float(m.group(4)) * 2**20)
            L.mem_unit = L.mem_unit or "MB (2^20 bytes)"
            found = True
        if found:
            return True
        m = BRIDGE_MEM.search(raw)
        if not m:
            return False
        for kind, v in BRIDGE_KEY.findall(m.group(1)):
            attr = "mem_max_allocated" if kind == b"allocated" else "mem_max_reserved"
            setattr(L, attr, max(getattr(L, attr), float(v) * 1e9))
        L.mem_unit = L.mem_unit or "GB (1e9 bytes)"
        return True

    def _vocab(self, raw: bytes) -> bool:
        m = PADDED_VOCAB.search(raw)
        if m:
            self.log.vocab_unpadded, self.log.vocab_padded = int(m.group(1)), int(m.group(3))
        return bool(m)

    def _world(self, raw: bytes) -> bool:
        m = WORLD.search(raw)
        if m:
            self.log.world_size = int(m.group(1))
        return bool(m)

    def _micro(self, raw: bytes) -> bool:
        m = MICRO.search(raw)
        if m:
            self.log.microbatches = int(m.group(1))
        return bool(m)

    def _nemo_world(self, raw: bytes) -> bool:
        m = NEMO_WORLD.search(raw)
        if m:
            self.log.world_size = int(m.group(1))
        return bool(m)

    def _tt_args(self, raw: bytes) -> bool:
        m = TT_ARGS.search(raw)
        if not m:
            return False
        L = self.log
        L.framework = L.framework or "torchtitan"
        L.args.update(_flatten(_literal(m.group(1))))
        L.dumps += 1
        self._restart()
        return True

    def _tt_building(self, raw: bytes) -> bool:
        L = self.log
        m = TT_MESH.search(raw)
        if m:
            names = [_text(n).strip("'\" ") for n in m.group(2).split(b",")]
            dims = [int(x) for x in re.findall(rb"\d+", m.group(3))]
            L.mesh = dict(zip(names, dims))
            w = 1
            for d in dims:
                w *= d
            L.mesh_world = w
            return True
        m = TT_BUILD.search(raw)
        if not m:
            return False
        L.framework = L.framework or "torchtitan"
        L.model_name = f"{_text(m.group(1))} {_text(m.group(2))}"
        L.model_args = {k: v.strip().strip("'\"") for k, v in KV.findall(_text(m.group(4)))}
        return True

    def _banner(self, raw: bytes) -> bool:
        if self.log.container:
            return False
        m = BANNER.search(raw)
        if m:
            self.log.container = _text(m.group(1))
        return bool(m)

    def _banner_release(self, raw: bytes) -> bool:
        L = self.log
        if not L.container or L.container_release:
            return False
        m = BANNER_RELEASE.search(raw)
        if m:
            L.container_release = _text(m.group(1))
        return bool(m)

    def _tt_device(self, raw: bytes) -> bool:
        m = TT_DEVICE.search(raw)
        if m:
            self.log.device_name, self.log.device_source = _text(m.group(1)), "torchtitan capacity line"
        return bool(m)

    def _amd_device(self, raw: bytes) -> bool:
        m = AMD_DEVICE.search(raw)
        if m and not self.log.device_name:
            self.log.device_name = f"AMD Instinct {_text(m.group(1))}{_text(m.group(2) or b'')}"
            self.log.device_source = "the device name"
        return False  # the line may say more (a torchtitan capacity line, an error)

    def _rocm_image(self, raw: bytes) -> bool:
        m = ROCM_IMAGE.search(raw)
        if m and not self.log.rocm_image:
            self.log.rocm_image = "rocm/megatron-lm" + (f":{_text(m.group(1))}" if m.group(1) else "")
        return False

    def _tt_trainer(self, raw: bytes) -> bool:
        m = TT_TRAINER.search(raw)
        if not m:
            return False
        self.log.trainer = {
            "local_batch_size": int(m.group(1)),
            "global_batch_size": int(m.group(2)),
            "gradient_accumulation_steps": int(m.group(3)),
            "seq_len": int(m.group(4)),
        }
        self.log.trainer_line = "Trainer is initialized"
        return True

    def _tt_starts(self, raw: bytes) -> bool:
        m = TT_STARTS.search(raw)
        if not m:
            return False
        self.log.trainer = {
            "local_batch_size": int(m.group(1)),
            "global_batch_size": int(m.group(2)),
            "seq_len": int(m.group(3)),
        }
        self.log.trainer_line = "Training starts at"
        return True

    def _tt_applied(self, raw: bytes) -> bool:
        m = TT_AC.search(raw)
        if m:
            self.log.ac_mode = _text(m.group(1))
            return True
        m = TT_SHARD.search(raw)
        if m:
            self.log.shard_line = _text(m.group(1))
        return bool(m)

    def _tt_compile(self, raw: bytes) -> bool:
        self.log.compiled = True
        return True

    def _tt_quant(self, raw: bytes) -> bool:
        m = TT_QUANT.search(raw)
        if not m:
            return False
        if m.group(3):
            self.log.quant = self.log.quant or _text(m.group(3)).lower()
        else:
            kind = _text(m.group(1)).lower()
            recipe = _text(m.group(2)) if m.group(2) else ("tensorwise" if kind == "float8" else "")
            self.log.quant = f"{kind} {recipe}".strip()
        return True

    def _tt_peak(self, raw: bytes) -> bool:
        m = TT_PEAK.search(raw)
        if m:
            self.log.peak_flops_logged = float(m.group(1))
        return bool(m)

    def _tt_nopeak(self, raw: bytes) -> bool:
        m = TT_NOPEAK.search(raw)
        if m and not self.log.device_name:
            self.log.device_name, self.log.device_source = _text(m.group(1)), "torchtitan peak-FLOPs warning"
        return bool(m)

    def _tt_profiling(self, raw: bytes) -> bool:
        if b"Profiling active" in raw or b"Memory profiler active" in raw:
            self.profiling = True
        return False

    def _error(self, raw: bytes) -> bool:
        L = self.log
        if b"ChildFailedError" in raw:
            L.failed = True
        if not L.error:
            m = ERROR.search(raw)
            if m:
                L.error = _text(m.group(0))[:300]
        return False


def _finite(v: int | float) -> float:
    """A logged number as a finite float, else -1 (an integer too large for a float, inf, NaN)."""
    try:
        f = float(v)
    except OverflowError:
        return -1.0
    return f if math.isfinite(f) else -1.0


def _num(b: bytes) -> float:
    try:
        return float(b)
    except ValueError:
        return NAN


def _all(data: bytes, mark: bytes) -> Iterator[int]:
    p = data.find(mark)
    while p >= 0:
        yield p
        p = data.find(mark, p + len(mark))


_HUMAN_SCALE = {b"": 1.0, b"K": 1e3, b"M": 1e6, b"G": 1e9, b"B": 1e9, b"T": 1e12, b"P": 1e15, b"E": 1e18}


def _human(b: bytes) -> float:
    """nanotron's human_format value ('1.23K' = 1230; logging/base.py: 3 significant digits, thousands suffixes) as a
    number; NaN for anything else."""
    m = NT_HUMAN.fullmatch(b.strip())
    if not m:
        return NAN
    try:
        v = float(m.group(1)) * _HUMAN_SCALE[m.group(2)]
    except (ValueError, OverflowError):
        return NAN
    return v if math.isfinite(v) else NAN


def _nt_depth(text: str) -> int:
    """Parentheses a line of a dataclass repr opens (quoted strings and <object at 0x..> reprs left out)."""
    text = NT_QUOTED.sub("", text)
    return text.count("(") - text.count(")")


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
    p.finish()
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
    p.finish()
    return p.log
