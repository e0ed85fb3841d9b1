"""infiniband-diags: a runner with timeouts and pure parsers of the tools' real output.

:class:`IbRunner` runs ``ibnetdiscover``, ``perfquery``, ``ibqueryerrors``,
``iblinkinfo``, ``ibroute`` and ``ibtracert`` without a shell, each under a
timeout, killing the whole process group when it expires. Under ibsim it adds
``LD_PRELOAD=libumad2sim.so`` and ``IBSIM_SOCKNAME`` and runs in a scratch
directory (umad2sim writes a fake sysfs ``./sys-<pid>`` there).

The ``parse_<tool>(text, source=...)`` functions are pure; each raises
:class:`ParseError` naming the tool (or file), the line number and the line
it does not understand, and a ParseError with line 0 when the output ends
early. Node ids are GUIDs as ``0x`` + 16 hex digits, the form ibnetdiscover uses.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model import LinkKey, PortCounters, PortRef, PortState, ProbeRun

TOOLS = ("ibnetdiscover", "perfquery", "ibqueryerrors", "iblinkinfo", "ibroute", "ibtracert")

# Counters the extended (64-bit) PortCountersExtended attribute reports under the same name
# as the 32-bit PortCounters one.
EXTENDED_WIDTH = {
    "PortXmitData": 64,
    "PortRcvData": 64,
    "PortXmitPkts": 64,
    "PortRcvPkts": 64,
    "PortUnicastXmitPkts": 64,
    "PortUnicastRcvPkts": 64,
    "PortMulticastXmitPkts": 64,
    "PortMulticastRcvPkts": 64,
    "PortXmitWait": 64,
}
# Fields of a perfquery block that are not counters.
_PERF_NOT_COUNTERS = {"PortSelect", "CounterSelect", "CounterSelect2", "CounterWidth"}
# The IBTA error counters ibqueryerrors checks; a port it checked but did not list has all zero.
IBQUERYERRORS_ERRORS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
)


@functools.lru_cache(maxsize=65536)
def guid_id(text: str) -> str:
    """A GUID in any form the tools print (``S-0002c9...``, ``0x2c9...``, ``2c9...``) as ``0x%016x``."""
    t = text.strip()
    if len(t) > 2 and t[1] == "-" and t[0] in "SHR":
        t = t[2:]
    return f"0x{int(t, 16):016x}"


# ---------------------------------------------------------------------------
# runner
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolRun:
    """One finished tool run: its argv, output, exit status and wall time."""

    tool: str
    argv: tuple[str, ...]
    stdout: str
    stderr: str
    returncode: int
    duration_s: float
    started: float = 0.0  # time.monotonic() at start, to merge overlapping runs


def busy_time(runs: Sequence[ToolRun]) -> float:
    """Wall time during which at least one of ``runs`` was running (parallel runs counted once)."""
    total = 0.0
    end = float("-inf")
    for r in sorted(runs, key=lambda r: r.started):
        start, stop = r.started, r.started + r.duration_s
        if start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


class IbRunner:
    """Runs infiniband-diags tools with a timeout each, no shell, on a real host or under ibsim.

    ``ibsim_socket`` (an ``IBSIM_SOCKNAME``) adds the umad2sim preload; ``env``
    and ``cwd`` override the environment and working directory; ``tool_paths``
    maps a tool name to the executable to run (default: found on ``PATH``);
    ``tool_timeouts`` overrides ``timeout_s`` per tool (ibnetdiscover on a large
    fabric needs longer than perfquery on one port); ``retries`` re-runs a tool
    that exited with an error status.
    """

    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        ibsim_socket: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        tool_paths: Mapping[str, str] | None = None,
        tool_timeouts: Mapping[str, float] | None = None,
        extra_args: Sequence[str] = (),
        retries: int = 1,
    ) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self.tool_timeouts = dict(tool_timeouts or {})
        self.tool_paths = dict(tool_paths or {})
        self.extra_args = tuple(extra_args)
        base = dict(os.environ if env is None else env)
        if ibsim_socket:
            from fabricdoc.probes.ibsim import sim_env

            base.update(sim_env(ibsim_socket))
        self.env = base
        self._own_cwd = None
        if cwd is None and "LD_PRELOAD" in base and "umad2sim" in base["LD_PRELOAD"]:
            self._own_cwd = tempfile.mkdtemp(prefix="fabricdoc-umad2sim-")
            cwd = self._own_cwd
        self.cwd = cwd
        self.ibsim_socket = base.get("IBSIM_SOCKNAME") if "umad2sim" in base.get("LD_PRELOAD", "") else None
        self.runs: list[ToolRun] = []
        self.probe_runs: list[ProbeRun] = []  # filled by fabricdoc.ibsource, reported by collect()

    def describe(self) -> str:
        """Where the tools look: ``ibsim:<socket>`` or ``ib`` (the host's HCAs)."""
        return f"ibsim:{self.ibsim_socket}" if self.ibsim_socket else "ib"

    @classmethod
    def for_sim(cls, sim: object, **kwargs: object) -> IbRunner:
        """A runner bound to a started :class:`fabricdoc.probes.ibsim.IbSim`."""
        return cls(env=sim.env, cwd=str(sim.workdir), **kwargs)  # type: ignore[attr-defined,arg-type]

    def close(self) -> None:
        if self._own_cwd:
            shutil.rmtree(self._own_cwd, ignore_errors=True)
            self._own_cwd = None

    def executable(self, tool: str) -> str:
        path = self.tool_paths.get(tool) or shutil.which(tool, path=self.env.get("PATH"))
        if not path:
            raise ProbeError(tool, "not found on PATH (install infiniband-diags)", "unsupported")
        return path

    def run(self, tool: str, *args: str, ok_codes: Sequence[int] = (0,), timeout_s: float | None = None) -> ToolRun:
        """Run one tool; ProbeError when it is missing, times out (group killed) or fails.

        A run that exits with a failure status is tried ``retries`` more times: the
        tools only read, and a lost MAD on a busy fabric fails a whole scan.
        """
        for attempt in range(self.retries + 1):
            try:
                return self._run_once(tool, args, ok_codes, timeout_s)
            except ProbeError as exc:
                if exc.status != "error" or attempt == self.retries:
                    raise
        raise AssertionError("unreachable")

    def _run_once(
        self, tool: str, args: Sequence[str], ok_codes: Sequence[int], timeout_s: float | None
    ) -> ToolRun:
        argv = (self.executable(tool), *self.extra_args, *args)
        limit = timeout_s if timeout_s is not None else self.tool_timeouts.get(tool, self.timeout_s)
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise ProbeError(tool, f"cannot run {argv[0]}: not found", "unsupported") from exc
        except PermissionError as exc:
            raise ProbeError(tool, f"cannot run {argv[0]}: permission denied", "error") from exc
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            raise ProbeError(tool, f"timed out after {limit:g}s (killed)", "timeout") from None
        duration = time.monotonic() - start
        run = ToolRun(
            tool,
            tuple(argv),
            out.decode("utf-8", errors="replace"),
            err.decode("utf-8", errors="replace"),
            proc.returncode,
            duration,
            start,
        )
        self.runs.append(run)
        if proc.returncode not in ok_codes:
            raise ProbeError(tool, f"exit status {proc.returncode}: {_last_error(run.stderr or run.stdout)}")
        return run

    # -- one method per tool ------------------------------------------------
    def ibnetdiscover(self) -> ToolRun:
        return self.run("ibnetdiscover")

    def perfquery(self, lid: int, port: int | None = None, *, extended: bool = False) -> ToolRun:
        """Counters of one port, or of every port of the node at ``lid`` (``-l``, port 255)."""
        args = ["-x"] if extended else []
        if port is None:
            args += ["-l", str(lid), "255"]
        else:
            args += [str(lid), str(port)]
        return self.run("perfquery", *args)

    def ibqueryerrors(self, *, counters: bool = False, threshold_file: str = "/dev/null") -> ToolRun:
        """Whole-fabric error counters (``counters=False``) or data counters (``--counters``).

        Thresholds come from ``threshold_file``, default none (all zero), so every
        non-zero error counter is listed. ibqueryerrors exits 1 when it found errors.
        """
        args = ["--threshold-file", threshold_file]
        if counters:
            args.append("--counters")
        return self.run("ibqueryerrors", *args, ok_codes=(0, 1))

    def iblinkinfo(self) -> ToolRun:
        return self.run("iblinkinfo")

    def ibroute(self, lid: int) -> ToolRun:
        return self.run("ibroute", str(lid))

    def ibtracert(self, src_lid: int, dst_lid: int) -> ToolRun:
        return self.run("ibtracert", str(src_lid), str(dst_lid))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "sim_connect: attached" not in ln]
    return lines[-1][:200] if lines else "(no output)"


# ---------------------------------------------------------------------------
# ibnetdiscover
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IbPortRecord:
    """One cabled port as ibnetdiscover prints it."""

    port: int
    remote_guid: str
    remote_port: int
    remote_description: str
    lanes: int | None
    lane_gbps: float | None
    speed: str | None  # "HDR", "EDR"...
    port_guid: str | None = None  # the CA port's own GUID (``[1](2c9...)``)
    remote_port_guid: str | None = None
    lid: int | None = None  # this port's LID (CA ports)
    remote_lid: int | None = None


@dataclass(frozen=True)
class IbNodeRecord:
    """One node record: ``Switch 36 "S-..." # "desc" ... lid 3`` or ``Ca 1 "H-..." # "desc"``."""

    type: str  # "Switch", "Ca", "Rt"
    guid: str
    num_ports: int
    description: str
    lid: int | None
    ports: tuple[IbPortRecord, ...]
    line_no: int


@dataclass(frozen=True)
class IbTopology:
    """Everything ibnetdiscover printed, node by node."""

    nodes: tuple[IbNodeRecord, ...]

    def node(self, guid: str) -> IbNodeRecord | None:
        return next((n for n in self.nodes if n.guid == guid), None)

    @functools.cached_property
    def _lids(self) -> dict[int, PortRef]:
        return self._build_lids()

    @functools.cached_property
    def _port_guids(self) -> dict[str, PortRef]:
        return self._build_port_guids()

    def lids(self) -> dict[int, PortRef]:
        """LID -> the port that answers on it (a switch's port 0, a CA's port)."""
        return self._lids

    def port_guids(self) -> dict[str, PortRef]:
        """Port GUID -> port; a switch's ports share the switch GUID (mapped to port 0)."""
        return self._port_guids

    def _build_lids(self) -> dict[int, PortRef]:
        out: dict[int, PortRef] = {}
        for n in self.nodes:
            if n.type == "Switch":
                if n.lid:
                    out[n.lid] = PortRef(n.guid, 0)
                continue
            for p in n.ports:
                if p.lid:
                    out[p.lid] = PortRef(n.guid, p.port)
        return out

    def _build_port_guids(self) -> dict[str, PortRef]:
        out: dict[str, PortRef] = {}
        for n in self.nodes:
            if n.type == "Switch":
                out[n.guid] = PortRef(n.guid, 0)
            for p in n.ports:
                if p.port_guid:
                    out[p.port_guid] = PortRef(n.guid, p.port)
                if p.remote_port_guid:
                    out.setdefault(p.remote_port_guid, PortRef(p.remote_guid, p.remote_port))
        return out


# IBTA lane rates (Gb/s per lane, signalling) by the names ibnetdiscover and ibsim use.
IB_SPEEDS = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.3125,
    "FDR": 14.0625,
    "EDR": 25.78125,
    "HDR": 53.125,
    "NDR": 106.25,
    "XDR": 212.5,
}
_NODE_RE = re.compile(r'^(Switch|Ca|Rt|Hca)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"(.*)"(.*))?$')
_PORT_RE = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"([^"]+)"\[(\d+)\](?:\[ext \d+\])?'
    r"(?:\(([0-9a-fA-F]+)\))?((?:\s+[a-z]=\S+)*)\s*(?:#\s*(.*))?$"
)
_DISCOVERED_ID = re.compile(r"^[SHR]-[0-9a-fA-F]{1,16}$")
_CONN_TAIL = re.compile(r'"(.*)"\s+lid\s+(\d+)\s+(\d+)x([A-Za-z0-9]+)\s*$')
_OWN_LID = re.compile(r"^lid\s+(\d+)\s+lmc\s+\d+\s*")
_GUID_LINE = re.compile(r"^(switchguid|caguids?|hcaguids?|rtguid)\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_KEYS = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguids?|hcaguids?|rtguid)\s*=\s*\S+")
# ibsim's netfile directives (sim_net.c) that carry no topology.
_NETFILE_KEYS = re.compile(r"^(width|speed|module|include|pdebug|do|devid|vendid|sysimgguid)\b")
# ibsim's default GUID bases when a net file sets none (sim_net.c).
_IBSIM_GUID_BASE = {"Switch": 0x200000, "Ca": 0x100000, "Rt": 0x300000}


def _whole_lines(text: str, source: str) -> list[str]:
    """The output's lines; output cut in the middle of a line (a killed tool) is a ParseError."""
    lines = text.splitlines()
    if text and not text.endswith("\n") and lines:
        raise ParseError(source, len(lines), lines[-1], "output ends in the middle of a line")
    return lines


def parse_ibnetdiscover(text: str, source: str = "ibnetdiscover") -> IbTopology:
    """Parse ``ibnetdiscover`` output, a saved copy, or an ibsim net file in that syntax.

    Discovered ids (``"S-0002c9..."``) are GUIDs; a net file's own ids
    (``"leaf01"``) get the GUID ibsim would give them (its ``switchguid=``/
    ``caguid=`` lines, else its defaults), and its port lines need not carry the
    ``lid N 4xHDR`` tail. A port that leads to a node the text never describes
    means the output was cut short: ParseError with line 0.
    """
    lines = _whole_lines(text, source)
    nodes: list[dict] = []
    cur: dict | None = None
    next_guid = dict(_IBSIM_GUID_BASE)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        g = _GUID_LINE.match(line)
        if g:
            kind = {"s": "Switch", "c": "Ca", "h": "Ca", "r": "Rt"}[g.group(1)[0]]
            next_guid[kind] = int(g.group(2), 0)
            continue
        if _HEADER_KEYS.match(line) or _NETFILE_KEYS.match(line) and cur is None:
            continue
        m = _NODE_RE.match(line)
        if m:
            kind = "Ca" if m.group(1) == "Hca" else m.group(1)
            nports = int(m.group(2))
            ident = m.group(3)
            if _DISCOVERED_ID.match(ident):
                guid = guid_id(ident)
            else:
                guid = f"0x{next_guid[kind]:016x}"
                next_guid[kind] += 1 if kind == "Switch" else nports + 1
            rest = m.group(5) or ""
            lm = re.search(r"\blid\s+(\d+)", rest)
            cur = {
                "type": kind,
                "n": nports,
                "ident": ident,
                "guid": guid,
                "desc": m.group(4) if m.group(4) is not None else ident,
                "lid": int(lm.group(1)) if lm else None,
                "ports": [],
                "line": no,
                "discovered": bool(_DISCOVERED_ID.match(ident)),
            }
            nodes.append(cur)
            continue
        m = _PORT_RE.match(line)
        if m and cur is not None:
            port = int(m.group(1))
            comment = m.group(7) or ""
            own_lid = None
            om = _OWN_LID.match(comment)
            if om:
                own_lid = int(om.group(1))
                comment = comment[om.end() :]
            tail = _CONN_TAIL.search(comment)
            if not 0 <= port <= cur["n"]:
                raise ParseError(source, no, raw, f"port {port} on a {cur['n']}-port node")
            if tail is None and cur["discovered"]:
                raise ParseError(source, no, raw, "port line without '\"desc\" lid N <width>x<speed>'")
            speed = tail.group(4).upper() if tail else None
            if speed is not None and speed not in IB_SPEEDS:
                raise ParseError(source, no, raw, f"unknown link speed {speed!r}")
            cur["ports"].append(
                {
                    "port": port,
                    "text": raw,
                    "remote": m.group(3),
                    "remote_port": int(m.group(4)),
                    "remote_description": tail.group(1) if tail else "",
                    "lanes": int(tail.group(3)) if tail else None,
                    "lane_gbps": IB_SPEEDS[speed] if speed else None,
                    "speed": speed,
                    "port_guid": guid_id(m.group(2)) if m.group(2) else None,
                    "remote_port_guid": guid_id(m.group(5)) if m.group(5) else None,
                    "lid": own_lid if own_lid is not None else (cur["lid"] if cur["type"] == "Switch" else None),
                    "remote_lid": int(tail.group(2)) if tail else None,
                    "line": no,
                }
            )
            continue
        raise ParseError(source, no, raw, "not an ibnetdiscover node, port or header line")
    if not nodes:
        raise ParseError(source, 0, "", "no nodes (empty or truncated output)")
    for n in nodes:
        # Every discovered node has at least the cable it was found through.
        if not n["ports"]:
            raise ParseError(source, n["line"], lines[n["line"] - 1],
                             "node header without port lines: output ends early")
    by_ident = {n["ident"]: n for n in nodes}
    records = []
    for n in nodes:
        ports = []
        for p in n["ports"]:
            remote = by_ident.get(p["remote"])
            if remote is None:
                raise ParseError(
                    source,
                    p["line"],
                    p["text"],
                    f"output ends early: {n['desc']!r} port {p['port']} leads to "
                    f"{p['remote']!r} which is never described",
                )
            port_guid = p["port_guid"]
            if port_guid is None and n["type"] != "Switch":
                port_guid = f"0x{int(n['guid'], 16) + p['port']:016x}"  # how ibsim and most HCAs number them
            ports.append(
                IbPortRecord(
                    port=p["port"],
                    remote_guid=remote["guid"],
                    remote_port=p["remote_port"],
                    remote_description=p["remote_description"] or remote["desc"],
                    lanes=p["lanes"],
                    lane_gbps=p["lane_gbps"],
                    speed=p["speed"],
                    port_guid=port_guid,
                    remote_port_guid=p["remote_port_guid"],
                    lid=p["lid"],
                    remote_lid=p["remote_lid"],
                )
            )
        records.append(IbNodeRecord(n["type"], n["guid"], n["n"], n["desc"], n["lid"], tuple(ports), n["line"]))
    return IbTopology(tuple(records))


# ---------------------------------------------------------------------------
# perfquery
# ---------------------------------------------------------------------------

_PERF_HEAD = re.compile(r"^# Port (extended )?counters: Lid (\d+) port (\d+)\b")
_PERF_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):\.*(\S+)$")


def parse_perfquery(
    text: str,
    source: str = "perfquery",
    *,
    node_of_lid: Mapping[int, str] | None = None,
    timestamp: float | None = None,
) -> list[PortCounters]:
    """Parse ``perfquery`` (basic or ``-x``, one port or ``-l``) into one PortCounters per port block.

    ``node_of_lid`` maps the queried LID to a node id (GUID); without it the node
    is ``"lid:<n>"``. Extended blocks mark their data counters 64 bits wide.
    """
    ts = time.time() if timestamp is None else timestamp
    out: list[PortCounters] = []
    cur: tuple[int, int, bool] | None = None
    values: dict[str, int | None] = {}
    head_line = 0

    def close() -> None:
        if cur is None:
            return
        if not values:
            raise ParseError(source, head_line, "", "counter block has no counters (truncated)")
        lid, port, ext = cur
        node = (node_of_lid or {}).get(lid, f"lid:{lid}")
        widths = {k: v for k, v in EXTENDED_WIDTH.items() if k in values} if ext else {}
        out.append(
            PortCounters(
                node=node,
                port=port,
                timestamp=ts,
                values=dict(values),
                source="perfquery -x" if ext else "perfquery",
                width_bits=widths,
            )
        )

    lines = _whole_lines(text, source)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _PERF_HEAD.match(line)
        if m:
            close()
            cur = (int(m.group(2)), int(m.group(3)), bool(m.group(1)))
            values = {}
            head_line = no
            continue
        m = _PERF_LINE.match(line)
        if m and cur is not None:
            name, val = m.groups()
            if name in _PERF_NOT_COUNTERS:
                continue
            try:
                values[name] = int(val, 0)
            except ValueError:
                raise ParseError(source, no, raw, f"counter {name} is not an integer") from None
            continue
        raise ParseError(source, no, raw, "not a perfquery header or counter line")
    close()
    if not out:
        raise ParseError(source, 0, "", "no counter blocks (empty or truncated output)")
    return out


# ---------------------------------------------------------------------------
# ibqueryerrors
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IbQueryErrors:
    """ibqueryerrors output: per-port counters it listed, and the ports it says it checked."""

    counters: tuple[PortCounters, ...]
    nodes_checked: int
    ports_checked: int
    bad_ports: int | None
    descriptions: dict[str, str] = field(default_factory=dict)


_IQE_NODE = re.compile(r'^(Errors|Data Counters) for (?:(0x[0-9a-fA-F]+) )?"(.*)"$')
_IQE_PORT = re.compile(r"^GUID (0x[0-9a-fA-F]+) port (\d+|ALL):(.*)$")
_IQE_ITEM = re.compile(r"\[([A-Za-z][A-Za-z0-9]*) == (\d+)(?: \([^)]*\))?\]")
_IQE_SUMMARY1 = re.compile(r"^## Summary: (\d+) nodes checked, (\d+) bad nodes found$")
_IQE_SUMMARY2 = re.compile(r"^## +(\d+) ports checked, (\d+) ports have errors beyond threshold$")


def parse_ibqueryerrors(
    text: str,
    source: str = "ibqueryerrors",
    *,
    timestamp: float | None = None,
    port_guid_to_node: Mapping[str, PortRef] | None = None,
) -> IbQueryErrors:
    """Parse ``ibqueryerrors`` (errors, ``--data``, ``--counters``; ``-r`` link info is skipped).

    Returns one PortCounters per ``GUID ... port N:`` line (the ``port ALL``
    aggregate is dropped). A block header with a GUID names the node; a CA's
    error block header has none (``Errors for "node0003"``) and its port lines
    carry the *port* GUID, turned into the node by ``port_guid_to_node`` (from
    ibnetdiscover) when given. The ``## Summary`` block must be there: without
    it the output was cut short.
    """
    guids = port_guid_to_node or {}
    ts = time.time() if timestamp is None else timestamp
    merged: dict[tuple[str, int], dict[str, int | None]] = {}
    descs: dict[str, str] = {}
    kinds: dict[tuple[str, int], str] = {}
    node: str | None = None
    summary: tuple[int, int] | None = None
    ports_checked: int | None = None
    bad_ports: int | None = None
    lines = _whole_lines(text, source)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _IQE_NODE.match(line)
        if m:
            node = guid_id(m.group(2)) if m.group(2) else ""
            desc = m.group(3)
            if node:
                descs[node] = desc
            kind = "counters" if m.group(1) == "Data Counters" else "errors"
            continue
        m = _IQE_PORT.match(line)
        if m:
            if node is None or (node and guid_id(m.group(1)) != node):
                raise ParseError(source, no, raw, "port line outside its node's block")
            port_node = node
            if not node:
                at = guids.get(guid_id(m.group(1)))
                port_node = at.node if at is not None else guid_id(m.group(1))
                descs.setdefault(port_node, desc)
            body = m.group(3)
            items = _IQE_ITEM.findall(body)
            stripped = body.strip()
            # Nothing but whole "[Name == n (...)]" items: one bracket pair per item, nothing outside.
            if (
                not items
                or stripped[:1] != "["
                or stripped[-1:] != "]"
                or stripped.count("[") != len(items)
                or stripped.count("]") != len(items)
            ):
                raise ParseError(source, no, raw, "cannot read the counter list")
            if m.group(2) == "ALL":
                continue
            key = (port_node, int(m.group(2)))
            merged.setdefault(key, {}).update({k: int(v) for k, v in items})
            kinds[key] = kind
            continue
        if line.startswith("Link info:"):
            continue
        m = _IQE_SUMMARY1.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
            continue
        m = _IQE_SUMMARY2.match(line)
        if m:
            ports_checked, bad_ports = int(m.group(1)), int(m.group(2))
            continue
        if line.startswith("## Thresholds:") or line.startswith("## Suppressed:") or line.startswith("##"):
            continue
        raise ParseError(source, no, raw, "not an ibqueryerrors line")
    if summary is None or ports_checked is None:
        raise ParseError(source, 0, "", "no '## Summary' block: output ends early")
    counters = tuple(
        PortCounters(
            node=n,
            port=p,
            timestamp=ts,
            values=vals,
            source="ibqueryerrors --counters" if kinds[(n, p)] == "counters" else "ibqueryerrors",
            width_bits={k: 64 for k in vals if k in EXTENDED_WIDTH} if kinds[(n, p)] == "counters" else {},
        )
        for (n, p), vals in sorted(merged.items())
    )
    return IbQueryErrors(counters, summary[0], ports_checked, bad_ports, descs)


# ---------------------------------------------------------------------------
# iblinkinfo
# ---------------------------------------------------------------------------

_ILI_SWITCH = re.compile(r"^Switch:\s+(0x[0-9a-fA-F]+)\s+(.*):$")
_ILI_CA = re.compile(r"^(CA|Router):\s+(.*):$")
_ILI_PORT = re.compile(
    r"^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(.*?)\s*\)==>\s*(.*)$"
)
_ILI_LINK = re.compile(
    r"^(?:(\d+)X\s+([\d.]+)\s+Gbps(?:\s+\(\w+\))?\s+)?(\w+)/\s*(\w+)$"
)
_ILI_REMOTE = re.compile(r'^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)?\s*(\d+)?\[[^\]]*\]\s+"(.*)"\s+\((.*)\)$')
_ILI_UNAVAILABLE = re.compile(r'^"Port not available"$')
_STATE_NAMES = {"Initialize": "Init", "Init": "Init", "Down": "Down", "Armed": "Armed", "Active": "Active"}


@dataclass(frozen=True)
class IbLinkInfoPort:
    """One iblinkinfo port line, unresolved: LIDs as printed."""

    node_guid: str | None  # switches: the switch GUID; CAs: None (use port_guid)
    port_guid: str | None  # CAs print their port GUID first
    description: str
    lid: int
    port: int
    state: str
    phys_state: str
    lanes: int | None
    lane_gbps: float | None
    could_be_lanes: int | None
    could_be_gbps: float | None
    remote_lid: int | None
    remote_port: int | None
    remote_description: str


def parse_iblinkinfo_lines(text: str, source: str = "iblinkinfo") -> list[IbLinkInfoPort]:
    """The raw port lines of ``iblinkinfo`` (default format), in order."""
    out: list[IbLinkInfoPort] = []
    node_guid: str | None = None
    desc = ""
    in_node = False
    ports_here = header_no = 0
    header = ""
    lines = _whole_lines(text, source)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _ILI_SWITCH.match(line) or _ILI_CA.match(line)
        if m:
            if in_node and ports_here == 0:
                raise ParseError(source, header_no, header, "node header without port lines")
            if m.re is _ILI_SWITCH:
                node_guid, desc = guid_id(m.group(1)), m.group(2)
            else:
                node_guid, desc = None, m.group(2)
            in_node, ports_here, header_no, header = True, 0, no, raw
            continue
        m = _ILI_PORT.match(line)
        if not m or not in_node:
            raise ParseError(source, no, raw, "not an iblinkinfo node or port line")
        port_guid = guid_id(m.group(1)) if m.group(1) else None
        link = _ILI_LINK.match(m.group(4))
        far = m.group(5).strip()
        remote = _ILI_REMOTE.match(far)
        if remote is None and _ILI_UNAVAILABLE.match(far):
            # The link is up but the far end does not answer MADs (ibsim: Error "node"[port] 100).
            remote = _ILI_REMOTE.match('[  ] "" ( )')
        if not link or not remote:
            raise ParseError(source, no, raw, "cannot read the link state or the remote end")
        state = _STATE_NAMES.get(link.group(3))
        if state is None:
            raise ParseError(source, no, raw, f"unknown port state {link.group(3)!r}")
        ports_here += 1
        hint = remote.group(5)
        cw = re.search(r"Could be\s+(?:(\d+)X)?\s*(?:([\d.]+)\s*Gbps)?", hint)
        out.append(
            IbLinkInfoPort(
                node_guid=node_guid,
                port_guid=port_guid,
                description=desc,
                lid=int(m.group(2)),
                port=int(m.group(3)),
                state=state,
                phys_state=link.group(4),
                lanes=int(link.group(1)) if link.group(1) else None,
                lane_gbps=float(link.group(2)) if link.group(2) else None,
                could_be_lanes=int(cw.group(1)) if cw and cw.group(1) else None,
                could_be_gbps=float(cw.group(2)) if cw and cw.group(2) else None,
                remote_lid=int(remote.group(2)) if remote.group(2) and remote.group(3) else None,
                remote_port=int(remote.group(3)) if remote.group(3) else (int(remote.group(2)) if remote.group(2) else None),
                remote_description=remote.group(4),
            )
        )
    if not out:
        raise ParseError(source, 0, "", "no port lines (empty or truncated output)")
    if in_node and ports_here == 0:
        raise ParseError(source, header_no, header, "node header without port lines: output ends early")
    return out


def parse_iblinkinfo(
    text: str,
    source: str = "iblinkinfo",
    *,
    port_guid_to_node: Mapping[str, PortRef] | None = None,
    lid_to_port: Mapping[int, PortRef] | None = None,
) -> list[PortState]:
    """Parse ``iblinkinfo`` into one PortState per port.

    ``lanes``/``lane_gbps`` are what the port trained at; ``max_*`` what iblinkinfo
    says both ends could do (its "Could be" hint), else the trained values.
    ``port_guid_to_node`` (from ibnetdiscover) turns a CA's port GUID into its node
    GUID; ``lid_to_port`` resolves the remote end into ``peer``.
    """
    guids = port_guid_to_node or {}
    lids = lid_to_port or {}
    states: list[PortState] = []
    for rec in parse_iblinkinfo_lines(text, source):
        if rec.node_guid is not None:
            node = rec.node_guid
        elif rec.port_guid is not None and rec.port_guid in guids:
            node = guids[rec.port_guid].node
        else:
            node = rec.port_guid or f"lid:{rec.lid}"
        peer = None
        if rec.remote_lid is not None and rec.remote_port is not None:
            at = lids.get(rec.remote_lid)
            if at is not None:
                # A switch answers on port 0's LID: the remote port number is the one printed.
                peer = PortRef(at.node, rec.remote_port if at.port == 0 else at.port)
            else:
                peer = PortRef(f"lid:{rec.remote_lid}", rec.remote_port)
        up = rec.state != "Down"
        states.append(
            PortState(
                node=node,
                port=rec.port,
                state=rec.state,
                phys_state=rec.phys_state,
                lanes=rec.lanes,
                lane_gbps=rec.lane_gbps,
                max_lanes=(rec.could_be_lanes or rec.lanes) if up else None,
                max_lane_gbps=(rec.could_be_gbps or rec.lane_gbps) if up else None,
                peer=peer,
                source="iblinkinfo",
            )
        )
    return states


# ---------------------------------------------------------------------------
# ibroute
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IbRoute:
    """A switch's linear forwarding table as ibroute dumped it."""

    switch_guid: str
    switch_lid: int
    description: str
    lft: dict[int, int]
    destinations: dict[int, str]  # LID -> destination port GUID


_IBR_HEAD = re.compile(
    r"^Unicast lids \[(0x[0-9a-fA-F]+)-(0x[0-9a-fA-F]+)\] of switch Lid (\d+) guid (0x[0-9a-fA-F]+) \((.*)\):$"
)
_IBR_ENTRY = re.compile(r"^(0x[0-9a-fA-F]+)\s+(\d+)\s+:\s+\((.*)\)$")
# "(Switch portguid 0x...: 'desc')"; ibroute prints "(unknown node and type)" for a LID it could not resolve.
_IBR_DEST = re.compile(r"portguid (0x[0-9a-fA-F]+): '(.*)'$")
_IBR_TAIL = re.compile(r"^(\d+) (?:valid )?lids dumped\s*$")


def parse_ibroute(text: str, source: str = "ibroute") -> IbRoute:
    """Parse ``ibroute <lid>`` (unicast LFT). The trailing "N valid lids dumped" must match the entries."""
    head: re.Match[str] | None = None
    lft: dict[int, int] = {}
    dests: dict[int, str] = {}
    lines = _whole_lines(text, source)
    done = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if head is None:
            head = _IBR_HEAD.match(line)
            if head is None:
                raise ParseError(source, no, raw, "expected 'Unicast lids [...] of switch Lid N guid ...'")
            continue
        if line.startswith("Lid") and "Out" in line or line.startswith("Port") and "Info" in line:
            continue
        m = _IBR_ENTRY.match(line)
        if m and not done:
            lid = int(m.group(1), 16)
            lft[lid] = int(m.group(2))
            dest = _IBR_DEST.search(m.group(3))
            if dest:
                dests[lid] = guid_id(dest.group(1))
            continue
        m = _IBR_TAIL.match(line)
        if m and not done:
            if int(m.group(1)) != len(lft):
                raise ParseError(source, no, raw, f"says {m.group(1)} lids but lists {len(lft)}")
            done = True
            continue
        raise ParseError(source, no, raw, "not an ibroute entry")
    if head is None or not done:
        raise ParseError(source, 0, "", "no 'lids dumped' trailer: output ends early")
    return IbRoute(guid_id(head.group(4)), int(head.group(3)), head.group(5), lft, dests)


# ---------------------------------------------------------------------------
# ibtracert
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IbTrace:
    """A route as ibtracert walked it: the source port, each hop, the destination node."""

    src_guid: str
    src_port: int
    dst_guid: str
    dst_port: int
    hops: tuple[tuple[int, str, str, int], ...]  # (out port, "switch"/"ca", guid, in port)

    def links(self, port_guid_to_node: Mapping[str, PortRef] | None = None) -> tuple[LinkKey, ...]:
        """The hops as links between (node GUID, port); a CA hop's port GUID becomes the dst node."""
        guids = port_guid_to_node or {}
        out: list[LinkKey] = []
        here_node, _ = self.src_guid, self.src_port
        for out_port, kind, guid, in_port in self.hops:
            if kind == "switch":
                there = guid
            elif guid in guids:
                there = guids[guid].node
            else:
                there = self.dst_guid
            out.append(LinkKey.of(PortRef(here_node, out_port), PortRef(there, in_port)))
            here_node = there
        return tuple(out)


_ITR_FROM = re.compile(r"^From (ca|switch) \{(0x[0-9a-fA-F]+)\} portnum (\d+) lid [\d-]+ \"(.*)\"$")
_ITR_HOP = re.compile(r"^\[(\d+)\] -> (ca|switch) port \{(0x[0-9a-fA-F]+)\}\[(\d+)\] lid [\d-]+ \"(.*)\"$")
_ITR_TO = re.compile(r"^To (ca|switch) \{(0x[0-9a-fA-F]+)\} portnum (\d+) lid [\d-]+ \"(.*)\"$")


def parse_ibtracert(text: str, source: str = "ibtracert") -> IbTrace:
    """Parse ``ibtracert <src lid> <dst lid>``: From, one line per hop, To."""
    src: re.Match[str] | None = None
    dst: re.Match[str] | None = None
    hops: list[tuple[int, str, str, int]] = []
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if src is None:
            src = _ITR_FROM.match(line)
            if src is None:
                raise ParseError(source, no, raw, "expected 'From ca {guid} portnum N ...'")
            continue
        m = _ITR_HOP.match(line)
        if m and dst is None:
            hops.append((int(m.group(1)), m.group(2), guid_id(m.group(3)), int(m.group(4))))
            continue
        m = _ITR_TO.match(line)
        if m and dst is None:
            dst = m
            continue
        raise ParseError(source, no, raw, "not an ibtracert hop")
    if src is None or dst is None or not hops:
        raise ParseError(source, 0, "", "no 'To ...' line: output ends early")
    return IbTrace(guid_id(src.group(2)), int(src.group(3)), guid_id(dst.group(2)), int(dst.group(3)), tuple(hops))
