"""Connection tomography on a job's NCCL error logs (issue 27): is the broken cable named, and no healthy host drained?

Per case: a fabric, a job placed on some of its hosts, one broken cable, and the job's
NCCL_DEBUG=INFO logs from :func:`fabricdoc.sources.sim.nccl_job.simulate_job` (one file per host,
NCCL's real line formats, a random prefix style: none, RFC 3339 times, mpirun --tag-output): ring
and double-binary-tree connections, a connection failing when its data or its acknowledgements'
path crosses the cable, each end of a failed connection printing its completion error with
probability ``report`` (0.6-1.0: a job aborts on its first errors).

Fabrics: the real 64-HCA fat-tree capture with its OpenSM LFTs (``tests/data/ib/{ibnetdiscover,
dump_fts}/fat_tree_64``), a three-level fat-tree (k=8, up/down routing), and a rail-optimized
fabric (2 units x 4 hosts x 8 rails; 8 GPUs per host, one per rail). Broken: a leaf-spine cable
(or an edge-agg / agg-core one) that the job's connections cross, or one host's cable.

The analysis is ``fabricdoc analyze --fabric F [--routes R] --nccl-debug FILES --json`` through the
CLI's own ``main``. Scored:

- pinned: the job's connections pin the cable down (no other cable is crossed by exactly the failed
  connections and by no working one); named: the top finding (warning or worse) is that cable;
  among: it is the top finding or one of its equally likely alternatives;
- healthy hosts drained (a host in the drain list whose own cable is not the broken one);
- verdict ``pass`` on a case with an error line (never allowed).

Prints figures, asserts nothing. Usage:
    python benchmarks/bench_job_errors.py [--seed S] [--cases N] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fabricdoc.cli.main import main as fabricdoc_main
from fabricdoc.fabric.generators import fat_tree_3, rail_optimized
from fabricdoc.fabric.identity import host_name
from fabricdoc.model.records import LinkKey
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.infiniband import apply_routes_file, read_ibnetdiscover_file
from fabricdoc.sources.sim.nccl_job import PREFIXES, simulate_job

ROOT = Path(__file__).resolve().parents[1]
DISC = ROOT / "tests/data/ib/ibnetdiscover/fat_tree_64/stdout.txt"
LFTS = ROOT / "tests/data/ib/dump_fts/fat_tree_64/stdout.txt"


def _shapes(tmp: Path) -> dict[str, tuple[Fabric, list[str], int]]:
    """name -> (fabric, the analyze arguments that load it, GPUs per host)."""
    real = read_ibnetdiscover_file(DISC).fabric
    apply_routes_file(real, LFTS)
    out: dict[str, tuple[Fabric, list[str], int]] = {"fat_tree_64 (real, LFTs)": (real, ["--fabric", str(DISC),
                                                                                      "--routes", str(LFTS)], 1)}
    for name, gen, params, gpus in (("fat_tree_3 k=8", "fat_tree_3", {"k": 8}, 1),
                                    ("rail_optimized 2x4x8", "rail_optimized",
                                     {"units": 2, "hosts_per_unit": 4, "rails": 8, "spines": 4}, 8)):
        spec = tmp / f"{gen}.yaml"
        spec.write_text(json.dumps({"name": gen, "generator": gen, "params": params}))  # JSON is YAML
        out[name] = (fat_tree_3(**params) if gen == "fat_tree_3" else rail_optimized(**params),
                     ["--fabric", str(spec)], gpus)
    return out


def _is_host_cable(fabric: Fabric, k: LinkKey) -> bool:
    return "host" in (fabric.nodes[k.a.node].kind, fabric.nodes[k.b.node].kind)


def _pinned(fabric: Fabric, job, broken: LinkKey) -> bool:
    failed = {id(c) for c in job.failed}
    crossing: dict[LinkKey, set[int]] = {}
    for c in job.connections:
        for k in set(fabric.path(c.src, c.dst)) | set(fabric.path(c.dst, c.src)):
            crossing.setdefault(k, set()).add(id(c))
    return not any(k != broken and s == failed for k, s in crossing.items())


def _names(f: dict) -> set[frozenset]:
    out = set()
    if f.get("endpoints"):
        out.add(frozenset(tuple(e) for e in f["endpoints"]))
    for e in f.get("evidence", []):
        if e.get("type") == "candidates":
            out.update(_cand(c) for c in e.get("candidates", []))
    return out


def _cand(text: str) -> frozenset:
    """A candidate cable ``cable leaf01[3] -- spine02[7]`` as its two ends; any other part as its name."""
    ends = text.removeprefix("cable ").split(" -- ")
    if len(ends) != 2 or not all(e.endswith("]") and "[" in e for e in ends):
        return frozenset((text,))
    return frozenset((e.rsplit("[", 1)[0], int(e.rsplit("[", 1)[1].rstrip("]"))) for e in ends)


def run_case(fabric: Fabric, args: list[str], gpus: int, rng: random.Random, tmp: Path) -> dict:
    hosts = sorted({host_name(fabric, n.id) for n in fabric.hosts()})
    job_hosts = sorted(rng.sample(hosts, min(len(hosts), rng.choice((8, 16, 32)))))
    kind = rng.choice(("fabric", "fabric", "host"))
    for _ in range(200):
        if kind == "host":
            h = rng.choice(job_hosts)
            nodes = [n for n in fabric.hosts() if host_name(fabric, n.id) == h]
            broken = rng.choice([lk.key for n in nodes for lk in fabric.node_links(n.id)])
        else:
            broken = rng.choice([k for k in fabric.links if not _is_host_cable(fabric, k)])
        job = simulate_job(fabric, job_hosts, [broken], gpus=gpus, report=rng.uniform(0.6, 1.0),
                           prefix=rng.choice(PREFIXES), seed=rng.randrange(1 << 30))
        if job.failed:
            break
    files = []
    for i, text in enumerate(job.logs.values()):
        p = tmp / f"rank{i}.log"
        p.write_text(text)
        files.append(str(p))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = fabricdoc_main(["analyze", *args, "--nccl-debug", *files, "--json"])
    report = json.loads(out.getvalue())
    want = frozenset((fabric.label(n), p) for n, p in (tuple(broken.a), tuple(broken.b)))
    named = [f for f in report["findings"] if f["severity"] in ("warning", "error", "critical")
             and f["kind"] in ("link", "nic", "port", "switch")]
    top = named[0] if named else None
    own = {fabric.label(n) for n in (broken.a.node, broken.b.node) if fabric.nodes[n].kind == "host"}
    own_hosts = {host_name(fabric, n) for n in (broken.a.node, broken.b.node) if fabric.nodes[n].kind == "host"}
    drained = [d["node"] for d in report.get("drain", [])]
    return {"kind": kind, "pinned": _pinned(fabric, job, broken), "rc": rc, "verdict": report["verdict"],
            "named": bool(top and top.get("endpoints") and frozenset(tuple(e) for e in top["endpoints"]) == want),
            "among": bool(top and want in _names(top)),
            "healthy_drained": [d for d in drained if d not in own_hosts and d not in own],
            "failed": len(job.failed), "broken": str(broken)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cases", type=int, default=40, help="cases per fabric (default 40)")
    ap.add_argument("--json", metavar="OUT")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    results: dict[str, list[dict]] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name, (fabric, args, gpus) in _shapes(tmp).items():
            rows = []
            for n in range(a.cases):
                case = tmp / f"c{n}"
                case.mkdir(exist_ok=True)
                for old in case.iterdir():
                    old.unlink()
                rows.append(run_case(fabric, args, gpus, rng, case))
            results[name] = rows
    print(f"connection tomography on simulated jobs ({a.cases} cases per fabric, seed {a.seed}, "
          f"{time.monotonic() - t0:.0f} s)")
    print(f"{'fabric':28} {'cable':7} {'cases':>5} {'pinned':>6} {'named|pinned':>12} {'among':>6} "
          f"{'healthy drained':>15} {'pass':>4}")
    for name, rows in results.items():
        for kind in ("fabric", "host"):
            rs = [r for r in rows if r["kind"] == kind]
            if not rs:
                continue
            pinned = [r for r in rs if r["pinned"]]
            print(f"{name:28} {kind:7} {len(rs):5d} {len(pinned):6d} "
                  f"{sum(r['named'] for r in pinned):5d}/{len(pinned):<6d} {sum(r['among'] for r in rs):6d} "
                  f"{sum(len(r['healthy_drained']) for r in rs):15d} {sum(r['verdict'] == 'pass' for r in rs):4d}")
    verdicts = Counter(r["verdict"] for rows in results.values() for r in rows)
    print("verdicts:", dict(verdicts))
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
