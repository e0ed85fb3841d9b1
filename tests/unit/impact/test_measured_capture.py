"""The AllReduce model against a real gloo measurement captured in tests/data/gloo (see
tests/integration/gloo/test_measured.py, which makes it)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.measured import (
    CAPTURE,
    RATE_MBIT,
    SLOW_MBIT,
    busbw,
    check,
    off_ring,
    on_ring,
    predicted_ratio,
)


def test_model_gloo_ring_slows_to_the_cable_rate_only_when_it_crosses_the_cable():
    assert predicted_ratio(on_ring) == pytest.approx(SLOW_MBIT / RATE_MBIT)
    assert predicted_ratio(off_ring) == pytest.approx(1.0)


def test_captured_measurement_slowdowns_match_the_model_within_20_percent():
    data = json.loads((CAPTURE / "measurement.json").read_text())
    check(busbw(data["on_ring"]) / busbw(data["healthy"]), predicted_ratio(on_ring))
    check(busbw(data["off_ring"]) / busbw(data["healthy"]), predicted_ratio(off_ring))
