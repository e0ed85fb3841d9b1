"""Bandwidth judgment on realistic nccl-tests logs over a real 64-HCA capture (issue 26).

Input, per case, as a user of ``fabricdoc analyze`` has it:

- the real ``ibnetdiscover`` output and ``dump_fts`` LFT dump of a 64-HCA fat-tree under ibsim +
  OpenSM (``tests/data/ib/{ibnetdiscover,dump_fts}/fat_tree_64/``, captured at 4xQDR by
  ``tests/data/ib/capture_fat_tree_64.py``), its speeds rewritten in the text to 4xHDR or 4xNDR;
- one nccl-tests 2.17 ``sendrecv_perf -b 8 -e 8G -f 2`` log per tested pair (the pairs
  ``plan_sweep(fabric, bidirectional=True)`` picks; 2 hosts x 1 GPU, rank 0 on the pair's src host),
  in the text layout of a real 2.17.6 sendrecv log
  (``tests/data/nccl/xxrjun_h100_n2g8_alltoall_sendrecv_2.17.6``), 31 sizes 8 B .. 8 GiB.

The same cases run over a second fabric (``--fabric rail``, or ``both``, the default): a generated
rail-optimized fabric (:data:`RAIL`, 64 HCA ports as the capture) given to ``fabricdoc analyze`` as a
fabric file, on fabricdoc's own routes; each log's rank lines name the GPU on its port's rail
(:func:`rail_of`), the ``shifts`` plan shifts by whole hosts (:data:`RAIL_SHIFTS`: rail-local tests, as
NCCL keeps traffic), and slow cables are drawn among the cables the tests cross.

A test's figures: the path's line rate (Gb/s / 8, both directions) x the healthy efficiency x
a size curve ``s / (s + s_half)`` (s_half 1-4 MB, a 20-30 us floor on time) x the slower of
its two hosts' factors (each host drawn once, N(1, host_var) clipped to 1 +- 3 host_var) x
per-test jitter N(1, jitter) x, with probability outlier_rate, a transient slowdown of the
whole run (uniform 0.3-0.8) x the factor of the slowest slow cable its route crosses in either
direction (0.5, 0.7: "hard"; 0.85: "gray"); small independent noise per row and per column
(out-of-place, in-place). No test reads above 0.99 x its line rate: hardware does not.

The analysis is ``fabricdoc analyze --fabric DISC --routes LFTS --nccl-logs DIR`` run
in-process through the CLI's own ``main`` (so whatever the command does is what is scored),
its JSON report read back. Scored, over findings of kind link/nic/port/switch with severity
warning or worse: precision (findings naming an injected cable / all of them), recall of slow
cables per severity (a finding names the cable's two ends; a host's cable may be named by its
host port or a ``nic`` finding), outliers blamed (findings naming no injected cable whose slow
tests are all transient-outlier tests), and on healthy fabrics the verdicts, exit codes and the
report's count of slow tests (``tests.pairs_slow``). One more case writes NDR-rate logs over
the capture left at its own 4xQDR: measurements above line rate, which must not read as pass.

Prints figures, asserts nothing. Usage:
    python benchmarks/bench_analyze_noise.py [--seed S] [--reps N] [--quick] [--plan P] [--fabric F] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import fabricdoc
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.cli.main import main as fabricdoc_main
from fabricdoc.fabric.fabricfile import read_fabric_file
from fabricdoc.fabric.identity import host_name
from fabricdoc.model.paths import expected_gbps, tested_links
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.infiniband import apply_routes_file, read_ibnetdiscover_file

ROOT = Path(__file__).resolve().parents[1]
DISC = ROOT / "tests/data/ib/ibnetdiscover/fat_tree_64/stdout.txt"
LFTS = ROOT / "tests/data/ib/dump_fts/fat_tree_64/stdout.txt"
CAPTURED_SPEED = "QDR"

SPEEDS = ("HDR", "NDR")
# The other fabric: rail-optimized, 2 scalable units x 8 hosts x 4 rails (a leaf per rail and unit), 4 spines:
# 64 HCA ports as the capture has, at 4 lanes of 50 (HDR) or 100 (NDR) Gb/s.
RAIL = {"units": 2, "hosts_per_unit": 8, "rails": 4, "spines": 4}
LANE_GBPS = {"HDR": 50.0, "NDR": 100.0}
EFFICIENCIES = (0.97, 0.92, 0.85, 0.78)
JITTERS = (0.01, 0.04)
SLOW_COUNTS = (0, 1, 2, 3)
FACTORS = (0.5, 0.7, 0.85)
HARD = frozenset({0.5, 0.7})
OUTLIER_RATE = 0.015
HOST_VAR = 0.02
KNEE = 64 << 10  # bytes: below it a row is latency-bound
CEILING = 0.99  # no test reads above this share of its line rate
PART_KINDS = frozenset({"link", "nic", "port", "switch"})
BLAMING = frozenset({"warning", "error", "critical"})
VERDICTS = ("pass", "degraded", "fail", "incomplete")

SIZES = [8 << k for k in range(31)]  # sendrecv_perf -b 8 -e 8G -f 2
# The text layout of a real nccl-tests 2.17.6 sendrecv_perf run (tests/data/nccl/
# xxrjun_h100_n2g8_alltoall_sendrecv_2.17.6), trailing blanks included; rows are written the way
# nccl-tests' util.cu writeBenchmarkLine* prints them (getFloatStr widths 7 and 6).
HEAD = (
    "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n"
    "# Collective test starting: sendrecv_perf\n"
    "# nThread 1 nGpus 1 minBytes {min} maxBytes {max} step: 2(factor) warmup iters: 5 iters: 20 "
    "agg iters: 1 validation: 1 graph: 0\n"
    "#\n"
    "# Using devices\n"
)
RANK = "#  Rank {rank:2d} Group  0 Pid {pid:6d} on {host:>10} device {device:2d} [0000:{bus:02x}:00] NVIDIA H100 80GB HBM3\n"
COLUMNS = (
    "#\n"
    "#                                                              out-of-place                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n"
)
TAIL = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {avg:g} \n#\n# Collective test concluded: sendrecv_perf\n\n"


@dataclass(frozen=True)
class Case:
    """One benchmark case: the fabric's speed, the healthy efficiency, the noise, the slow cables to inject."""

    speed: str
    efficiency: float
    jitter: float
    n_slow: int
    seed: int
    contradiction: bool = False  # logs at this speed's rates, analyzed on the capture's own (slower) rates
    plan: str = "shifts"  # which pairs were tested: see planned_tests
    fabric: str = "capture"  # the real 64-HCA capture, or "rail": the generated rail-optimized fabric (RAIL)

    @property
    def noise(self) -> str:
        return f"jitter {self.jitter:g}"


@dataclass
class Prepared:
    """One speed's rewritten capture, its fabric as fabricdoc loads it, and the sweep's tests on it."""

    speed: str
    disc: Path
    lfts: Path | None  # the capture's LFT dump; None: fabricdoc's own routes (a generated fabric)
    fabric: Fabric
    tests: list[tuple[int, PortRef, PortRef]]
    links: dict[tuple[PortRef, PortRef], frozenset[LinkKey]]  # cables each test loads, both directions
    line_gbs: dict[tuple[PortRef, PortRef], float]  # line rate of each test's path, GB/s
    rounds: int
    crossed: frozenset[LinkKey]  # the cables some test crosses (either way)


@dataclass
class SlowCable:
    """An injected slow cable: its key, factor, its two ends by (label, port), and its host end if a host's."""

    key: LinkKey
    factor: float
    ends: frozenset[tuple[str, int]]
    host_end: tuple[str, int] | None
    host_node: str | None

    @property
    def hard(self) -> bool:
        return self.factor in HARD


@dataclass
class Outcome:
    """What one case's analysis said, scored."""

    case: Case
    rc: int
    verdict: str | None
    slow: list[SlowCable] = field(default_factory=list)
    found: list[bool] = field(default_factory=list)  # per slow cable: a finding names it
    blaming: int = 0  # findings of a part kind, warning or worse
    naming_injected: int = 0
    outlier_tests: int = 0
    outliers_blamed: int = 0  # part findings naming no injected cable whose slow tests are all outliers
    outliers_warned: int = 0  # kind "pair" findings, warning or worse, whose slow tests are all outliers
    unexplained: Counter[str] = field(default_factory=Counter)  # kind "pair" findings by severity
    pairs_slow: int | None = None
    pairs: int = 0
    analyze_s: float = 0.0
    error: str | None = None


# -- input ------------------------------------------------------------------------------------


def rewrite_speed(text: str, speed: str) -> str:
    """The ibnetdiscover text with every link's speed (``4xQDR``) set to ``speed``."""
    out, n = re.subn(rf"\b(\d+x){CAPTURED_SPEED}\b", rf"\g<1>{speed}", text)
    if not n:
        raise SystemExit(f"{DISC}: no '4x{CAPTURED_SPEED}' link to rewrite")
    return out


SHIFTS = (1, 9, 18, 27, 36)  # the reproduction: 5 shift rounds of every host, 320 tests on 64 HCAs
# On the rail-optimized fabric (ports in host order, 4 rails a host), shifts by whole hosts: each test stays on
# its rail (rail-local traffic, as NCCL keeps it), within a unit or into the other. No two shifts add up to the
# 16 hosts, so no two tests share their ports (as on the capture): two transient slowdowns of one pair would
# read as a pair slow again, which is a warning.
RAIL_SHIFTS = tuple(4 * h for h in (1, 2, 3, 5, 9))


def planned_tests(fabric: Fabric, plan: str, shifts: tuple[int, ...] = SHIFTS
                  ) -> tuple[list[tuple[int, PortRef, PortRef]], int]:
    """The tested pairs: ``sweep``, what ``plan_sweep(fabric, bidirectional=True)`` picks (every cable at
    least twice, few tests per host); ``shifts``, the issue's reproduction, every host port to the one
    ``k`` places on in port order for each ``k`` of :data:`SHIFTS` (5 tests from and 5 to every host)."""
    if plan == "sweep":
        p = plan_sweep(fabric, bidirectional=True)
        return list(p.tests()), len(p.rounds)
    ports = sorted(fabric.host_ports(), key=lambda q: (fabric.label(q.node), q.port))
    n = len(ports)
    return [(r, ports[i], ports[(i + k) % n]) for r, k in enumerate(shifts) for i in range(n)], len(shifts)


def prepare(speed: str, tmp: Path, plan: str) -> Prepared:
    """Write the capture at ``speed`` (the original when it is the captured one), load it as
    ``fabricdoc analyze`` does, plan the tests (``plan``: see :func:`planned_tests`) and their line rates."""
    where = tmp / f"fabric_{speed}_{plan}"
    where.mkdir()
    disc, lfts = where / "ibnetdiscover.txt", where / "dump_fts.txt"
    text = DISC.read_text()
    disc.write_text(text if speed == CAPTURED_SPEED else rewrite_speed(text, speed))
    lfts.write_text(LFTS.read_text())
    fabric = read_ibnetdiscover_file(disc).fabric
    apply_routes_file(fabric, lfts)
    return _planned(speed, disc, lfts, fabric, plan, SHIFTS)


def _planned(speed: str, disc: Path, lfts: Path | None, fabric: Fabric, plan: str,
             shifts: tuple[int, ...]) -> Prepared:
    """``fabric`` as ``fabricdoc analyze`` loads it from ``disc`` (and ``lfts``), with its tests planned
    (:func:`planned_tests`), the cables each crosses and its path's line rate."""
    tests, rounds = planned_tests(fabric, plan, shifts)
    links = {(s, d): frozenset(tested_links(fabric, s, d, True)) for _, s, d in tests}
    line = {(s, d): float(expected_gbps(fabric, s, d, True) or 0.0) / 8.0 for _, s, d in tests}
    return Prepared(speed, disc, lfts, fabric, tests, links, line, rounds, frozenset().union(*links.values()))


def prepare_rail(speed: str, tmp: Path, plan: str) -> Prepared:
    """A generated rail-optimized fabric (:data:`RAIL`: 64 HCA ports, as the capture) at ``speed``, as a fabric
    file ``fabricdoc analyze --fabric`` reads, on fabricdoc's own routes; its tests planned as :func:`prepare`'s."""
    where = tmp / f"rail_{speed}_{plan}"
    where.mkdir()
    path = where / "fabric.yaml"
    params = ", ".join(f"{k}: {v}" for k, v in {**RAIL, "lane_gbps": LANE_GBPS[speed]}.items())
    path.write_text(f"name: rail-{speed.lower()}\ngenerator: rail_optimized\nparams: {{{params}}}\n")
    return _planned(speed, path, None, read_fabric_file(path).fabric, plan, RAIL_SHIFTS)


def pick_slow(fabric: Fabric, n: int, rng: np.random.Generator,
              among: frozenset[LinkKey] | None = None) -> list[SlowCable]:
    """``n`` distinct slow cables, each a host's or a switch-to-switch cable at even odds; ``among``: only cables
    the tests cross (a cable no test crosses cannot be judged from them: the rail-optimized fabric's rail-local
    tests leave half its leaf-spine cables idle, on the routes fabricdoc computes; the capture's tests cross
    every cable)."""
    host_cables, switch_cables = [], []
    for key in sorted(fabric.links, key=str):
        if among is not None and key not in among:
            continue
        kinds = {fabric.nodes[key.a.node].kind, fabric.nodes[key.b.node].kind}
        (host_cables if "host" in kinds else switch_cables).append(key)
    out: list[SlowCable] = []
    while len(out) < n:
        pool = host_cables if rng.random() < 0.5 else switch_cables
        key = pool[int(rng.integers(len(pool)))]
        if any(s.key == key for s in out):
            continue
        host = next((e for e in (key.a, key.b) if fabric.nodes[e.node].kind == "host"), None)
        out.append(SlowCable(
            key, float(FACTORS[int(rng.integers(len(FACTORS)))]),
            frozenset((fabric.label(e.node), e.port) for e in (key.a, key.b)),
            None if host is None else (fabric.label(host.node), host.port), None if host is None else host.node,
        ))  # fmt: skip
    return out


def c_float(value: float, width: int) -> str:
    """A figure as nccl-tests prints it (util.cu getFloatStr): as many decimals as fit ``width``."""
    power, val = 0, 1
    while value >= val:
        power += 1
        val *= 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}"


def sendrecv_log(src: str, dst: str, peak_gbs: float, line_gbs: float, rng: np.random.Generator,
                 s_half: float, floor_us: float, devices: tuple[int, int] = (0, 0)) -> str:
    """One sendrecv_perf run between ``src`` (rank 0) and ``dst`` (rank 1) whose large sizes reach ``peak_gbs``.

    Time per row: ``floor + s/peak + (s_half/peak) * s/(s + 64 KiB)``: the floor where latency
    bounds small sizes, busbw ~ ``peak * s/(s + s_half)`` in the bandwidth regime (the shape of
    the real dranet H200 log, tests/data/nccl/real/all_reduce_2x1_h200_dranet.log).
    """
    ceiling = CEILING * line_gbs * 1e3  # bytes per microsecond
    peak = min(peak_gbs * 1e3, ceiling)
    rows, total = [], 0.0
    for size in SIZES:
        cols = []
        for _ in range(2):  # out-of-place, in-place: measured separately
            sd = 0.003 if size >= 1 << 20 else 0.02
            t = (floor_us + size / peak + s_half / peak * size / (size + KNEE)) * max(0.5, 1.0 + rng.normal(0.0, sd))
            t = max(t, size / ceiling)
            bw = size / t / 1e3  # GB/s; sendrecv: busbw == algbw
            total += bw
            cols.append((t, bw))
        (t1, b1), (t2, b2) = cols
        rows.append(
            f"{size:12d}  {size // 4:12d}  {'float':>8}  {'sum':>6}  {-1:6d}"
            f"  {c_float(t1, 7):>7}  {c_float(b1, 6):>6}  {c_float(b1, 6):>6}  {0:6g}"
            f"  {c_float(t2, 7):>7}  {c_float(b2, 6):>6}  {c_float(b2, 6):>6}    N/A\n"
        )
    ranks = "".join(RANK.format(rank=r, pid=int(rng.integers(10_000, 999_999)), host=h, device=devices[r],
                                bus=int(rng.integers(16, 224)))
                    for r, h in enumerate((src, dst)))
    return (HEAD.format(min=SIZES[0], max=SIZES[-1]) + ranks + COLUMNS + "".join(rows)
            + TAIL.format(avg=total / (2 * len(SIZES))))


def rail_of(fabric: Fabric, port: PortRef) -> int:
    """The GPU (device ordinal) whose traffic takes ``port``: its place among its host's cabled ports, the
    rule ``fabricdoc analyze`` maps a log's device onto a rail by on a fabric that names no HCA."""
    return sorted(q.port for q in fabric.host_ports(port.node)).index(port.port)


def write_logs(prep: Prepared, case: Case, slow: list[SlowCable], rng: np.random.Generator,
               out: Path) -> set[frozenset[str]]:
    """One log per tested pair under ``out``; returns the tests given a transient slowdown (by host names)."""
    fabric = prep.fabric
    hosts = sorted({p.node for _, s, d in prep.tests for p in (s, d)})
    host_factor = {h: float(np.clip(rng.normal(1.0, HOST_VAR), 1 - 3 * HOST_VAR, 1 + 3 * HOST_VAR)) for h in hosts}
    s_half = float(rng.uniform(1e6, 4e6))
    floor_us = float(rng.uniform(20.0, 30.0))
    slow_of = {s.key: s.factor for s in slow}
    outliers: set[frozenset[str]] = set()
    for rnd, src, dst in prep.tests:
        a, b = host_name(fabric, src.node), host_name(fabric, dst.node)
        factor = case.efficiency * min(host_factor[src.node], host_factor[dst.node])
        factor *= max(0.5, 1.0 + rng.normal(0.0, case.jitter))
        if rng.random() < OUTLIER_RATE:
            factor *= float(rng.uniform(0.3, 0.8))
            outliers.add(frozenset((a, b)))
        crossed = [slow_of[k] for k in prep.links[(src, dst)] if k in slow_of]
        if crossed:
            factor *= min(crossed)
        line = prep.line_gbs[(src, dst)]
        devices = (rail_of(fabric, src), rail_of(fabric, dst))
        text = sendrecv_log(a, b, line * factor, line, rng, s_half * float(rng.normal(1.0, 0.05)), floor_us, devices)
        rails = "" if devices == (0, 0) else f"_gpu{devices[0]}-{devices[1]}"
        (out / f"sendrecv_r{rnd:02d}_{a}_{b}{rails}.log").write_text(text)
    return outliers


# -- analysis and scoring -----------------------------------------------------------------------


def run_analyze(disc: Path, lfts: Path | None, logs: Path, report: Path) -> tuple[int, dict[str, Any] | None, str]:
    """``fabricdoc analyze --fabric DISC --routes LFTS --nccl-logs LOGS -o REPORT`` in this process."""
    argv = ["analyze", "--fabric", str(disc), *(["--routes", str(lfts)] if lfts else []), "--nccl-logs", str(logs),
            "--no-topology", "-o", str(report)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fabricdoc_main(argv)
    doc = json.loads(report.read_text()) if report.exists() else None
    return rc, doc, err.getvalue().strip()


def _ends(finding: dict[str, Any]) -> set[tuple[str, int]]:
    return {(str(a), int(b)) for a, b in finding.get("endpoints") or ()}


def names(finding: dict[str, Any], cable: SlowCable) -> bool:
    """Whether ``finding`` names ``cable`` (bench_accuracy's ``locates``, on a JSON finding)."""
    if finding["kind"] == "switch":
        return False
    named = _ends(finding)
    if named == cable.ends:
        return True
    if cable.host_end is None:
        return False
    return named == {cable.host_end} or (not named and finding["kind"] in ("nic", "host")
                                         and cable.host_node in finding.get("node_ids", ()))


def slow_tests(finding: dict[str, Any]) -> set[frozenset[str]] | None:
    """The slow tests a finding lists (by host labels), or None when it lists none or not all of them."""
    out: set[frozenset[str]] = set()
    listed = False
    for ev in finding.get("evidence") or ():
        pairs = ev.get("slow_pairs")
        if pairs is None:
            continue
        listed = True
        if len(pairs) < int(ev.get("slow", len(pairs))):
            return None
        out |= {frozenset((str(p["src"][0]), str(p["dst"][0]))) for p in pairs}
    return out if listed else None


def score(case: Case, rc: int, doc: dict[str, Any] | None, slow: list[SlowCable],
          outliers: set[frozenset[str]], err: str) -> Outcome:
    """One case's report against what was injected."""
    res = Outcome(case, rc, doc.get("verdict") if doc else None, slow=slow, outlier_tests=len(outliers))
    if doc is None:  # the command could not run: no finding named anything
        res.error = err or f"exit {rc}, no report"
        res.found = [False] * len(slow)
        return res
    findings = doc.get("findings") or []
    blaming = [f for f in findings if f["kind"] in PART_KINDS and f["severity"] in BLAMING]
    res.found = [any(names(f, c) for f in blaming) for c in slow]
    res.blaming = len(blaming)
    for f in blaming:
        if any(names(f, c) for c in slow):
            res.naming_injected += 1
            continue
        tests = slow_tests(f)
        if tests and tests <= outliers:
            res.outliers_blamed += 1
    for f in findings:
        if f["kind"] == "pair" and f["severity"] in BLAMING:
            tests = slow_tests(f)
            res.outliers_warned += bool(tests and tests <= outliers)
    res.unexplained = Counter(f["severity"] for f in findings if f["kind"] == "pair")
    res.pairs_slow = (doc.get("tests") or {}).get("pairs_slow")
    res.pairs = int((doc.get("tests") or {}).get("pairs_tested") or 0)
    if rc == 2 and err:
        res.error = err.splitlines()[-1][:300]
    return res


def run_case(case: Case, prep: Prepared, analyze_on: Prepared, tmp: Path) -> Outcome:
    """Build one case's logs, analyze them on ``analyze_on``'s files, score the report."""
    rng = np.random.default_rng(case.seed)
    slow = pick_slow(prep.fabric, case.n_slow, rng, prep.crossed)
    logs = Path(tempfile.mkdtemp(prefix="logs-", dir=tmp))
    outliers = write_logs(prep, case, slow, rng, logs)
    t0 = time.perf_counter()
    report = tmp / f"{logs.name}.report.json"  # not in the logs' directory: --nccl-logs reads *.json too
    rc, doc, err = run_analyze(analyze_on.disc, analyze_on.lfts, logs, report)
    took = time.perf_counter() - t0
    res = score(case, rc, doc, slow, outliers, err)
    res.analyze_s = took
    for p in logs.iterdir():
        p.unlink()
    logs.rmdir()
    report.unlink(missing_ok=True)
    return res


def cases(reps: int, seed: int, quick: bool, plans: tuple[str, ...],
          fabrics: tuple[str, ...] = ("capture",)) -> list[Case]:
    """Every case, in a fixed order for a given seed (the capture's first: its seeds do not depend on
    whether the rail-optimized fabric runs too)."""
    speeds, effs, jitters, counts = (("HDR",), (0.92, 0.78), JITTERS, (0, 2)) if quick else (
        SPEEDS, EFFICIENCIES, JITTERS, SLOW_COUNTS)
    out, n = [], 0
    for fabric in fabrics:
        for plan in plans:
            for jitter in jitters:
                for eff in effs:
                    for speed in speeds:
                        for _ in range(1 if quick else reps):
                            for k in counts:
                                out.append(Case(speed, eff, jitter, k, seed * 100_003 + n, plan=plan, fabric=fabric))
                                n += 1
    return out


# -- figures ----------------------------------------------------------------------------------


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def pct(v: float | None) -> str:
    return "     -" if v is None else f"{100 * v:5.1f}%"


def summarize(rows: list[Outcome]) -> dict[str, Any]:
    """Aggregate figures of a set of cases."""
    hard = [f for r in rows for c, f in zip(r.slow, r.found, strict=True) if c.hard]
    gray = [f for r in rows for c, f in zip(r.slow, r.found, strict=True) if not c.hard]
    healthy = [r for r in rows if r.case.n_slow == 0]
    verdicts = Counter(r.verdict or "none" for r in healthy)
    codes = Counter(r.rc for r in healthy)
    slow_h = [r.pairs_slow for r in healthy if r.pairs_slow is not None]
    return {
        "cases": len(rows),
        "slow_cables_hard": len(hard), "slow_cables_gray": len(gray),
        "findings": sum(r.blaming for r in rows), "naming_injected": sum(r.naming_injected for r in rows),
        "precision": ratio(sum(r.naming_injected for r in rows), sum(r.blaming for r in rows)),
        "recall_hard": ratio(sum(hard), len(hard)), "recall_gray": ratio(sum(gray), len(gray)),
        "outlier_tests": sum(r.outlier_tests for r in rows), "outliers_blamed": sum(r.outliers_blamed for r in rows),
        "outliers_warned": sum(r.outliers_warned for r in rows),
        "unexplained_by_severity": dict(sum((r.unexplained for r in rows), Counter())),
        "healthy_cases": len(healthy),
        "healthy_verdicts": {v: verdicts.get(v, 0) for v in (*VERDICTS, "none") if v in VERDICTS or verdicts.get(v)},
        "healthy_exit_codes": {str(k): v for k, v in sorted(codes.items())},
        "healthy_slow_tests_total": sum(slow_h), "healthy_slow_tests_mean": ratio(sum(slow_h), len(slow_h)),
        "tests_per_case": ratio(sum(r.pairs for r in rows), len(rows)),
        "analyze_s_mean": ratio(sum(r.analyze_s for r in rows), len(rows)),
        "errors": sum(1 for r in rows if r.error),
    }


HEADER = (f"{'efficiency':>10} {'speed':>5} {'cases':>5} | {'cables h/g':>10} {'finds':>5} {'precision':>9} "
          f"| {'recall hard':>11} {'recall gray':>11} | {'outliers blamed part/pair':>25} | "
          f"{'healthy verdicts p/d/f/i':>24} {'exit 0/1/2':>10} {'slow tests/healthy':>18} | {'runtime':>7}")


def table_row(label: tuple[str, str], s: dict[str, Any]) -> str:
    v, c = s["healthy_verdicts"], s["healthy_exit_codes"]
    verdicts = "/".join(str(v.get(k, 0)) for k in VERDICTS)
    codes = "/".join(str(c.get(k, 0)) for k in ("0", "1", "2"))
    slow_h = "-" if s["healthy_slow_tests_mean"] is None else f"{s['healthy_slow_tests_mean']:.1f}"
    return (f"{label[0]:>10} {label[1]:>5} {s['cases']:>5} | {s['slow_cables_hard']:>4}/{s['slow_cables_gray']:<5} "
            f"{s['findings']:>5} {pct(s['precision']):>9} | {pct(s['recall_hard']):>11} {pct(s['recall_gray']):>11} | "
            f"{s['outliers_blamed']:>10}/{s['outliers_warned']:<3} of {s['outlier_tests']:<8} | {verdicts:>24} {codes:>10} {slow_h:>18} | "
            f"{s['analyze_s_mean']:6.2f}s")


def _key(fabric: str) -> str:
    """How the JSON figures' keys name ``fabric``: the capture's keys as they were before there were two."""
    return "" if fabric == "capture" else f"{fabric} "


def main() -> None:
    """Build the cases, analyze them, print (and optionally write) the figures."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seed", type=int, default=26, help="seed of the slow cables and the figures (default 26)")
    ap.add_argument("--reps", type=int, default=10, help="seeds per (speed, efficiency, jitter, slow count) (default 10)")
    ap.add_argument("--quick", action="store_true", help="a few cases (HDR, efficiency 0.92 and 0.78, 0 or 2 slow cables)")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON to OUT")
    ap.add_argument("--plan", choices=("shifts", "sweep", "both"), default="both",
                    help="which pairs are tested: shifts (the issue's 320 tests: 5 shift rounds of every host), "
                    "sweep (plan_sweep's bidirectional plan: 77 tests, 2-3 per host cable), or both (default)")
    ap.add_argument("--fabric", choices=("capture", "rail", "both"), default="both",
                    help="which fabric: capture (the real 64-HCA ibsim capture, on its LFT dump), rail (a generated "
                    "rail-optimized fabric of 64 HCA ports, 2 units x 8 hosts x 4 rails, 4 spines, on fabricdoc's "
                    "own routes), or both (default)")
    args = ap.parse_args()
    started = time.perf_counter()
    plans = ("shifts", "sweep") if args.plan == "both" else (args.plan,)
    fabrics = ("capture", "rail") if args.fabric == "both" else (args.fabric,)
    all_cases = cases(args.reps, args.seed, args.quick, plans, fabrics)
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="bench-analyze-noise-") as tmpdir:
        tmp = Path(tmpdir)
        speeds = sorted({c.speed for c in all_cases} | {CAPTURED_SPEED, "NDR"})
        preps = {("capture", s, p): prepare(s, tmp, p) for p in plans for s in speeds}
        if "rail" in fabrics:
            preps |= {("rail", s, p): prepare_rail(s, tmp, p) for p in plans for s in SPEEDS}
        for case in all_cases:
            prep = preps[(case.fabric, case.speed, case.plan)]
            outcomes.append(run_case(case, prep, prep, tmp))
        contra = Case("NDR", 0.92, 0.01, 0, args.seed * 100_003 + len(all_cases), contradiction=True, plan=plans[0])
        contradiction = run_case(contra, preps[("capture", "NDR", plans[0])], preps[("capture", CAPTURED_SPEED, plans[0])],
                                 tmp)
    runtime = time.perf_counter() - started

    f = preps[("capture", "NDR", plans[0])].fabric
    command = " ".join(["python", "benchmarks/bench_analyze_noise.py", f"--seed {args.seed}", f"--plan {args.plan}"]
                       + (["--quick"] if args.quick else [f"--reps {args.reps}"]) + [f"--fabric {args.fabric}"])
    print(f"fabric: {DISC.relative_to(ROOT)} ({len(f.hosts())} HCAs, {len(f.switches())} switches, {len(f.links)} cables),"
          f" routes {LFTS.relative_to(ROOT)}; sendrecv tests per case: "
          + ", ".join(f"{p} {len(preps[('capture', 'NDR', p)].tests)} in {preps[('capture', 'NDR', p)].rounds} rounds"
                      for p in plans))
    if "rail" in fabrics:
        r = preps[("rail", "NDR", plans[0])].fabric
        print(f"fabric rail: rail_optimized({', '.join(f'{k}={v}' for k, v in RAIL.items())}), {len(r.host_ports())} HCA "
              f"ports, {len(r.switches())} switches, {len(r.links)} cables, fabricdoc's own routes; sendrecv tests per "
              "case: " + ", ".join(f"{p} {len(preps[('rail', 'NDR', p)].tests)} in {preps[('rail', 'NDR', p)].rounds} "
                                  "rounds" for p in plans))
    print(f"fabricdoc from {Path(fabricdoc.__file__).parent}")
    print(f"cases {len(all_cases)} + 1 contradiction  seed {args.seed}  runtime {runtime:.1f}s\nreproduce: {command}")
    print(f"outlier rate {OUTLIER_RATE}, host var {HOST_VAR}; slow cables 0.5/0.7 = hard, 0.85 = gray; precision and "
          "recall over link/nic/port/switch findings, warning or worse; outliers blamed: on a part / as a pair warning, of "
          "the outlier tests; runtime = mean `fabricdoc analyze` per case\n")
    figures: dict[str, Any] = {"noise_levels": {}}
    for fab, plan, jitter in sorted({(c.fabric, c.plan, c.jitter) for c in all_cases}):
        level = [o for o in outcomes if o.case.jitter == jitter and o.case.plan == plan and o.case.fabric == fab]
        where = "" if fab == "capture" else f"fabric {fab}; "
        print(f"{where}tests: {plan}; noise level: jitter {jitter:g}")
        print(HEADER)
        print("-" * len(HEADER))
        rows: dict[str, Any] = {}
        for eff in sorted({o.case.efficiency for o in level}, reverse=True):
            for speed in sorted({o.case.speed for o in level}):
                sel = [o for o in level if o.case.efficiency == eff and o.case.speed == speed]
                s = summarize(sel)
                rows[f"{eff:g} {speed}"] = s
                print(table_row((f"{eff:g}", speed), s))
        s = summarize(level)
        rows["all"] = s
        print(table_row(("all", ""), s))
        print()
        figures["noise_levels"][f"{_key(fab)}{plan} jitter {jitter:g}"] = rows
    for fab, plan in [(fab, plan) for fab in fabrics for plan in plans]:
        t = summarize([o for o in outcomes if o.case.plan == plan and o.case.fabric == fab])
        where = "" if fab == "capture" else f"fabric {fab}, "
        figures[f"total {_key(fab)}{plan}"] = t
        print(f"total, {where}tests {plan}: precision {pct(t['precision']).strip()}, recall hard {pct(t['recall_hard']).strip()}, "
              f"recall gray {pct(t['recall_gray']).strip()}, outliers blamed {t['outliers_blamed']}, healthy pass "
              f"{t['healthy_verdicts'].get('pass', 0)} of {t['healthy_cases']}")
    total = summarize(outcomes)
    figures["total"] = total
    print(f"total: precision {pct(total['precision']).strip()}, recall hard {pct(total['recall_hard']).strip()}, "
          f"recall gray {pct(total['recall_gray']).strip()}, outliers blamed {total['outliers_blamed']} of "
          f"{total['outlier_tests']} (and {total['outliers_warned']} read as a warning of kind pair), healthy verdicts "
          + ", ".join(f"{k} {v}" for k, v in total["healthy_verdicts"].items())
          + f", slow tests on healthy fabrics {total['healthy_slow_tests_total']} "
          f"({total['healthy_cases']} fabrics)")
    print(f"reports of slow tests nothing explains (kind pair), by severity: {total['unexplained_by_severity'] or 'none'}")
    c = contradiction
    print(f"contradiction (NDR-rate logs on the capture's own 4x{CAPTURED_SPEED}): verdict {c.verdict} "
          f"(exit {c.rc}), {c.blaming} part findings, slow tests {c.pairs_slow}"
          + (f"; {c.error}" if c.error else ""))
    errors = [o for o in outcomes if o.error]
    if errors:
        print(f"cases that could not be analyzed or exited 2: {len(errors)}")
        for o in errors[:5]:
            print(f"  {o.case}: {o.error}")
    by_count: dict[int, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_count[o.case.n_slow].append(o)
    figures["by_slow_count"] = {str(k): summarize(v) for k, v in sorted(by_count.items())}
    if args.json:
        out = {
            "seed": args.seed, "command": command, "fabricdoc": str(Path(fabricdoc.__file__).parent), "argv": sys.argv, "runtime_s": round(runtime, 2),
            "outlier_rate": OUTLIER_RATE, "host_var": HOST_VAR, **figures,
            "contradiction": {"verdict": c.verdict, "exit_code": c.rc, "findings": c.blaming,
                              "pairs_slow": c.pairs_slow, "error": c.error},
            "cases": [{"fabric": o.case.fabric, "plan": o.case.plan, "speed": o.case.speed, "efficiency": o.case.efficiency, "jitter": o.case.jitter,
                       "seed": o.case.seed, "slow": [{"cable": sorted(map(list, s.ends)), "factor": s.factor,
                                                       "found": f} for s, f in zip(o.slow, o.found, strict=True)],
                       "verdict": o.verdict, "exit_code": o.rc, "findings": o.blaming,
                       "naming_injected": o.naming_injected, "outlier_tests": o.outlier_tests,
                       "outliers_blamed": o.outliers_blamed, "outliers_warned": o.outliers_warned,
                       "pairs_slow": o.pairs_slow, "error": o.error}
                      for o in outcomes],
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
