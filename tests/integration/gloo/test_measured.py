"""The AllReduce model against real measurements: gloo over a namespace leaf/spine with tc-shaped links.

Four hosts, two leaves, two spines, every cable a veth pair shaped with tbf to
100 Mbit/s (the bandwidth helpers' lab, tests/helpers/netns_lab.py, run here under
our own ``fdim`` names). One lab serves the module: a 4-rank gloo all_reduce is
timed healthy and then with the leaf-spine cable gloo's ring crosses shaped to
25 Mbit/s (gloo's ring sends to rank-1, and routes are destination-based, so
that is the route node0003 -> node0002); both tests read those two measurements.

- The model: each measured slowdown ratio must be within 20% of the model's
  now/nominal ratio on the matching Fabric (that cable trained at 25 of
  100 Mbit/s, ring_step=-1), for the ring's cable and, shaped instead, a cable
  the ring does not cross.
- Isolation: with the ring's slow cable taken out of service the way a subnet
  manager does it (the cable set down, every switch's routes reinstalled from the
  routes :meth:`ImpactModel.isolation_state` computed around it), the busbw over
  the healthy one must be within 20% of the model's prediction (``what_if`` with
  that cable isolated over nominal); the slow cable must have bound the ring first
  (at most twice the model's slowdown: the model test holds that figure to 20%).
  Measured here: healthy 90.6 Mbit/s, slow 0.265 (model 0.250), out of service 1.013 (model 1.000).

The rates are low so that the shaping, not the shared CPUs, is the limit: at
200 Mbit/s the healthy ring only reached ~75% of the rate (most likely a fixed per-segment
latency in gloo's two-deep pipeline), at 100 Mbit/s it reaches ~90%.

Set FABRICDOC_CAPTURE=1 to rewrite tests/data/gloo/allreduce_shaped_link/.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pytest

from fabricdoc.impact.busbw import ImpactModel
from tests.helpers.measured import (
    CAPTURE,
    RATE_MBIT,
    SIZE,
    SLOW_MBIT,
    busbw,
    check,
    lab_fabric,
    measure,
    off_ring,
    on_ring,
    predicted_ratio,
    usable_lab,
)

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow]

MASTER_PORT = "29517"


@dataclass
class RingLab:
    """The module's lab, left with the ring's cable at SLOW_MBIT and every other cable at RATE_MBIT
    (a test that changes that puts it back), and the two measurements both tests read."""

    lab: Any
    fabric: Any
    healthy: list[dict]
    slow_on: list[dict]


@pytest.fixture(scope="module")
def ring():
    mod = usable_lab("fdim")
    fabric = lab_fabric()
    with mod.NetnsLab(fabric) as lab:
        healthy = measure(lab, fabric, MASTER_PORT)
        lab.degrade(on_ring(fabric), rate_mbit=SLOW_MBIT)
        yield RingLab(lab, fabric, healthy, measure(lab, fabric, MASTER_PORT))


def test_measured_gloo_allreduce_slowdown_matches_the_model_within_20_percent(ring):
    lab, fabric, healthy, slow_on = ring.lab, ring.fabric, ring.healthy, ring.slow_on
    on, off = on_ring(fabric), off_ring(fabric)
    try:
        lab.degrade(on, rate_mbit=RATE_MBIT)
        lab.degrade(off, rate_mbit=SLOW_MBIT)
        slow_off = measure(lab, fabric, MASTER_PORT)
    finally:
        lab.degrade(off, rate_mbit=RATE_MBIT)
        lab.degrade(on, rate_mbit=SLOW_MBIT)
    ratios = {"on_ring": busbw(slow_on) / busbw(healthy), "off_ring": busbw(slow_off) / busbw(healthy)}
    predicted = {"on_ring": predicted_ratio(on_ring), "off_ring": predicted_ratio(off_ring)}
    if os.environ.get("FABRICDOC_CAPTURE"):
        CAPTURE.mkdir(parents=True, exist_ok=True)
        (CAPTURE / "measurement.json").write_text(json.dumps(
            {"fabric": f"fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2), tbf {RATE_MBIT:g} Mbit/s per veth end",
             "on_ring_link": str(on), "off_ring_link": str(off), "slow_mbit": SLOW_MBIT, "size_bytes": SIZE,
             "healthy": healthy, "on_ring": slow_on, "off_ring": slow_off,
             "measured_ratio": ratios, "predicted_ratio": predicted}, indent=2) + "\n")
    # the healthy ring runs near the shaped rate, so the shaping (not CPU or veth) is the limit
    assert 0.5 * RATE_MBIT / 1000 <= busbw(healthy) <= 1.05 * RATE_MBIT / 1000
    check(ratios["on_ring"], predicted["on_ring"])
    check(ratios["off_ring"], predicted["off_ring"])


def _predicted() -> tuple[float, float, ImpactModel]:
    """Model ratios to nominal: the slow cable in the ring, and that cable out of service."""
    fabric = lab_fabric()
    slow = on_ring(fabric)
    fabric.links[slow].lane_gbps = SLOW_MBIT / 1000  # trained rate; max_lane_gbps stays the healthy rate
    model = ImpactModel(fabric, ring_step=-1)
    nominal = model.busbw(state="nominal")
    isolated = model.what_if([], ("ring",), isolate_links=[slow])
    return model.busbw(state="now") / nominal, isolated["busbw_gbps"] / nominal, model


def test_taking_the_slow_cable_out_of_service_restores_the_measured_busbw_the_model_predicts(ring):
    predicted_slow, predicted_isolated, model = _predicted()
    lab, fabric, healthy, degraded = ring.lab, ring.fabric, ring.healthy, ring.slow_on
    slow = on_ring(fabric)
    rerouted = model.routes[model.isolation_state([slow])]
    # The rerouted ring avoids the cable: the prediction depends on it, and so does the lab's routing.
    assert all(slow not in rerouted.path(s, d) for s in rerouted.host_ports() for d in rerouted.host_ports() if s != d)
    try:
        lab.link_down(slow)
        lab.fabric = rerouted  # the same nodes, ports and addresses; routes around the cable
        lab._routes()
        isolated = measure(lab, rerouted, MASTER_PORT)
    finally:  # back in service, on the original routes: the state the module's lab promises
        lab.link_up(slow)
        lab.fabric = fabric
        lab._routes()
    measured_slow = busbw(degraded) / busbw(healthy)
    measured_isolated = busbw(isolated) / busbw(healthy)
    print(f"healthy {busbw(healthy) * 1000:.1f} Mbit/s; slow cable {measured_slow:.3f} (model {predicted_slow:.3f}); "
          f"out of service {measured_isolated:.3f} (model {predicted_isolated:.3f})")
    assert 0.5 * RATE_MBIT / 1000 <= busbw(healthy) <= 1.05 * RATE_MBIT / 1000
    # The slow cable really bound the ring (the model test holds that figure to 20% of the model),
    # so restoring the rate is the isolation's doing, not a cable that never mattered.
    assert measured_slow <= 2 * predicted_slow
    check(measured_isolated, predicted_isolated)
