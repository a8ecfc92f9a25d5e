"""Dollars and joules: TCO, run cost, energy, reliability and goodput."""
