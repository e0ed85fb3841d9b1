"""The lines of an nccl-tests text log, recognised per nccl-tests version: launcher prefixes,
header and rank lines, the column header, and the rows of the results table.

Layouts read: the current one (``#wrong``; 2.17+ with a version line), the
pre-2022 one with an empty ``redop`` column for tests without a reduction
(checked against the header's column positions), the pre-2020 one with a max
``error`` column instead of ``#wrong`` and per-test column sets (no
redop/root), ``#   Rank  0 Pid`` without ``Group``, ``cputime``, per-iteration
(``i_min`` ...) and ``timestamp`` columns. What 2.13 to 2.18 add around the
table (``src/common.cu``, from 2.17.3 ``src/util.cu``): ``Group`` in the rank
lines from 2.13.4, ``[0000:1b:00]`` bus ids from 2.14.1 (``[0x1b]`` before),
``# Collective test starting/concluded`` from 2.16.7, the version line from
2.17.4, ``unalign:`` in the nThread line from 2.18.2, ``# Reducing maxBytes``
and ``# GPU memory usage`` lines. A column header naming anything else is
refused at that line rather than guessed. Lines that MPI, NCCL_DEBUG or the
shell interleave are skipped, in the table too (an NCCL_DEBUG line whose host
name starts with a digit is not a row). Launcher prefixes are removed:
``[1,0]<stdout>:`` (``mpirun --tag-output``), `` 0: `` (``srun --label``) and
SkyPilot's ``(head, rank=0, pid=3808) ``; cases and provenance in
tests/data/nccl/README.md.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from fabricdoc.probes.bandwidth.nccl_tests_records import NcclRank, NcclResult, NcclRow

from fabricdoc.errors import ParseError

_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")  # mpirun --tag-output
_SRUN_LABEL = re.compile(r"^ *\d+:(?: |$)")  # srun --label: " 0: " (" 0:" on an empty line)
_LAUNCHER = re.compile(r"^\(([^()]*)\) ")  # SkyPilot / Ray: "(head, rank=0, pid=3808) "
# NCCL_DEBUG lines: "host:pid:tid [dev] NCCL INFO ..."; a host name may start with a digit
_NCCL_DEBUG = re.compile(r"^[^\s:]+:\d+:\d+ \[\d+\] NCCL ")
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
    r"(?:(?P<host>\S+)\s+)??device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)$"
)
_RANK_START = re.compile(r"^#\s*Rank\s+\d+")
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>\S+)", re.I)
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<v>\S+)")
_VERSION = re.compile(r"^#\s*nccl-tests version\s+(?P<v>\S+)")
_START = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
_CONCLUDED = re.compile(r"^#\s*Collective test concluded:\s*(?P<name>\S+)")
_PARAMS = re.compile(r"^#\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)")
_USING = re.compile(r"^#\s*Using devices")
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
# No field nccl-tests prints is longer than 20 digits (a size in bytes fits 64 bits): a longer run of
# digits is a garbled line, refused with its line before any int() sees it.
_HUGE_NUMBER = re.compile(r"\d{21}")
_HEADER_START = re.compile(r"#\s*(?:nThread\b|nccl-tests version|Collective test starting)")
MAX_LINE = 65536  # nccl-tests' widest line (a results row, a rank line with a long host name) is far shorter
TESTS = ("all_reduce", "all_gather", "reduce_scatter", "alltoallv", "alltoall", "sendrecv", "broadcast", "reduce",
         "hypercube", "gather", "scatter")  # fmt: skip
_PERF = re.compile(r"(?<![a-z_])(" + "|".join(TESTS) + r")_perf(?:_mpi)?\b")

_LEAD = ("size", "count", "type", "redop", "root")
_TIME = ("time", "cputime")
_WRONG = ("#wrong", "error")
_PER_ITER = ("i_min", "i_max", "i_p99", "i_cv%")


# -- the column header ------------------------------------------------------------
@dataclass(frozen=True)
class _Layout:
    """A table's column header: lead names, one or two halves, and where each name ends."""

    names: tuple[str, ...]
    ends: tuple[int, ...]
    lead: int  # how many names come before the first time column
    half: int  # names per half (out-of-place, then in-place when there are two)
    timestamp: bool
    wrong_column: bool


def _layout(line: str, source: str, no: int, raw: str) -> _Layout:
    """Read a column header; any name nccl-tests does not print is refused, not guessed."""
    body = line.replace("#", " ", 1)
    spans = [(m.group(), m.end()) for m in re.finditer(r"\S+", body)]
    names = [n for n, _ in spans]
    timestamp = names[-1] == "timestamp"
    cols = names[:-1] if timestamp else names
    times = [i for i, n in enumerate(cols) if n in _TIME]
    if not times:
        raise ParseError(source, no, raw, "column header has no 'time' column: unknown nccl-tests layout")
    lead = times[0]
    halves = [cols[t:u] for t, u in zip(times, [*times[1:], len(cols)], strict=True)]
    for name in cols[:lead]:
        if name not in _LEAD:
            raise ParseError(source, no, raw, f"column {name!r} is not one nccl-tests prints: unknown layout")
    if not {"size", "count"} <= set(cols[:lead]) or len(halves) > 2 or len({len(h) for h in halves}) != 1:
        raise ParseError(source, no, raw, "column header does not have the size/count/time... layout")
    for half in halves:
        for name in half:
            if name not in (*_TIME, "algbw", "busbw", *_WRONG, *_PER_ITER):
                raise ParseError(source, no, raw, f"column {name!r} is not one nccl-tests prints: unknown layout")
        for need in ("algbw", "busbw"):
            if half.count(need) != 1:
                raise ParseError(source, no, raw, f"column header has no single {need!r} column per half")
        if sum(half.count(w) for w in _WRONG) != 1:
            raise ParseError(source, no, raw, "column header has no '#wrong' or 'error' column: unknown layout")
    return _Layout(tuple(names), tuple(e for _, e in spans), lead, len(halves[0]), timestamp, "#wrong" in cols)


# -- numbers ----------------------------------------------------------------------
def _figure(tok: str, what: str, source: str, no: int, raw: str) -> float:
    """A measured figure: a finite, non-negative number."""
    try:
        value = float(tok)
    except ValueError:
        raise ParseError(source, no, raw, f"{what} {tok!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ParseError(source, no, raw, f"{what} {tok!r} is not a finite, non-negative figure")
    return value


def _count(tok: str, what: str, source: str, no: int, raw: str) -> int:
    """A count (``%6g`` may print ``1e+06``): a finite, non-negative whole number."""
    value = _figure(tok, what, source, no, raw)
    if value != int(value):
        raise ParseError(source, no, raw, f"{what} {tok!r} is not a whole number")
    return int(value)


def _root(tok: str, source: str, no: int, raw: str) -> int:
    try:
        value = int(tok)
    except ValueError:
        raise ParseError(source, no, raw, f"root {tok!r} is not an integer") from None
    if value < -1:
        raise ParseError(source, no, raw, f"root {tok!r} is not a rank (or -1)")
    return value


# -- table rows --------------------------------------------------------------------
def _tokens(line: str, lay: _Layout, source: str, no: int, raw: str) -> list[str]:
    """The row's values, one per column name; a blank ``redop`` (pre-2022 all_gather,
    alltoall, broadcast...) is accepted only where the header's redop column is blank."""
    toks = line.split()
    if lay.timestamp and len(toks) == len(lay.names) + 1:
        toks = [*toks[:-2], f"{toks[-2]} {toks[-1]}"]
    if len(toks) == len(lay.names) - 1 and "redop" in lay.names[: lay.lead]:
        i = lay.names.index("redop")
        start = lay.ends[i - 1] if i else 0
        if len(line) >= lay.ends[i] and not line[start : lay.ends[i]].strip():
            toks.insert(i, "")
    if len(toks) != len(lay.names):
        raise ParseError(source, no, raw, f"table row has {len(toks)} fields, header has {len(lay.names)}")
    return toks


def _half(names: tuple[str, ...], toks: list[str], source: str, no: int, raw: str) -> NcclResult:
    vals = dict(zip(names, toks, strict=True))
    time_name = next(n for n in names if n in _TIME)
    wrong: int | None = None
    error: float | None = None
    if vals.get("#wrong", "N/A") != "N/A":
        wrong = _count(vals["#wrong"], "#wrong", source, no, raw)
    if vals.get("error", "N/A") != "N/A":
        error = _figure(vals["error"], "error", source, no, raw)
    return NcclResult(
        time_us=_figure(vals[time_name], time_name, source, no, raw),
        algbw_gbs=_figure(vals["algbw"], "algbw", source, no, raw),
        busbw_gbs=_figure(vals["busbw"], "busbw", source, no, raw),
        wrong=wrong,
        error=error,
    )


def _row(line: str, lay: _Layout, source: str, no: int, raw: str) -> NcclRow:
    toks = _tokens(line, lay, source, no, raw)
    lead = dict(zip(lay.names[: lay.lead], toks[: lay.lead], strict=True))
    end = len(lay.names) - (1 if lay.timestamp else 0)
    names, vals = lay.names[lay.lead : end], toks[lay.lead : end]
    oop = _half(names[: lay.half], vals[: lay.half], source, no, raw)
    ip = _half(names[lay.half :], vals[lay.half :], source, no, raw) if len(names) > lay.half else None
    return NcclRow(
        size_bytes=_count(lead["size"], "size", source, no, raw),
        count=_count(lead["count"], "count", source, no, raw),
        dtype=lead.get("type", "?"),
        redop=lead.get("redop") or None,
        root=_root(lead["root"], source, no, raw) if "root" in lead else None,
        out_of_place=oop,
        in_place=ip,
        line_no=no,
    )


def _rank(m: re.Match[str], no: int) -> NcclRank:
    return NcclRank(
        rank=int(m["rank"]), host=m["host"] or "", device=int(m["dev"]), bus_id=m["bus"],
        device_name=m["name"].strip(), pid=int(m["pid"]),
        group=int(m["group"]) if m["group"] is not None else None, line_no=no,
    )  # fmt: skip


def _test_of(binary: str) -> str:
    """``./build/all_reduce_perf_mpi`` -> ``all_reduce``; an unknown binary keeps its base name."""
    base = Path(binary).name
    return base.removesuffix("_mpi").removesuffix("_perf")


def _test_name(source: str) -> str:
    """The collective from a file name, when the log itself does not name its binary."""
    base = Path(source).name.lower()
    for name in TESTS:
        if name in base or name.replace("_", "") in base:
            return name
    return "unknown"


def _opens_run(s: str) -> bool:
    """A header line that may open a run (the first one seen opens it)."""
    return bool(_VERSION.match(s) or _START.match(s) or _PARAMS.match(s))


def _inside_run(s: str) -> bool:
    """A line that only a run has: a fragment that lost its header still starts one here."""
    return bool(_RANK_START.match(s) or _USING.match(s) or _AVG.match(s) or _OOB.match(s)
                or s.lstrip("#").split()[:2] == ["size", "count"])  # fmt: skip


def _strip_prefix(raw: str) -> str:
    """The nccl-tests text of one line, without what launchers put before it (outermost first):
    SkyPilot's ``(head, rank=0, pid=3808) ``, ``srun --label``'s `` 0: ``, ``mpirun --tag-output``'s
    ``[1,0]<stdout>:``. Indentation after the prefix is kept (the blank-redop check reads columns)."""
    line = raw
    if (m := _LAUNCHER.match(line)) and "rank=" in m.group(1):
        line = line[m.end() :]
    line = _SRUN_LABEL.sub("", line, count=1)
    return _PREFIX.sub("", line, count=1).rstrip()
