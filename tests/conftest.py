"""Make `import perfmodel` pick up the package in this checkout (no install needed), and the shared helpers of
tests/ (cli_helpers.py, log_helpers.py, toy.py) importable from every layer's folder below it."""

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
for p in (TESTS, ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))
