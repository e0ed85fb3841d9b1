"""nccl-tests output (all_reduce_perf, sendrecv_perf, ...): text logs, ``-J`` JSON files, and the runner's argv.

:func:`parse_nccl_tests_log` is pure and returns every *run* in a log: wrapper
and Slurm scripts append one test after another to the same file, so a log is
split at each run's header (``# nccl-tests version``, ``# Collective test
starting``, ``# nThread``). Each run keeps its own name, rank lines, column
header, table, ``# Out of bounds values`` and ``# Avg bus bandwidth``. A run
that cannot be used carries a :class:`ParseError` in :attr:`NcclRun.problem`
(truncated, failed with ``Test NCCL failure``, a row that does not fit its
header, a non-finite or negative figure) while the other runs of the log stay
usable. :func:`parse_nccl_tests` is the strict form: every run must be complete.

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

Ranks are taken from what the log states, never from how many rank lines were
printed: the rank numbers of the device lines (every rank 0..N-1 exactly once,
in process blocks of nThread x nGpus), or the JSON's nthreads x ngpus x
processes; for all_reduce the printed figures must agree (busbw = algbw x
2(n-1)/n). A run whose rank list is trimmed, cut or contradicted carries that in
:attr:`NcclRun.ranks_problem` and names no hosts to pair.

The JSON reader follows NVIDIA/nccl-tests ``src/util.cu`` (JSON_FILE_VERSION 1
to 3; version 1, nccl-tests 2.17.x, spells ``average_bus_bandwidith``), since
no real ``-J`` output was found published (tests/data/nccl/README.md).

Bandwidths stay in nccl-tests units here (GB/s, 1e9 bytes per second);
:meth:`NcclRun.peak_busbw_gbps` converts to Gb/s for fabricdoc records.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import loads_json

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
_MAX_PER_PROCESS = 1024  # GPUs one nccl-tests process drives (-t x -g); a bound against absurd JSON


@dataclass(frozen=True)
class NcclRank:
    """One rank from the header: which host and GPU it ran on (``line_no`` of its device line)."""

    rank: int
    host: str
    device: int
    bus_id: str
    device_name: str
    pid: int
    group: int | None = None
    line_no: int = 0


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


@dataclass(frozen=True)
class NcclRun:
    """One test of a log: its ranks, rows, average bus bandwidth and data-check failures.

    ``problem`` says why the run cannot be used at all; ``ranks_problem`` why its
    ranks and hosts cannot be told (its figures may still be read).
    ``wrong_column`` is False for the old layout, whose ``error`` column is a
    max relative error, so only ``# Out of bounds values`` counts corruption.
    ``failed`` is the ``Test failure`` line when the run stopped on one (``problem`` is then
    that line too, unless an earlier problem came first): the rows read before it still count.
    """

    source: str
    test: str
    line_no: int = 0
    version: str | None = None
    ranks: tuple[NcclRank, ...] = ()
    rows: tuple[NcclRow, ...] = ()
    avg_busbw_gbs: float | None = None
    out_of_bounds: int | None = None
    nthread: int | None = None
    ngpus: int | None = None
    processes: int | None = None
    wrong_column: bool = True
    problem: ParseError | None = None
    ranks_problem: ParseError | None = None
    failed: ParseError | None = None  # nccl-tests' own ``Test failure`` line: the run stopped there

    @property
    def complete(self) -> bool:
        return self.problem is None

    @property
    def hosts(self) -> list[str]:
        """Hosts in rank order, each once."""
        return list(dict.fromkeys(r.host for r in self.ranks))

    @property
    def nranks(self) -> int | None:
        """The rank count the log states: JSON nthreads x ngpus x processes, else the highest rank + 1."""
        if self.processes is not None and self.nthread is not None and self.ngpus is not None:
            return self.nthread * self.ngpus * self.processes
        return max((r.rank for r in self.ranks), default=-1) + 1 or None

    @property
    def wrong(self) -> int:
        """Corrupted data the check saw: ``#wrong`` elements over all rows; in the old
        ``error`` layout, the out-of-bounds count (the only count it prints)."""
        if not self.wrong_column:
            return self.out_of_bounds or 0
        return sum(h.wrong or 0 for row in self.rows for h in (row.out_of_place, row.in_place) if h is not None)

    @property
    def corrupted(self) -> bool:
        """Whether the data check failed anywhere (``#wrong`` > 0 or out-of-bounds values)."""
        return self.wrong > 0 or (self.out_of_bounds or 0) > 0

    @property
    def peak(self) -> NcclRow | None:
        """The largest message size: the bandwidth regime, not the latency one."""
        return max(self.rows, key=lambda r: r.size_bytes, default=None)

    def peak_busbw_gbps(self) -> float | None:
        """Bus bandwidth at the largest size, out-of-place, in Gb/s (GB/s x 8)."""
        row = self.peak
        return None if row is None else row.out_of_place.busbw_gbs * 8.0

    def peak_algbw_gbps(self) -> float | None:
        """Algorithm bandwidth at the largest size, out-of-place, in Gb/s."""
        row = self.peak
        return None if row is None else row.out_of_place.algbw_gbs * 8.0


@dataclass(frozen=True)
class NcclLog:
    """Every run of one nccl-tests output, in the order they were written."""

    source: str
    runs: tuple[NcclRun, ...]
    fmt: str = "text"  # or "json"


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


# -- one run of a text log -----------------------------------------------------------
@dataclass
class _Builder:
    """A run being read; :meth:`finish` freezes it into an :class:`NcclRun`."""

    source: str
    line_no: int
    named: str | None = None  # a binary named on a wrapper/command line before the run
    test: str | None = None
    version: str | None = None
    nthread: int | None = None
    ngpus: int | None = None
    ranks: list[NcclRank] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    layout: _Layout | None = None
    in_table: bool = False
    avg: float | None = None
    oob: int | None = None
    using: tuple[int, str] | None = None
    cut_rank: tuple[int, str] | None = None
    failure: tuple[int, str] | None = None
    problem: ParseError | None = None
    last: tuple[int, str] = (0, "")

    def has(self, *what: str) -> bool:
        """Whether the run already got past the header parts named (a repeat starts the next run)."""
        seen = {
            "version": self.version is not None,
            "start": self.test is not None,
            "params": self.nthread is not None,
            "ranks": bool(self.ranks) or self.using is not None,
            "table": self.layout is not None or self.avg is not None,
        }
        return any(seen[w] for w in what)

    def comment(self, line: str, no: int, raw: str) -> None:
        """One ``#`` line of this run (``line``: prefix removed, indentation kept for the column positions)."""
        if self.problem is not None:
            return
        try:
            self._comment(line, no, raw)
        except ParseError as exc:
            self.problem = exc
            self.in_table = False

    def _comment(self, line: str, no: int, raw: str) -> None:
        s = line.strip()
        if m := _VERSION.match(s):
            self.version = m["v"]
        elif m := _START.match(s):
            self.test = _test_of(m["name"])
        elif m := _CONCLUDED.match(s):
            self.test = self.test or _test_of(m["name"])
        elif m := _PARAMS.match(s):
            self.nthread, self.ngpus = int(m["nthread"]), int(m["ngpus"])
        elif _USING.match(s):
            self.using = (no, raw)
        elif m := _RANK.match(s):
            if self.layout is not None:
                raise ParseError(self.source, no, raw, "a '# Rank' line after the results table: two logs interleaved?")
            self.ranks.append(_rank(m, no))
        elif _RANK_START.match(s):
            self.cut_rank = self.cut_rank or (no, raw)
        elif m := _AVG.match(s):
            self.avg = _figure(m["v"], "Avg bus bandwidth", self.source, no, raw)
            self.in_table = False
        elif m := _OOB.match(s):
            self.oob = _count(m["v"], "Out of bounds values", self.source, no, raw)
            self.in_table = False
        elif s.lstrip("#").split()[:2] == ["size", "count"]:
            if self.layout is not None:
                raise ParseError(self.source, no, raw, "a second column header in one run")
            self.layout = _layout(line, self.source, no, raw)
            self.in_table = True

    def row(self, line: str, no: int, raw: str) -> None:
        if self.problem is not None or self.layout is None:
            return
        try:
            self.rows.append(_row(line, self.layout, self.source, no, raw))
        except ParseError as exc:
            self.problem = exc
            self.in_table = False

    def finish(self) -> NcclRun:
        test = self.test or self.named or _test_name(self.source)
        problem = self.problem or self._incomplete(test)
        failed = None
        if self.failure is not None:
            failed = ParseError(self.source, self.failure[0], self.failure[1], f"{test} run failed")
        run = NcclRun(
            source=self.source, test=test, line_no=self.line_no, version=self.version, ranks=tuple(self.ranks),
            rows=tuple(self.rows), avg_busbw_gbs=self.avg, out_of_bounds=self.oob, nthread=self.nthread,
            ngpus=self.ngpus, wrong_column=self.layout.wrong_column if self.layout else True, problem=problem,
            failed=failed,
        )  # fmt: skip
        return _with_ranks_checked(run, self.using or (self.line_no, ""), self.cut_rank)

    def _incomplete(self, test: str) -> ParseError | None:
        if self.failure is not None:
            no, raw = self.failure
            return ParseError(self.source, no, raw, f"{test} run failed")
        if self.layout is None:
            no, raw = self.last
            if self.avg is not None:
                return ParseError(self.source, no, raw, f"{test} run has no results table: the log's start is missing")
            return ParseError(self.source, no, raw, f"{test} run ends before its results table (truncated?)")
        if self.avg is None:
            no, raw = self.last
            return ParseError(self.source, no, raw, f"{test} run ends before '# Avg bus bandwidth' (truncated?)")
        if not self.rows:
            no, raw = self.last
            return ParseError(self.source, no, raw, f"{test} run has no table rows")
        return None


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


def _starts_run(cur: _Builder | None, s: str) -> bool:
    """Whether header line ``s`` opens the next appended run rather than continuing ``cur``."""
    if cur is None:
        return True
    if _VERSION.match(s):
        return cur.has("version", "start", "params", "ranks", "table")
    if _START.match(s):
        return cur.has("start", "params", "ranks", "table")
    return cur.has("params", "ranks", "table")


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


def parse_nccl_tests_log(text: str, source: str = "nccl-tests") -> NcclLog:
    """Every run of one nccl-tests output (text, or the ``-J`` JSON file).

    Raises :class:`ParseError` only when nothing in ``text`` is nccl-tests
    output; a run that cannot be used carries its own error in ``problem``.
    """
    if text.lstrip().startswith("{"):
        return parse_nccl_tests_json(text, source)
    runs: list[NcclRun] = []
    cur: _Builder | None = None
    named: str | None = None  # a binary named on a command/wrapper line, for the next run
    first: tuple[int, str] | None = None
    pending: ParseError | None = None  # a garbled line before any run opened: the next run's error
    for no, raw in enumerate(text.splitlines(), start=1):
        if len(raw) > MAX_LINE or _HUGE_NUMBER.search(raw):
            why = (f"a line longer than {MAX_LINE:,} characters" if len(raw) > MAX_LINE
                   else "a number longer than any field nccl-tests prints (21 digits or more)")
            bad = ParseError(source, no, raw[:200], why)
            # It may be the line that opens the next run (its header): that run carries the error.
            opens = bool(_HEADER_START.match(_strip_prefix(raw[:200]).strip()))
            if cur is not None and cur.problem is None and not opens:
                cur.problem, cur.in_table = bad, False
            else:
                pending = pending or bad
            first = first or (no, raw[:200])
            continue
        line = _strip_prefix(raw)
        s = line.strip()
        if not s:
            continue
        first = first or (no, raw)
        if s.startswith("#"):
            if (_opens_run(s) and _starts_run(cur, s)) or (cur is None and _inside_run(s)):
                if cur is not None:
                    runs.append(cur.finish())
                cur, named = _Builder(source, no, named=named), None
                if pending is not None:
                    cur.problem, pending = pending, None
            if cur is not None:
                cur.comment(line, no, raw)
                cur.last = (no, raw)
        elif _FAILURE.search(s):
            if cur is not None:
                cur.failure = cur.failure or (no, raw)
                cur.last = (no, raw)
        elif cur is not None and cur.in_table and s[0].isdigit() and not _NCCL_DEBUG.match(s):
            cur.row(line, no, raw)
            cur.last = (no, raw)
        elif m := _PERF.search(s):
            named = m.group(1)
    if cur is not None:
        runs.append(cur.finish())
    if pending is not None and not runs:
        raise pending
    if not runs:
        if first is None:
            raise ParseError(source, 0, "", "empty: no nccl-tests output")
        raise ParseError(source, first[0], first[1], "no nccl-tests header, rank lines or results table: "
                                                     "not an nccl-tests log")  # fmt: skip
    return NcclLog(source, tuple(runs))


def parse_nccl_tests(text: str, source: str = "nccl-tests") -> list[NcclRun]:
    """Every run of one nccl-tests output; raise the first run's :class:`ParseError` if any is unusable."""
    runs = list(parse_nccl_tests_log(text, source).runs)
    for run in runs:
        if run.problem is not None:
            raise run.problem
    return runs


# -- what the ranks are ------------------------------------------------------------
def _with_ranks_checked(run: NcclRun, using: tuple[int, str], cut: tuple[int, str] | None) -> NcclRun:
    return replace(run, ranks_problem=_ranks_problem(run, using, cut))


def _ranks_problem(run: NcclRun, using: tuple[int, str], cut: tuple[int, str] | None) -> ParseError | None:
    """Why this run's ranks and hosts cannot be told from the log, or None."""
    src = run.source
    if cut is not None:
        return ParseError(src, cut[0], cut[1], "a rank line is cut short: nccl-tests truncates a process's device "
                                               "list past 2048 characters, so ranks are missing")  # fmt: skip
    if not run.ranks:
        what = "config.devices is empty" if run.processes is not None else "no '# Rank' lines"
        return ParseError(src, using[0], using[1], f"{run.test} run has {what}: its ranks and hosts are not in the log")
    by_rank: dict[int, NcclRank] = {}
    for r in run.ranks:
        if r.rank in by_rank:
            return ParseError(src, r.line_no, "", f"rank {r.rank} is listed twice")
        by_rank[r.rank] = r
        if not r.host:
            return ParseError(src, r.line_no, "", f"rank {r.rank} names no host")
    n = run.nranks or 0
    if run.processes is None and len(by_rank) != n:
        return _gap(run, by_rank, n)
    if run.processes is None and (bad := _process_blocks(run)) is not None:
        return bad
    return _bus_factor_problem(run, n)


def _gap(run: NcclRun, by_rank: dict[int, NcclRank], n: int) -> ParseError:
    """The first run of missing rank numbers, named at the rank line that follows it."""
    first = next(r for r in range(n) if r not in by_rank)
    after = min(r for r in by_rank if r > first)
    return ParseError(run.source, by_rank[after].line_no, "", f"the rank list names {len(by_rank)} of {n} ranks "
                      f"(ranks {first}..{after - 1} are missing): it was trimmed or cut, so its hosts are not known")


def _process_blocks(run: NcclRun) -> ParseError | None:
    """Each process prints nThread x nGpus consecutive ranks; a block of another size means lines were lost."""
    if run.nthread is None or run.ngpus is None:
        return None
    per = run.nthread * run.ngpus
    ranks = sorted(run.ranks, key=lambda r: r.rank)
    start = 0
    for i in range(1, len(ranks) + 1):
        if i == len(ranks) or (ranks[i].host, ranks[i].pid) != (ranks[start].host, ranks[start].pid):
            if i - start != per and per > 0:
                r = ranks[start]
                return ParseError(run.source, r.line_no, "", f"process {r.pid} on {r.host} lists {i - start} ranks, "
                                                             f"nThread x nGpus is {per}: rank lines are missing")  # fmt: skip
            start = i
    return None


def _decimals_half_unit(value: float) -> float:
    """Half the last printed digit of a bandwidth (``getFloatStr``: 2 decimals below 1000, then 1, then 0)."""
    return 0.005 if value < 999.995 else 0.05 if value < 9999.95 else 0.5


def _bus_factor_problem(run: NcclRun, n: int) -> ParseError | None:
    """all_reduce prints busbw = algbw x 2(n-1)/n: a rank list that disagrees was shortened."""
    row = run.peak
    if run.test != "all_reduce" or row is None or n < 2 or row.out_of_place.algbw_gbs <= 0:
        return None
    if len({r.group for r in run.ranks}) > 1:  # NCCL_TESTS_SPLIT: the factor is the group's, not the log's
        return None
    alg, bus = row.out_of_place.algbw_gbs, row.out_of_place.busbw_gbs
    factor = 2 * (n - 1) / n
    slack = max(_decimals_half_unit(bus) + factor * _decimals_half_unit(alg), 1e-5 * (1 + bus))
    if abs(bus - alg * factor) <= slack:
        return None
    ratio = bus / alg
    implied = f" (the figures imply about {2 / (2 - ratio):.0f})" if 1 <= ratio < 2 else ""
    return ParseError(run.source, row.line_no, "", f"busbw {bus:g} is not algbw {alg:g} x 2(n-1)/n for the {n} ranks "
                                                   f"listed{implied}: the rank list does not match the figures")  # fmt: skip


# -- the -J JSON file ---------------------------------------------------------------
def _jfigure(value: Any, where: str, source: str, line: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ParseError(source, line, "", f"{where} is {value!r}, not a finite, non-negative figure")
    return float(value)


def _jcount(value: Any, where: str, source: str, line: int) -> int:
    number = _jfigure(value, where, source, line)
    if number != int(number):
        raise ParseError(source, line, "", f"{where} is {value!r}, not a whole number")
    return int(number)


def _jget(obj: Any, key: str, where: str, source: str, line: int) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ParseError(source, line, "", f"{where} has no {key!r}: not nccl-tests JSON output")
    return obj[key]


def _jhalf(obj: Any, where: str, source: str, line: int) -> NcclResult:
    if not isinstance(obj, dict):
        raise ParseError(source, line, "", f"{where} is {obj!r}, not a result")
    time_key = "cpu_time" if "cpu_time" in obj else "time"
    nwrong = _jget(obj, "nwrong", where, source, line)
    return NcclResult(
        time_us=_jfigure(_jget(obj, time_key, where, source, line), f"{where}.{time_key}", source, line),
        algbw_gbs=_jfigure(_jget(obj, "alg_bw", where, source, line), f"{where}.alg_bw", source, line),
        busbw_gbs=_jfigure(_jget(obj, "bus_bw", where, source, line), f"{where}.bus_bw", source, line),
        wrong=None if nwrong is None else _jcount(nwrong, f"{where}.nwrong", source, line),
    )


def _jrow(obj: Any, i: int, source: str, line: int) -> NcclRow:
    where = f"results[{i}]"
    root = str(_jget(obj, "root", where, source, line)).strip()
    ip = obj.get("in_place") if isinstance(obj, dict) else None
    return NcclRow(
        size_bytes=_jcount(_jget(obj, "size", where, source, line), f"{where}.size", source, line),
        count=_jcount(_jget(obj, "count", where, source, line), f"{where}.count", source, line),
        dtype=str(_jget(obj, "type", where, source, line)),
        redop=str(_jget(obj, "redop", where, source, line)).strip() or None,
        root=_root(root, source, line, ""),
        out_of_place=_jhalf(_jget(obj, "out_of_place", where, source, line), f"{where}.out_of_place", source, line),
        in_place=None if ip is None else _jhalf(ip, f"{where}.in_place", source, line),
        line_no=line,
    )


def _jranks(config: Any, source: str, line: int) -> tuple[list[NcclRank], int, int, int]:
    """Ranks from ``config.devices``: one entry per process (its first rank), nthreads x ngpus ranks each."""
    nthread = _jcount(_jget(config, "nthreads", "config", source, line), "config.nthreads", source, line)
    ngpus = _jcount(_jget(config, "ngpus", "config", source, line), "config.ngpus", source, line)
    devices = config.get("devices") if isinstance(config, dict) else None
    if not isinstance(devices, list):
        devices = []
    per = nthread * ngpus
    if not 1 <= per <= _MAX_PER_PROCESS:
        raise ParseError(source, line, "", f"config nthreads x ngpus = {per}: not a GPU count of one process")
    ranks: list[NcclRank] = []
    for p, dev in enumerate(devices):
        where = f"config.devices[{p}]"
        first = _jcount(_jget(dev, "rank", where, source, line), f"{where}.rank", source, line)
        if first != p * per:
            raise ParseError(source, line, "", f"{where}.rank is {first}, not {p} x nthreads x ngpus = {p * per}")
        device = _jcount(_jget(dev, "device", where, source, line), f"{where}.device", source, line)
        for i in range(per):
            ranks.append(NcclRank(
                rank=first + i, host=str(_jget(dev, "hostname", where, source, line)), device=device + i,
                bus_id=str(dev.get("device_hex", "")) if i == 0 else "", device_name=str(dev.get("device_info", "")),
                pid=_jcount(_jget(dev, "pid", where, source, line), f"{where}.pid", source, line),
                group=_jcount(dev.get("group", 0), f"{where}.group", source, line), line_no=line,
            ))  # fmt: skip
    return ranks, nthread, ngpus, len(devices)


def _jtest(data: dict[str, Any], source: str) -> str:
    args = data.get("args")
    if isinstance(args, list) and args and isinstance(args[0], str) and (m := _PERF.search(args[0])):
        return m.group(1)
    return _test_name(source)


def _javg(data: dict[str, Any], source: str, line: int) -> float | None:
    """``average_bus_bandwidth.bandwidth`` (JSON version 1 spells both ``...bandwidith``)."""
    for key, inner in (("average_bus_bandwidth", "bandwidth"), ("average_bus_bandwidith", "bandwidith")):
        if key in data:
            return _jfigure(_jget(data[key], inner, key, source, line), f"{key}.{inner}", source, line)
    return None


def parse_nccl_tests_json(text: str, source: str = "nccl-tests.json") -> NcclLog:
    """The one run of an nccl-tests ``-J`` file (``src/util.cu``: version, args, config with
    devices, results, out_of_bounds, average_bus_bandwidth, errors)."""
    line = 1 if "\n" not in text.strip() else 0
    data = loads_json(text, source)
    if not isinstance(data, dict) or "config" not in data or not isinstance(data.get("version"), int):
        raise ParseError(source, line, "", "no 'version' and 'config': not nccl-tests JSON output")
    test = _jtest(data, source)
    ranks, nthread, ngpus, procs = _jranks(data["config"], source, line)
    rows: list[NcclRow] = []
    problem: ParseError | None = None
    try:
        results = data.get("results")
        if not isinstance(results, list):
            listed = data.get("errors")
            errors = [e for e in listed if isinstance(e, str) and e] if isinstance(listed, list) else []
            why = f": {errors[0]}" if errors else ""
            raise ParseError(source, line, "", f"{test} run has no results (it stopped before its table{why})")
        rows = [_jrow(r, i, source, line) for i, r in enumerate(results)]
        oob = data.get("out_of_bounds")
        out_of_bounds = None if oob is None else _jcount(_jget(oob, "count", "out_of_bounds", source, line),
                                                        "out_of_bounds.count", source, line)  # fmt: skip
        avg = _javg(data, source, line)
        if avg is None:
            raise ParseError(source, line, "", f"{test} run ends before average_bus_bandwidth (truncated?)")
        if not rows:
            raise ParseError(source, line, "", f"{test} run has no results")
    except ParseError as exc:
        problem, out_of_bounds, avg = exc, None, None
    run = NcclRun(
        source=source, test=test, line_no=line, ranks=tuple(ranks),
        rows=tuple(rows), avg_busbw_gbs=avg, out_of_bounds=out_of_bounds, nthread=nthread, ngpus=ngpus,
        processes=procs, problem=problem,
    )  # fmt: skip
    return NcclLog(source, (_with_ranks_checked(run, (line, ""), None),), fmt="json")


# -- running the binaries -------------------------------------------------------
NCCL_TEST_BINARIES = {"sendrecv": "sendrecv_perf", "all_reduce": "all_reduce_perf", "alltoall": "alltoall_perf"}


def binary_for(given: str, test: str) -> str | None:
    """The nccl-tests binary that runs ``test``, beside ``given`` (a binary such as
    ``/opt/nccl-tests/build/sendrecv_perf``, or its directory): ``all_reduce`` ->
    ``all_reduce_perf``, ``alltoall`` -> ``alltoall_perf``; an ``_mpi`` suffix on the given
    binary is kept (``sendrecv_perf_mpi`` -> ``all_reduce_perf_mpi``). None when nccl-tests
    has no binary for ``test`` (fabricdoc's one-way ``fan:K`` probes). Whether the file
    exists is for the caller to check: this only names it.
    """
    name = NCCL_TEST_BINARIES.get(test)
    if name is None:
        return None
    path = Path(given)
    if path.is_dir():
        return str(path / name)
    suffix = "_mpi" if path.name.endswith("_perf_mpi") else ""
    return str(path.with_name(name + suffix))


def nccl_tests_argv(binary: str, size_bytes: int, iters: int = 20, warmup: int = 5) -> list[str]:
    """argv for one fixed-size nccl-tests run with the data check on (``-c 1``)."""
    return [binary, "-b", str(size_bytes), "-e", str(size_bytes), "-g", "1", "-n", str(iters), "-w", str(warmup), "-c", "1"]
