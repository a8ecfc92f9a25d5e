"""perfmodel: analytic performance, memory, cost and energy model for LLM training on GPU clusters.

Python entry points live in perfmodel.api (predict, predict_many); the command line in perfmodel.cli."""
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("perfmodel")
except PackageNotFoundError:      # running from a checkout without an install
    __version__ = "0+unknown"
