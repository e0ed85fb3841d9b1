"""Fixed reports for the TUI tests: a simulated sweep with real localization, and hostile labels."""

from __future__ import annotations

import pytest

from fabricdoc.generators import fat_tree_2
from fabricdoc.localize import localize
from fabricdoc.model import Evidence, Finding, PortRef
from fabricdoc.report import Report
from fabricdoc.sim import Fault, Simulator

MARKUP_LABEL = "[red]x[/red]"
CLICK_LABEL = "[@click=quit]"
GENERATED_AT = "2025-01-01T00:00:00+00:00"


def make_report() -> Report:
    """A 16-host leaf/spine with a lossy uplink, a down host cable and a flapping link.

    Two hosts carry labels that are Textual/rich markup, as a hostile or
    careless fabric description could.
    """
    fabric = fat_tree_2(4, 2, 4)
    for nid, label in (("node0003", MARKUP_LABEL), ("node0006", CLICK_LABEL)):
        fabric.nodes[nid].label = label
        fabric.nodes[nid].attrs["host"] = label
    hosts = [p for p in fabric.host_ports()]
    rounds = [[(hosts[i], hosts[(i + 4 + r) % len(hosts)]) for i in range(0, len(hosts), 2)] for r in range(3)]
    faults = [
        Fault("lossy", port=PortRef("leaf01", 5)),
        Fault("down", port=PortRef("node0006", 1)),
        Fault("flapping", port=PortRef("leaf03", 6)),
        Fault("slow", port=PortRef("node0003", 1), factor=0.4),
    ]
    sim = Simulator(fabric, faults, seed=1)
    result = sim.run(rounds)
    findings = localize(result.observed, result.observations)
    findings.append(
        Finding("F900", "host", MARKUP_LABEL, "gpu_error", "warning", 0.5,
                [Evidence("counter", {"node": MARKUP_LABEL, "port": 1, "counter": "[b]SymbolErrorCounter[/b]",
                                      "delta": 3, "per_second": 0.3, "history": [0, 1, 1, 2, 3]})],
                None, ["node0003"])
    )
    report = Report.build(result.observed, findings, result.observations, duration_s=12.5)
    report.generated_at = GENERATED_AT
    return report


@pytest.fixture(scope="session")
def report() -> Report:
    return make_report()


@pytest.fixture
def report_file(tmp_path, report):
    path = tmp_path / "report.json"
    report.save(path)
    return path
