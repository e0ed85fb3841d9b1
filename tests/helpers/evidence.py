"""Typed evidence as localization writes it, for tests that build findings by hand."""

from __future__ import annotations

from fabricdoc.model.evidence import (
    CounterEvidence,
    PairSample,
    SlowPairsEvidence,
    StateEvidence,
    SwitchLinksEvidence,
)


def slow_pairs(median: float, *, tests: int = 4, expected_gbps: float = 400.0,
               src: tuple[str, int] = ("gpu0001", 1), dst: tuple[str, int] = ("gpu0005", 1)) -> SlowPairsEvidence:
    """Every test through the cable slow at ``median`` of ``expected_gbps``."""
    sample = PairSample(src, dst, "ok", round(median * expected_gbps, 3), expected_gbps, median)
    return SlowPairsEvidence(tests=tests, slow=tests, worst_ratio=median, median_ratio=median,
                             slow_pairs=(sample,) * tests)


def symbol_errors(node: str, port: int, delta: int = 5000, interval_s: float = 10.0) -> CounterEvidence:
    return CounterEvidence(node=node, port=port, counter="symbol_errors", delta=float(delta),
                           per_second=delta / interval_s, interval_s=interval_s, raw=("SymbolErrorCounter",))


def trained(node: str, port: int, lanes: int, supported: int = 4) -> StateEvidence:
    return StateEvidence(node=node, port=port, state="Active", phys_state="LinkUp", lanes=lanes,
                         supported_lanes=supported, source="iblinkinfo")


def port_down(node: str, port: int) -> StateEvidence:
    return StateEvidence(node=node, port=port, state="Down", phys_state="Polling", source="iblinkinfo")


def switch_links(bad: int, total: int, down: int) -> SwitchLinksEvidence:
    return SwitchLinksEvidence(bad, total, down)
