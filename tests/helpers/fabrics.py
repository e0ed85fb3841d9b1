"""Fabrics built in tests where no generator or capture has the shape: hosts with one CA per HCA."""

from __future__ import annotations

from collections.abc import Sequence

from fabricdoc.fabric.identity import identify
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric


def multi_hca_hosts(hcas: Sequence[int], hosts: Sequence[str] = ("dgxa", "dgxb"), identified: bool = True,
                    spine: bool = False, reverse_guids_on: Sequence[str] = ()) -> Fabric:
    """Hosts as ibnetdiscover shows a DGX: one CA per HCA described ``<host> mlx5_<n>``, HCA ``n`` on the
    leaf of its rail (rails in device-number order), 4X NDR (400 Gb/s).

    ``identified``: named by identity as fabric_from_ib does (host, device, rail); else only
    ``attrs["host"]`` is set, as a fabric file may. ``spine`` joins the rail leaves, so a
    cross-rail path exists. ``reverse_guids_on``: hosts whose HCAs get GUIDs in the reverse order,
    so GUID order and rail order differ between hosts, as on real clusters.
    """
    fabric = Fabric("multi-hca")
    order = sorted(hcas)
    for r in range(len(hcas)):
        fabric.add_node(Node(f"leaf-r{r + 1}", "switch", f"leaf-r{r + 1}", len(hosts) + 1))
    if spine:
        fabric.add_node(Node("spine", "switch", "spine", len(hcas)))
        for r in range(len(hcas)):
            fabric.add_link(PortRef(f"leaf-r{r + 1}", len(hosts) + 1), PortRef("spine", r + 1), lanes=4, lane_gbps=100)
    guid = 0x0002C90300000000
    for h, host in enumerate(hosts):
        listed = list(reversed(hcas)) if host in reverse_guids_on else list(hcas)
        for idx in listed:
            guid += 1
            nid = f"0x{guid:016x}"
            attrs = {"ib_type": "Ca"} if identified else {"host": host}
            fabric.add_node(Node(nid, "host", f"{host} mlx5_{idx}", 1, guid=nid, attrs=attrs))
            fabric.add_link(PortRef(nid, 1), PortRef(f"leaf-r{order.index(idx) + 1}", h + 1), lanes=4, lane_gbps=100)
    if identified:
        identify(fabric)
    return fabric
