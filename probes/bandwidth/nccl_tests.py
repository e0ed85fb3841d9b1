"""nccl-tests output (all_reduce_perf, sendrecv_perf, ...) and the nccl-tests runner.

:func:`parse_nccl_tests` is pure: it reads the header (``# Rank  0 Group  0
Pid 23 on HOST device  0 [0000:cc:00] NVIDIA H200``), the column header, the
out-of-place / in-place table and the ``# Avg bus bandwidth`` line. Lines
that MPI, NCCL_DEBUG or the shell interleave (warnings, ``NCCL INFO``) are
skipped; an ``[1,0]<stdout>:`` prefix from ``mpirun --tag-output`` is removed.
A table row that does not fit the column header, or a log that ends before
``# Avg bus bandwidth``, raises :class:`ParseError` naming the line.

Bandwidths stay in nccl-tests units here (GB/s, 1e9 bytes per second);
:meth:`NcclRun.peak_busbw_gbps` converts to Gb/s for fabricdoc records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from fabricdoc.errors import ParseError

_PREFIX = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)(?:\s+Group\s+(?P<group>\d+))?\s+Pid\s+(?P<pid>\d+)\s+on\s+"
    r"(?:(?P<host>\S+)\s+)??device\s+(?P<dev>\d+)\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>.*)$"
)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<v>[-+0-9.eE]+|nan|inf)", re.I)
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<v>\d+)")
_START = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
_PARAMS = re.compile(r"^#\s*nThread\s+(?P<nthread>\d+)\s+nGpus\s+(?P<ngpus>\d+)")
_TESTS = ("all_reduce", "sendrecv", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "hypercube", "gather", "scatter")


@dataclass(frozen=True)
class NcclRank:
    """One rank from the header: which host and GPU it ran on."""

    rank: int
    host: str
    device: int
    bus_id: str
    device_name: str
    pid: int
    group: int | None = None


@dataclass(frozen=True)
class NcclResult:
    """One half (out-of-place or in-place) of a table row. ``wrong`` is None for ``N/A``."""

    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    error: float | None = None  # old nccl-tests print a max error instead of #wrong


@dataclass(frozen=True)
class NcclRow:
    """One message size of the table."""

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: NcclResult
    in_place: NcclResult | None
    line_no: int


@dataclass
class NcclRun:
    """A parsed nccl-tests log: ranks, rows, the average bus bandwidth and data-check failures."""

    source: str
    test: str
    ranks: list[NcclRank] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    avg_busbw_gbs: float | None = None
    out_of_bounds: int | None = None
    nthread: int | None = None
    ngpus: int | None = None

    @property
    def hosts(self) -> list[str]:
        """Hosts in rank order, each once."""
        return list(dict.fromkeys(r.host for r in self.ranks))

    @property
    def wrong(self) -> int:
        """Corrupted elements seen by the data check (``#wrong`` over all rows, plus out-of-bounds)."""
        total = self.out_of_bounds or 0
        for row in self.rows:
            for half in (row.out_of_place, row.in_place):
                if half is not None and half.wrong:
                    total += half.wrong
        return total

    @property
    def peak(self) -> NcclRow | None:
        """The largest message size: the bandwidth regime, not the latency one."""
        return max(self.rows, key=lambda r: r.size_bytes, default=None)

    def peak_busbw_gbps(self) -> float | None:
        """Bus bandwidth at the largest size, out-of-place, in Gb/s (GB/s x 8)."""
        row = self.peak
        return None if row is None else row.out_of_place.busbw_gbs * 8.0

    def peak_algbw_gbps(self) -> float | None:
        row = self.peak
        return None if row is None else row.out_of_place.algbw_gbs * 8.0


def _test_name(source: str) -> str:
    """The collective from a file name, when the log itself does not name its binary."""
    base = Path(source).name.lower()
    for name in _TESTS:
        if name in base or name.replace("_", "") in base:
            return name
    return "unknown"


def _columns(body: str) -> list[str]:
    return body.lstrip("#").split()


def parse_nccl_tests(text: str, source: str = "nccl-tests") -> NcclRun:
    """Parse one nccl-tests log; raise :class:`ParseError` on a bad row or a truncated log."""
    named = re.search(r"\b(" + "|".join(_TESTS) + r")_perf", text)
    run = NcclRun(source=source, test=named.group(1) if named else _test_name(source))
    cols: list[str] | None = None
    in_table = False
    ended = False
    last_no = 0
    last_line = ""
    for no, raw in enumerate(text.splitlines(), start=1):
        line = _PREFIX.sub("", raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        last_no, last_line = no, raw
        if stripped.startswith("#"):
            if m := _RANK.match(stripped):
                run.ranks.append(
                    NcclRank(
                        rank=int(m["rank"]),
                        host=m["host"] or "",
                        device=int(m["dev"]),
                        bus_id=m["bus"],
                        device_name=m["name"].strip(),
                        pid=int(m["pid"]),
                        group=int(m["group"]) if m["group"] is not None else None,
                    )
                )
            elif m := _START.match(stripped):
                name = m["name"].removesuffix("_mpi").removesuffix("_perf")
                run.test = name
            elif m := _PARAMS.match(stripped):
                run.nthread, run.ngpus = int(m["nthread"]), int(m["ngpus"])
            elif m := _AVG.match(stripped):
                run.avg_busbw_gbs = float(m["v"])
                ended = True
                in_table = False
            elif m := _OOB.match(stripped):
                run.out_of_bounds = int(m["v"])
                in_table = False
            else:
                names = _columns(stripped)
                if names[:2] == ["size", "count"]:
                    cols = names
                    in_table = True
            continue
        if in_table and stripped[0].isdigit():
            assert cols is not None
            run.rows.append(_row(stripped, cols, source, no, raw))
    if not run.ranks:
        raise ParseError(source, 0, "", "no '# Rank ... on HOST device' lines: not an nccl-tests log")
    if not ended:
        raise ParseError(source, last_no, last_line, "log ends before '# Avg bus bandwidth' (truncated?)")
    return run


def _num(tok: str, source: str, no: int, raw: str, what: str) -> float:
    try:
        return float(tok)
    except ValueError:
        raise ParseError(source, no, raw, f"{what} {tok!r} is not a number") from None


def _half(toks: list[str], names: list[str], source: str, no: int, raw: str) -> NcclResult:
    vals = dict(zip(names, toks, strict=True))
    wrong: int | None = None
    error: float | None = None
    if "#wrong" in vals:
        w = vals["#wrong"]
        if w != "N/A":
            try:
                wrong = int(w)
            except ValueError:
                raise ParseError(source, no, raw, f"#wrong {w!r} is not a count") from None
    elif "error" in vals and vals["error"] != "N/A":
        error = _num(vals["error"], source, no, raw, "error")
    return NcclResult(
        time_us=_num(vals["time"], source, no, raw, "time"),
        algbw_gbs=_num(vals["algbw"], source, no, raw, "algbw"),
        busbw_gbs=_num(vals["busbw"], source, no, raw, "busbw"),
        wrong=wrong,
        error=error,
    )


def _row(line: str, cols: list[str], source: str, no: int, raw: str) -> NcclRow:
    toks = line.split()
    if len(toks) != len(cols):
        raise ParseError(source, no, raw, f"table row has {len(toks)} fields, header has {len(cols)}")
    try:
        first_time = cols.index("time")
    except ValueError:
        raise ParseError(source, no, raw, "column header has no 'time' column") from None
    lead = dict(zip(cols[:first_time], toks[:first_time], strict=True))
    rest_names, rest = cols[first_time:], toks[first_time:]
    half = len(rest_names) // 2 if rest_names.count("time") == 2 else len(rest_names)
    try:
        size = int(lead["size"])
        count = int(lead["count"])
        root = int(lead["root"]) if "root" in lead else None
    except (KeyError, ValueError):
        raise ParseError(source, no, raw, "size/count/root are not integers") from None
    oop = _half(rest[:half], rest_names[:half], source, no, raw)
    ip = _half(rest[half:], rest_names[half:], source, no, raw) if half < len(rest_names) else None
    return NcclRow(
        size_bytes=size,
        count=count,
        dtype=lead.get("type", "?"),
        redop=lead.get("redop"),
        root=root,
        out_of_place=oop,
        in_place=ip,
        line_no=no,
    )


# -- running the binaries -------------------------------------------------------
NCCL_TEST_BINARIES = {"sendrecv": "sendrecv_perf", "all_reduce": "all_reduce_perf"}


def nccl_tests_argv(binary: str, size_bytes: int, iters: int = 20, warmup: int = 5) -> list[str]:
    """argv for one fixed-size nccl-tests run with the data check on (``-c 1``)."""
    return [binary, "-b", str(size_bytes), "-e", str(size_bytes), "-g", "1", "-n", str(iters), "-w", str(warmup), "-c", "1"]
