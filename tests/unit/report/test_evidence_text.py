"""Each evidence kind reads from one declaration: its JSON Schema is generated from the dataclass and accepts
it, every field is described, the text report and the TUI say the same words, and hostile strings are escaped
in both."""

from __future__ import annotations

import jsonschema
import pytest

from fabricdoc.model.evidence import (
    EVIDENCE_KINDS,
    CandidatesEvidence,
    CorruptionEvidence,
    CounterEvidence,
    FlapEvidence,
    GpuEvidence,
    GroupLoadEvidence,
    HostEvidence,
    NcclLogEvidence,
    NotDiscoveredEvidence,
    NotRespondingEvidence,
    PairSample,
    SlowPairsEvidence,
    StateEvidence,
    SwitchLinksEvidence,
    evidence_from_dict,
)
from fabricdoc.report.evidence_schema import undescribed
from fabricdoc.report.evidence_text import WRITERS, evidence_details, evidence_line
from fabricdoc.report.schema import EVIDENCE_SCHEMAS

HOSTILE = "n\x1b[2J\u202eode"  # clears the screen, flips the text
SHOWN = "n\\x1b[2J\\u202eode"

ONE_OF_EACH = [
    CounterEvidence(HOSTILE, 5, "symbol_errors", 10.0, per_second=1.0, interval_s=10.0, raw=("SymbolErrorCounter",)),
    StateEvidence(HOSTILE, 2, "Down", "Polling", source="iblinkinfo"),
    NotRespondingEvidence(HOSTILE, 1, "leaf01", 3, "Active", "LinkUp", False, "iblinkinfo"),
    NotDiscoveredEvidence(HOSTILE, 1, "ibnetdiscover"),
    FlapEvidence(3, 1.7e9, 1.7e9 + 6, 30.0),
    SlowPairsEvidence(tests=4, slow=2, worst_ratio=0.5, median_ratio=0.6, equivalent_suspects=2,
                      alternatives=(((HOSTILE, 5), ("spine01", 1)),),
                      slow_pairs=(PairSample((HOSTILE, 1), ("node0002", 1), "ok", 200.0, 400.0, 0.5, 0.55),)),
    GroupLoadEvidence(tests=8, failing=6, failing_flows=4, passing_flows=2, worst_ratio=0.3, toward=(HOSTILE, 5)),
    CorruptionEvidence(1, ((HOSTILE, "node0002", 17),)),
    SwitchLinksEvidence(links_bad=4, links_total=6, links_down=1),
    GpuEvidence(HOSTILE, ("xid 79", HOSTILE)),
    CandidatesEvidence((HOSTILE, "cable b"), "a test through one", (((HOSTILE, 1), ("node0003", 1)),)),
    HostEvidence("mtu", HOSTILE, "1500 < 4096", "sysfs", 3),
    NcclLogEvidence("nccl.log", 12, f"NET/IB : Got completion with error 12 {HOSTILE}", HOSTILE, "remote timeout"),
]


def test_every_evidence_kind_is_declared_once_and_sampled_here():
    assert set(WRITERS) == set(EVIDENCE_KINDS.values())
    assert {type(ev) for ev in ONE_OF_EACH} == set(EVIDENCE_KINDS.values())
    assert [s["properties"]["type"]["const"] for s in EVIDENCE_SCHEMAS] == list(EVIDENCE_KINDS)


@pytest.mark.parametrize("cls", EVIDENCE_KINDS.values(), ids=lambda cls: cls.kind)
def test_every_kind_and_every_field_says_what_it_is(cls):
    assert undescribed(cls) == []
    (schema,) = [s for s in EVIDENCE_SCHEMAS if s["properties"]["type"]["const"] == cls.kind]

    def props(shape):
        for name, prop in shape.get("properties", {}).items():
            yield name, prop
            for inner in (prop.get("items"), *prop.get("oneOf", ())):
                if isinstance(inner, dict):
                    yield from props(inner)

    assert schema["description"]
    assert [name for name, prop in props(schema) if name != "type" and not prop.get("description")] == []


@pytest.mark.parametrize("ev", ONE_OF_EACH, ids=lambda ev: ev.kind)
def test_each_kind_validates_round_trips_and_reads_escaped(ev):
    data = ev.to_dict()
    (schema,) = [s for s in EVIDENCE_SCHEMAS if s["properties"]["type"]["const"] == ev.kind]
    jsonschema.validate(data, schema)
    assert evidence_from_dict(data) == ev
    text = evidence_line(ev) + "".join(t for line in evidence_details(ev) for t, _ in line)
    assert text and text.isprintable(), text
    assert HOSTILE not in text


@pytest.mark.parametrize("ev", ONE_OF_EACH, ids=lambda ev: ev.kind)
def test_the_tui_says_what_the_text_report_says(ev):
    pytest.importorskip("rich")
    from tests.helpers.tui import make_report
    from tui.evidence_view import evidence_text
    from tui.index import ReportIndex

    shown = evidence_text(ReportIndex(make_report()), [ev]).plain
    assert evidence_line(ev) in shown
    for line in evidence_details(ev):
        words = "".join(t for t, _ in line)
        assert words in shown or words.startswith("or "), (words, shown)  # the TUI names cables by its labels
    if HOSTILE in repr(ev):
        assert SHOWN in shown and HOSTILE not in shown
