"""A finding's key names the same fault on the same part in every sweep, whatever else the sweep found."""

from __future__ import annotations

import json

from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover

from fabricdoc.analysis.localize import localize
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.infiniband import fabric_from_ib
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortRef
from fabricdoc.report.report import Report
from fabricdoc.sources.sim.simulator import Simulator
from tests.helpers.paths import DATA

SEQUOIA = DATA / "ibnetdiscover" / "real_gary_sequoia_ndr_ibdiagnet2_mlx5_naming" / "ibdiagnet2.ibnetdiscover"


def _findings(faults):
    fabric = fat_tree_2(4, 2, 2)
    result = Simulator(fabric, faults, seed=3).run(plan_sweep(fabric).rounds)
    return localize(result.observed, result.observations)


def test_the_same_fault_keeps_its_key_and_id_when_other_findings_change_its_place():
    lossy = Fault("lossy", port=PortRef("leaf02", 3))
    alone = _findings([lossy])
    crowded = _findings([lossy, Fault("down", port=PortRef("node0005", 1)), Fault("dead_switch", switch="spine02")])
    (first,) = [f for f in alone if f.fault == "symbol_errors"]
    (again,) = [f for f in crowded if f.fault == "symbol_errors"]
    assert alone.index(first) != crowded.index(again)  # the order follows severity, so it moved
    assert first.key == again.key and first.id == again.id == first.tag
    assert len({f.id for f in crowded}) == len(crowded)
    assert first.key.startswith("link:") and first.key.endswith(":symbol_errors")


def test_the_key_changes_with_the_fault_and_with_the_part():
    a = Finding("F001", "link", "x", "flapping", "error", 0.9, endpoints=[("a", 1), ("b", 2)], node_ids=["A", "B"])
    b = Finding("F001", "link", "x", "down", "error", 0.9, endpoints=[("a", 1), ("b", 2)], node_ids=["A", "B"])
    c = Finding("F001", "link", "x", "flapping", "error", 0.9, endpoints=[("a", 1), ("b", 3)], node_ids=["A", "B"])
    assert len({a.key, b.key, c.key}) == 3
    assert len({a.tag, b.tag, c.tag}) == 3 and all(len(t) == 6 for t in (a.tag, b.tag, c.tag))


def test_the_key_does_not_depend_on_which_end_is_listed_first_or_on_labels():
    one = Finding("", "link", "a[1] -- b[2]", "down", "error", 0.9, endpoints=[("a", 1), ("b", 2)], node_ids=["A", "B"])
    other = Finding("", "link", "renamed", "down", "error", 0.9, endpoints=[("bb", 2), ("aa", 1)], node_ids=["B", "A"])
    assert one.key == other.key == "link:A/1~B/2:down"


def test_on_infiniband_the_key_is_guids_and_ports():
    path = SEQUOIA
    fabric = fabric_from_ib(parse_ibnetdiscover(path.read_text(), str(path), partial=True))
    key = next(k for k in fabric.links if "host" in (fabric.nodes[k.a.node].kind, fabric.nodes[k.b.node].kind))
    a, b = key.a, key.b
    f = Finding("", "link", "x", "down", "error", 0.9,
                endpoints=[(fabric.label(a.node), a.port), (fabric.label(b.node), b.port)], node_ids=[a.node, b.node])
    assert f.component == "~".join(sorted([f"{a.node}/{a.port}", f"{b.node}/{b.port}"]))
    assert all(part.split("/")[0].startswith("0x") for part in f.component.split("~"))


def test_keys_survive_the_report_round_trip_gpu_included(tmp_path):
    fabric = fat_tree_2(2, 1, 2)
    gpu = Finding("", "gpu", "node0001 GPU 3", "gpu_error", "error", 0.9, node_ids=["node0001"],
                  component="GPU-5b1f6a0e-3c2d-4e1b-9a7f-0c1d2e3f4a5b")
    result = Simulator(fabric, [Fault("down", port=PortRef("node0002", 1))], seed=1).run(plan_sweep(fabric).rounds)
    findings = localize(result.observed, result.observations) + [gpu]
    report = Report.build(result.observed, findings, result.observations, duration_s=1.0)
    path = tmp_path / "r.json"
    report.save(path)
    data = json.loads(path.read_text())
    assert [f["key"] for f in data["findings"]] == [f.key for f in findings]
    back = Report.load(path)
    assert [f.key for f in back.findings] == [f.key for f in findings]
    assert "gpu:GPU-5b1f6a0e-3c2d-4e1b-9a7f-0c1d2e3f4a5b:gpu_error" in [f.key for f in back.findings]
    assert all(k in {f.key for f in findings} for d in data["drain"] for k in d["findings"])


def test_findings_whose_six_digits_clash_get_longer_ids_and_the_rest_keep_six(monkeypatch):
    from fabricdoc.model import findings as fmod

    real = fmod.short_hash

    def clashing(text: str, digits: int = 6) -> str:  # two keys that share their first six digits
        out = real(text, digits)
        return ("abcdef" + out[6:]) if ("clash" in text and digits == 6) else out

    monkeypatch.setattr(fmod, "short_hash", clashing)
    fs = [Finding("", "host", n, "clash_fault", "error", 0.9, node_ids=[n]) for n in ("a", "b")]
    fs.append(Finding("", "host", "c", "down", "error", 0.9, node_ids=["c"]))
    fmod.assign_ids(fs)
    assert [len(f.id) for f in fs] == [8, 8, 6]
    assert fs[0].id != fs[1].id and fs[0].id == real(fs[0].key, 8) and fs[2].id == real(fs[2].key)


def test_a_report_saved_with_old_numbered_ids_loads_with_stable_ids():
    f = Finding("", "host", "node0001", "down", "error", 0.9, node_ids=["node0001"])
    d = f.to_dict() | {"id": "F001"}
    assert Finding.from_dict(d).id == f.tag
