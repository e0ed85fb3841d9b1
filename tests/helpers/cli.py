"""Running the ``fabricdoc`` command the way a user does (``python -m fabricdoc``), argv only."""

from __future__ import annotations

import os
import subprocess
import sys


def run_fabricdoc(*args: str, input_text: str | None = None, env: dict[str, str] | None = None,
                  timeout: float = 300.0, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m fabricdoc ARGS`` with captured text output; never raises for a failing exit status."""
    return subprocess.run([sys.executable, "-m", "fabricdoc", *args], input=input_text, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd, check=False)
