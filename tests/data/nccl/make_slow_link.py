"""Derive tests/data/nccl/slow_link/ from the real dranet H200 log (see README.md).

Run from the repository root: ``python tests/data/nccl/make_slow_link.py``. For
every pair of hosts of slow_link/fabric.yaml one log is written: the real log
with its two host names replaced and, when either direction of the pair's
route crosses the degraded cable, its time column divided and its algbw/busbw
columns multiplied by SLOW. Three malformed variants are added.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from fabricdoc.model.paths import tested_links
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.sources.fabrics import load_fabric

HERE = Path(__file__).parent
SRC = HERE / "real" / "all_reduce_2x1_h200_dranet.log"
OUT = HERE / "slow_link"
BAD = LinkKey.of(PortRef("leaf02", 3), PortRef("spine01", 2))
SLOW = 0.35
ROW = re.compile(r"^(\s*\d+\s+\d+\s+\S+\s+\S+\s+-?\d+)(\s+\S+)(\s+\S+)(\s+\S+)(\s+\S+)(\s+\S+)(\s+\S+)(\s+\S+)(\s+\S+)$")


def _fmt(old: str, value: float) -> str:
    decimals = len(old.strip().split(".")[1]) if "." in old else 0
    return f"{value:.{decimals}f}".rjust(len(old))


def scaled(text: str, factor: float) -> str:
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m and factor != 1.0:
            g = list(m.groups())
            for t in (1, 5):
                g[t] = _fmt(g[t], float(g[t]) / factor)
            for b in (2, 3, 6, 7):
                g[b] = _fmt(g[b], float(g[b]) * factor)
            line = "".join(g)
        elif line.startswith("# Avg bus bandwidth") and factor != 1.0:
            line = f"# Avg bus bandwidth    : {float(line.split(':')[1]) * factor:g}"
        out.append(line)
    return "\n".join(out) + "\n"


def main() -> None:
    fabric, _ = load_fabric(str(OUT / "fabric.yaml"))
    real = SRC.read_text()
    w0, w1 = "nccl-test-dranet-1gpu-1nic-worker-0", "nccl-test-dranet-1gpu-1nic-worker-1"
    for old in OUT.glob("*.log"):
        old.unlink()
    hosts = sorted(h.id for h in fabric.hosts())
    for a, b in itertools.combinations(hosts, 2):
        slow = BAD in tested_links(fabric, PortRef(a, 1), PortRef(b, 1), bidirectional=True)
        text = scaled(real.replace(w0, a).replace(w1, b), SLOW if slow else 1.0)
        (OUT / f"all_reduce_{a}_{b}.log").write_text(text)
    # Malformed variants.
    good = (OUT / f"all_reduce_{hosts[-2]}_{hosts[-1]}.log").read_text()
    wrong = re.sub(r"(268435456\s+67108864\s+float\s+sum\s+-1\s+\S+\s+\S+\s+\S+)\s+0", r"\1     17", good, count=1)
    assert wrong != good
    (OUT / f"all_reduce_{hosts[-2]}_{hosts[-1]}.log").write_text(wrong)
    lines = real.replace(w0, hosts[0]).replace(w1, hosts[3]).splitlines()
    cut = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("16777216"))
    (OUT / "truncated_killed_mid_run.log").write_text("\n".join(lines[:cut]) + "\n" + lines[cut][:40])
    (OUT / "unknown_host_node0099.log").write_text(real.replace(w0, hosts[1]).replace(w1, "node0099"))


if __name__ == "__main__":
    main()
