"""Run a snippet under several string-hash seeds: what must not depend on the interpreter's seed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable


def outputs_under_seeds(code: str, seeds: Iterable[int] = (1, 2, 3)) -> set[str]:
    """The distinct stdout of ``python -c code`` run once per ``PYTHONHASHSEED`` in ``seeds``."""
    return {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout
        for seed in seeds
    }
