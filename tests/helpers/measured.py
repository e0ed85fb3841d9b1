"""The AllReduce-model measurement shared by the gloo lab test and the check of its capture.

Four hosts, two leaves, two spines, every cable 100 Mbit/s; one leaf-spine cable at
25 Mbit/s, either the cable gloo's ring crosses (gloo's ring sends to rank-1, and
routes are destination-based, so that is the route node0003 -> node0002) or one it
does not cross. The model's prediction is its now/nominal busbw ratio (ring_step=-1).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import tests.helpers.allreduce_worker as allreduce_worker
import tests.helpers.netns_lab as netns_lab
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.model.records import PortRef
from tests.helpers.paths import DATA

WORKER = Path(allreduce_worker.__file__)
CAPTURE = DATA / "gloo" / "allreduce_shaped_link"
RATE_MBIT, SLOW_MBIT = 100.0, 25.0
SIZE = 4 << 20


def lab_fabric():
    return fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2, lanes=1, lane_gbps=RATE_MBIT / 1000)


def uplinks(fabric, src: str, dst: str):
    path = fabric.path(PortRef(src, 1), PortRef(dst, 1))
    return [k for k in path if {fabric.nodes[k.a.node].kind, fabric.nodes[k.b.node].kind} == {"switch"}]


def on_ring(fabric):
    """The cable leaving leaf02 on gloo's ring edge node0003 -> node0002."""
    return uplinks(fabric, "node0003", "node0002")[0]


def off_ring(fabric):
    """A leaf-spine cable no edge of gloo's ring crosses (in either direction)."""
    used = set(uplinks(fabric, "node0003", "node0002")) | set(uplinks(fabric, "node0001", "node0004"))
    return next(k for k in sorted(fabric.links, key=str)
                if k not in used and {fabric.nodes[k.a.node].kind, fabric.nodes[k.b.node].kind} == {"switch"})


def busbw(records: list[dict]) -> float:
    assert all(r["wrong"] == 0 for r in records)
    return min(r["busbw_gbps"] for r in records)  # the slowest rank finishes the collective


def predicted_ratio(pick) -> float:
    fabric = lab_fabric()
    fabric.links[pick(fabric)].lane_gbps = SLOW_MBIT / 1000  # trained rate; max_lane_gbps stays the healthy rate
    model = ImpactModel(fabric, ring_step=-1)
    return model.busbw(state="now") / model.busbw(state="nominal")


def check(measured: float, predicted: float) -> None:
    assert abs(measured - predicted) <= 0.2 * predicted, (measured, predicted)


def lab_module(prefix: str) -> ModuleType:
    """tests/helpers/netns_lab.py loaded as a module object of its own, creating only ``prefix`` names,
    so two test files' labs never share (or tear down) each other's namespaces."""
    spec = importlib.util.spec_from_file_location(f"{prefix}_netns_lab", Path(netns_lab.__file__))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up here
    spec.loader.exec_module(mod)
    mod.PREFIX, mod.NS_PREFIX = prefix, f"{prefix}-"
    return mod


def usable_lab(prefix: str) -> ModuleType:
    """:func:`lab_module` for a test that needs torch and network namespaces: skipped when either is missing."""
    import pytest

    pytest.importorskip("torch")
    mod = lab_module(prefix)
    why = mod.netns_available()
    if why:
        pytest.skip(why)
    return mod


def measure(lab, fabric, master_port: str, timeout_s: float = 150.0) -> list[dict]:
    """One gloo all_reduce over every host of ``lab`` (rank order: sorted host ids), each rank's record."""
    ports = [fabric.host_ports(h)[0] for h in sorted(h.id for h in fabric.hosts())]
    master = lab.address_of(ports[0])
    procs = []
    for rank, port in enumerate(ports):
        env = {**os.environ, "GLOO_SOCKET_IFNAME": lab.ifname_of(port), "OMP_NUM_THREADS": "1"}
        argv = ["ip", "netns", "exec", lab.namespace_of(port), sys.executable, str(WORKER),
                "--rank", str(rank), "--world", str(len(ports)), "--master-addr", master,
                "--master-port", master_port, "--size-bytes", str(SIZE), "--iters", "3", "--warmup", "1"]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, start_new_session=True))
    records = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout_s)
            lines = [ln for ln in out.splitlines() if ln.startswith("FDIM_ALLREDUCE ")]
            assert p.returncode == 0 and lines, f"rank failed ({p.returncode}): {err[-600:]}"
            records.append(json.loads(lines[-1].split(" ", 1)[1]))
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
    return records
