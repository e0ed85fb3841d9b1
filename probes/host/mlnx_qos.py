"""QoS trust state and DSCP-to-priority map of a RoCE interface, read with MLNX_OFED's ``mlnx_qos -i IFNAME``.

Output (Mellanox/mlnx-tools ``mlnx_qos``, ``pretty_print``)::

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
            prio:0 dscp:07,06,05,04,03,02,01,00,
            ...
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0

Hosts must agree on whether priorities come from the DSCP or the PCP field and on the DSCP map, or
RoCE traffic lands in a lossy queue on some of them. Without ``mlnx_qos`` (the inbox driver) the
trust state is not exposed, so there is nothing to check (``n/a``), as for OFED's ``tc/`` files.
"""

from __future__ import annotations

import re
import shutil

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import refuse_long_numbers
from fabricdoc.model.records import HostCheck

_TRUST = re.compile(r"^Priority trust state:\s*(\w+)\s*$")
_MAP = re.compile(r"^prio:(\d)\s+dscp:([\d,]*)\s*$")
_ENABLED = re.compile(r"^enabled((?:\s+[01])+)\s*$")


def parse_mlnx_qos(text: str, source: str = "mlnx_qos") -> dict[str, object]:
    """``{"trust": "dscp", "dscp2prio": {dscp: prio}, "pfc_prios": [3]}``; lines it does not use are skipped,
    but output without a trust state is a ParseError."""
    refuse_long_numbers(text, source)
    trust: str | None = None
    mapping: dict[int, int] = {}
    pfc: list[int] | None = None
    for no, line in enumerate(text.splitlines(), 1):
        body = line.strip()
        if m := _TRUST.match(body):
            trust = m.group(1)
        elif m := _MAP.match(body):
            for d in filter(None, m.group(2).split(",")):
                if not 0 <= int(d) <= 63:
                    raise ParseError(source, no, line[:120], "a DSCP outside 0-63")
                mapping[int(d)] = int(m.group(1))
        elif m := _ENABLED.match(body):
            pfc = [i for i, v in enumerate(m.group(1).split()) if v == "1"]
    if trust is None:
        raise ParseError(source, 0, text.strip().splitlines()[0][:120] if text.strip() else "",
                         "no 'Priority trust state' line: not mlnx_qos output")
    return {"trust": trust, "dscp2prio": mapping, "pfc_prios": pfc}


def dscp_map_text(mapping: dict[int, int]) -> str:
    """A DSCP map in a few words: ``default`` (DSCP d to priority d/8) or the DSCPs that differ (``46>3``)."""
    odd = [f"{d}>{p}" for d, p in sorted(mapping.items()) if p != d >> 3]
    missing = 64 - len(mapping)
    if not odd and not missing:
        return "default"
    return ",".join(odd) + (f" ({missing} unmapped)" if missing else "")


def qos_check(node: str, ifname: str, port: int | None = None, netns: str | None = None,
              timeout_s: float = 10.0) -> HostCheck:
    """The ``qos_trust`` check of one interface: ok with its trust state (and DSCP map when trusting DSCP),
    n/a without ``mlnx_qos``, unknown when it ran and could not be read."""
    def check(status: str, reason: str, values: dict | None = None) -> HostCheck:
        return HostCheck(node, "qos_trust", status, ifname, reason, values or {}, port=port)  # type: ignore[arg-type]

    tool = shutil.which("mlnx_qos")
    if tool is None:
        return check("n/a", "MLNX_OFED's mlnx_qos is not installed: the inbox driver exposes no trust state")
    out, err = px.read_tool([tool, "-i", ifname], timeout_s=timeout_s, tool="mlnx_qos", netns=netns)
    if out is None:
        return check("unknown", f"mlnx_qos -i {ifname}: {err}")
    try:
        parsed = parse_mlnx_qos(out, f"mlnx_qos -i {ifname}")
    except ParseError as exc:
        return check("unknown", str(exc))
    trust = str(parsed["trust"])
    values: dict[str, object] = {"trust": trust}
    reason = f"trust {trust}"
    if trust == "dscp":
        values["dscp_map"] = dscp_map_text(parsed["dscp2prio"])  # type: ignore[arg-type]
        reason += f", DSCP map {values['dscp_map']}"
    return check("ok", reason, values)
