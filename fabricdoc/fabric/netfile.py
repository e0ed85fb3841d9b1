"""A generated Fabric as an ibsim net file (ibnetdiscover syntax plus ibsim's GUID lines). Pure."""

from __future__ import annotations

from collections.abc import Mapping

from fabricdoc.errors import TopologyError
from fabricdoc.model.ib import IB_SPEEDS
from fabricdoc.model.records import PortRef
from fabricdoc.model.topology import Fabric

_NETFILE_SPEEDS = ("SDR", "DDR", "QDR", "FDR", "EDR", "HDR")  # what ibsim 0.10 parses (no NDR)
_RESERVED = set('#@"[]\n\r\t')


def speed_name(lane_gbps: float) -> str:
    """The IB speed name closest to a lane rate that ibsim can train (100 -> HDR, 25 -> EDR, 10 -> QDR)."""
    return min(_NETFILE_SPEEDS, key=lambda n: abs(IB_SPEEDS[n] - lane_gbps))


def _check_name(text: str, what: str) -> str:
    bad = sorted(_RESERVED & set(text))
    if bad or not text or len(text) > 63:
        raise TopologyError(
            f"{what} {text!r} cannot be an ibsim node id or description "
            "(1-63 characters, no '#', '@', quotes, brackets or control characters)"
        )
    return text


def _ibsim_nodes(fabric: Fabric) -> dict[PortRef, tuple[str, int]]:
    """Where each fabricdoc port lands in ibsim: a multi-port host becomes one single-port HCA per port."""
    where: dict[PortRef, tuple[str, int]] = {}
    for node in fabric.nodes.values():
        for p in range(1, node.num_ports + 1):
            if node.kind == "host" and node.num_ports > 1:
                where[PortRef(node.id, p)] = (f"{node.id}-mlx5_{p - 1}", 1)
            else:
                where[PortRef(node.id, p)] = (node.id, p)
    return where


def write_netfile(fabric: Fabric) -> str:
    """The fabric as an ibsim net file, in ibnetdiscover syntax plus ibsim's ``*guid=`` lines.

    Node ids in the file are the fabricdoc node ids (so console commands read
    ``Unlink "leaf01"[5]``) and descriptions are the labels. Each node's GUID is
    set with a ``switchguid=``/``caguid=`` line and LIDs with ``lid N``. A host
    with several ports is written as one HCA per port, described
    ``"<label> mlx5_<i>"`` like a real multi-rail server, GUID = host GUID + ``i << 40``.
    Each port line ends like ibnetdiscover's, ``lid <remote> 4xNDR``, which ibsim
    reads as that port's enabled width and speed: a degraded link (``lanes`` or
    ``lane_gbps`` below its maximum) is written degraded on one end and at its
    maximum on the other, so ibsim trains it down and both ends still support more.
    """
    where = _ibsim_nodes(fabric)
    lids = _lids(fabric)
    out = [
        f"# ibsim net file written by fabricdoc for {fabric.name!s}",
        f"# {len(fabric.hosts())} hosts, {len(fabric.switches())} switches, {len(fabric.links)} links",
        "",
    ]
    # ibsim attaches clients (OpenSM, the diags) to the first node in the file: a top switch,
    # so that unlinking a leaf or a host never cuts the SM off from the rest of the fabric.
    switches = sorted(fabric.switches(), key=lambda n: (-int(n.attrs.get("level", 1)), n.id))
    for node in switches:
        _check_name(node.id, "switch id")
        _check_name(node.label, "switch label")
        if node.guid:
            out.append(f"switchguid={node.guid}")
        lid = f" lid {node.lid} lmc 0" if node.lid else ""
        out.append(f'Switch\t{node.num_ports} "{node.id}"\t# "{node.label}" enhanced port 0{lid}')
        for p in range(1, node.num_ports + 1):
            line = _port_line(fabric, where, lids, PortRef(node.id, p), p)
            if line:
                out.append(line)
        out.append("")
    for node in sorted(fabric.hosts(), key=lambda n: n.id):
        _check_name(node.label, "host label")
        for p in range(1, node.num_ports + 1):
            ref = PortRef(node.id, p)
            ca_id, _ = where[ref]
            _check_name(ca_id, "host id")
            if node.guid:
                out.append(f"caguid=0x{int(node.guid, 16) + ((p - 1) << 40):016x}")
            desc = node.label if node.num_ports == 1 else f"{node.label} mlx5_{p - 1}"
            out.append(f'Hca\t1 "{ca_id}"\t# "{desc}"')
            line = _port_line(fabric, where, lids, ref, 1)
            if line:
                out.append(line)
            out.append("")
    return "\n".join(out) + "\n"


def _lids(fabric: Fabric) -> dict[PortRef, int]:
    """The LID a port answers on: the switch LID for switch ports, the port LID for host ports."""
    out: dict[PortRef, int] = dict(fabric.port_lids)
    for node in fabric.switches():
        if node.lid:
            for p in range(1, node.num_ports + 1):
                out[PortRef(node.id, p)] = node.lid
    return out


def _port_line(
    fabric: Fabric,
    where: Mapping[PortRef, tuple[str, int]],
    lids: Mapping[PortRef, int],
    ref: PortRef,
    local_port: int,
) -> str | None:
    peer = fabric.peer(ref)
    link = fabric.link_at(ref)
    if peer is None or link is None or link.state == "down":
        return None
    remote_id, remote_port = where[peer]
    max_lanes = link.max_lanes or link.lanes
    max_gbps = link.max_lane_gbps or link.lane_gbps
    degraded_end = ref == link.key.a
    lanes = link.lanes if degraded_end else max_lanes
    gbps = link.lane_gbps if degraded_end else max_gbps
    conn = f"lid {lids.get(peer, 0)} {lanes}x{speed_name(gbps)}"
    remote_label = fabric.label(peer.node)
    node = fabric.nodes[ref.node]
    if node.kind == "switch":
        return f'[{local_port}]\t"{remote_id}"[{remote_port}]\t# "{remote_label}" {conn}'
    return f'[{local_port}]\t"{remote_id}"[{remote_port}]\t# lid {lids.get(ref, 0)} lmc 0 "{remote_label}" {conn}'
