"""Start-up of ``fabricdoc probe`` (run on every node): median wall time of ``fabricdoc probe --help``
and of importing the collecting path, and the top ``python -X importtime`` offenders. Printed, not asserted.

Target: ``fabricdoc probe --help`` under 0.3 s. Usage: python benchmarks/bench_probe_startup.py [RUNS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "fabricdoc probe --help": [sys.executable, "-m", "fabricdoc", "probe", "--help"],
    "import the collecting path": [sys.executable, "-c",
                                   "import fabricdoc.cli.probe, fabricdoc.sources.host, fabricdoc.sources.records"],
}


def median_s(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, timeout=120)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def offenders(top: int = 10) -> list[tuple[int, str]]:
    """(cumulative microseconds, module) of the slowest imports of the collecting path."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import fabricdoc.cli.probe, fabricdoc.sources.host, fabricdoc.sources.records"],
                         capture_output=True, text=True, check=True, timeout=120).stderr
    rows = []
    for line in err.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    return sorted(rows, reverse=True)[:top]


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"{'command':<32} {'median s':>9}  ({runs} runs)")
    for name, argv in CASES.items():
        print(f"{name:<32} {median_s(argv, runs):>9.3f}")
    print("top imports of the collecting path (cumulative ms):")
    for us, mod in offenders():
        print(f"  {us / 1000:8.1f}  {mod}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
