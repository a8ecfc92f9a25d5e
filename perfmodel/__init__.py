"""perfmodel: analytic performance, memory, cost and energy model for LLM training on GPU clusters.

Python entry points live in perfmodel.api (predict, predict_many); the command line in perfmodel.cli."""


def __getattr__(name: str) -> str:
    """`perfmodel.__version__`, read from the installed metadata on first access (importlib.metadata
    costs ~10 ms of every start-up otherwise)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("perfmodel")
        except PackageNotFoundError:  # running from a checkout without an install
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
