"""The performance core: the workload as op records, priced on the hardware, one step tail."""
