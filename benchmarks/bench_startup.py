"""Start-up time of the commands a cluster runs most: ``fabricdoc probe --help`` (on every node)
and ``fabricdoc --help``; also what ``fabricdoc probe`` imports. Printed, not asserted.

Target: ``fabricdoc probe --help`` under 0.3 s on the 2-core development machine. The last
column is each median over the bare interpreter's (``python -c pass``), steadier than seconds
on a busy machine.
Usage: python benchmarks/bench_startup.py [REPEATS]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
    "fabricdoc --help": [sys.executable, "-m", "fabricdoc", "--help"],
    "fabricdoc probe --help": [sys.executable, "-m", "fabricdoc", "probe", "--help"],
    "fabricdoc sweep --help": [sys.executable, "-m", "fabricdoc", "sweep", "--help"],
}
HEAVY = ("numpy", "scipy", "networkx", "pandas", "yaml", "textual", "rich", "jsonschema", "pyroute2")


def timed(argv: list[str], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True, timeout=60)
        out.append(time.perf_counter() - t0)
    return out


def probe_imports() -> list[str]:
    code = ("import sys\nfrom fabricdoc.cli.main import build_parser\nbuild_parser()\nimport fabricdoc.sources.host\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def main() -> int:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    # A shared machine is noisy: the ratio to the bare interpreter's median says more than seconds do.
    print(f"{'command':<42} {'median s':>9} {'min s':>7} {'x python':>9}  ({repeats} runs)")
    bare = None
    for name, argv in CASES.items():
        times = timed(argv, repeats)
        median = statistics.median(times)
        bare = bare or median  # the first case is the interpreter alone
        print(f"{name:<42} {median:>9.3f} {min(times):>7.3f} {median / bare:>9.1f}")
    print("heavy modules loaded for `fabricdoc probe`: " + (", ".join(probe_imports()) or "none"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
