"""PFC configuration of an Ethernet (RoCE) interface, read with iproute2's ``dcb pfc show dev IFNAME``.

Output (iproute2 ``dcb/dcb_pfc.c``; each token is followed by a space)::

    pfc-cap 8 macsec-bypass off delay 4096
    prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off

A driver without DCB (veth, most virtual NICs) makes ``dcb`` fail with ``Operation not
supported``: nothing to check there (``n/a``). Hosts must agree on which priorities are lossless,
so the check keeps them (``values["pfc_prios"]``, e.g. ``"3"``) for the analysis to compare.
"""

from __future__ import annotations

import re
import shutil

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import BadNumber, read_int
from fabricdoc.model.records import HostCheck

_CAP = re.compile(r"^pfc-cap (\d+) macsec-bypass (on|off) delay (\d+)\s*$")
_PRIO = re.compile(r"^prio-pfc((?: [0-7]:(?:on|off))+)\s*$")
NOT_SUPPORTED = "Operation not supported"


def parse_dcb_pfc(text: str, source: str = "dcb pfc show") -> dict[str, object]:
    """``{"pfc_cap": 8, "pfc_prios": [3]}`` from ``dcb pfc show dev IFNAME``; ParseError on any other line."""
    cap: int | None = None
    prios: list[int] | None = None
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            if m := _CAP.match(line.strip()):
                cap = read_int(m.group(1), "pfc-cap", 0, 8)
                continue
            if m := _PRIO.match(line.strip()):
                prios = sorted(read_int(p, "priority", 0, 7) for p, state in (t.split(":") for t in m.group(1).split())
                               if state == "on")
                continue
        except (BadNumber, ValueError) as exc:
            raise ParseError(source, no, line[:120], f"not a 'dcb pfc show' line: {exc}") from None
        if not line.startswith(("requests ", "indications ")):
            raise ParseError(source, no, line[:120], "not a 'dcb pfc show' line")
    if prios is None:
        raise ParseError(source, 0, "", "no 'prio-pfc' line")
    return {"pfc_cap": cap, "pfc_prios": prios}


def pfc_check(node: str, ifname: str, port: int | None = None, netns: str | None = None,
              timeout_s: float = 5.0) -> HostCheck:
    """The ``pfc`` check of one interface: ok with its lossless priorities, n/a without DCB, unknown
    when it could not be read (no ``dcb`` command, a timeout, an error or output it cannot read)."""
    def check(status: str, reason: str, values: dict | None = None) -> HostCheck:
        return HostCheck(node, "pfc", status, ifname, reason, values or {}, port=port)  # type: ignore[arg-type]

    dcb = shutil.which("dcb")
    if dcb is None:
        return check("unknown", "the dcb command (iproute2 >= 5.11) is not installed: PFC not read")
    out, err = px.read_tool([dcb, "pfc", "show", "dev", ifname], timeout_s=timeout_s, tool="dcb", netns=netns)
    if out is None:
        if NOT_SUPPORTED in err:
            return check("n/a", f"no DCB on this interface (dcb: {err})")
        return check("unknown", f"dcb pfc show dev {ifname}: {err}")
    try:
        parsed = parse_dcb_pfc(out, f"dcb pfc show dev {ifname}")
    except ParseError as exc:
        return check("unknown", str(exc))
    prios = parsed["pfc_prios"]
    shown = ",".join(map(str, prios)) if prios else "none"  # type: ignore[call-overload]
    reason = f"PFC on priorities {shown}" if prios else "PFC off on every priority"
    return check("ok", reason, {"pfc_prios": shown, "pfc_cap": parsed["pfc_cap"]})
