"""One parallelism per module, composed by workload.py (per-layer shapes and collectives) and predict.py
(pipeline schedule, data parallelism, recompute), in the order torchtitan's `parallelize` applies them:
tensor + sequence parallel (tp), context parallel (cp), expert parallel (ep), pipeline (pp),
recompute, data parallel / FSDP (dp)."""
