"""The nccl-tests ``-J`` JSON file: its one run.

The reader follows NVIDIA/nccl-tests ``src/util.cu`` (JSON_FILE_VERSION 1
to 3; version 1, nccl-tests 2.17.x, spells ``average_bus_bandwidith``), since
no real ``-J`` output was found published (tests/data/nccl/README.md).
"""

from __future__ import annotations

import math
from typing import Any

from fabricdoc.probes.bandwidth.nccl_tests_layout import _PERF, _root, _test_name
from fabricdoc.probes.bandwidth.nccl_tests_ranks import _with_ranks_checked
from fabricdoc.probes.bandwidth.nccl_tests_records import (
    NcclLog,
    NcclRank,
    NcclResult,
    NcclRow,
    NcclRun,
)

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import loads_json

_MAX_PER_PROCESS = 1024  # GPUs one nccl-tests process drives (-t x -g); a bound against absurd JSON


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
