"""Size and load time of a fabricdoc report at scale (issue 16: a 65,536-GPU report loads in
under 2 s and stays small enough to ship to a scheduler).

The report is built from a simulated sweep-like result on fat_tree_3(K) (the fabric with a few
dozen link findings, as benchmarks/bench_tui.py makes it) plus one bandwidth test per host
pair of a ring, so the per-pair detail is there too. Prints the file size, the time to save it,
Report.load (parse, schema validation, columns expanded) and what a row-per-object layout of
the same report would weigh, for comparison. Printed, not asserted.

    python benchmarks/bench_report.py [--k 64]    (64: 65,536 hosts; 4: the smallest)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui import build_report  # noqa: E402

from fabricdoc.report.pairs import PairRow  # noqa: E402
from fabricdoc.report.report import Report  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=64, help="fat_tree_3 radix (64: 65,536 hosts)")
    ap.add_argument("--repeats", type=int, default=3, help="loads to time (the median is printed)")
    args = ap.parse_args()
    t = time.perf_counter()
    report = build_report(args.k)
    hosts = sorted(n["label"] for n in report.topology["nodes"] if n["kind"] == "host")
    report.pairs = [
        PairRow((a, 1), (b, 1), "ok", busbw_gbps=48.5, expected_gbps=50.0, ratio=0.97, round=i % 8, test="sendrecv")
        for i, (a, b) in enumerate(zip(hosts, hosts[1:] + hosts[:1], strict=True))
    ]
    print(f"build report ({report.fabric['hosts']:,} hosts, {report.fabric['links']:,} links, "
          f"{len(report.pairs):,} tests): {time.perf_counter() - t:.2f} s")
    with tempfile.TemporaryDirectory(prefix="fdreport-bench-") as tmp:
        path = Path(tmp) / "report.json"
        t = time.perf_counter()
        report.save(path)
        print(f"save: {time.perf_counter() - t:.2f} s")
        size = path.stat().st_size
        layout = "columns" if "topology_columns" in json.loads(path.read_text()) else "rows"
        print(f"report file: {size / 1e6:.1f} MB ({layout})")
        rows = json.dumps(report.to_dict(), indent=2, ensure_ascii=False)
        print(f"the same report one object per row (the old layout): {len(rows.encode()) / 1e6:.1f} MB")
        times = []
        for _ in range(max(1, args.repeats)):
            t = time.perf_counter()
            loaded = Report.load(path)
            times.append(time.perf_counter() - t)
        print(f"load: Report.load median {statistics.median(times):.2f} s, min {min(times):.2f} s "
              f"({len(loaded.topology['links']):,} links, {len(loaded.pairs):,} tests back)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
