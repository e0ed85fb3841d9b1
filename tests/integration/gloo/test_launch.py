"""Launchers: argv lists only, hard timeouts that kill the process group, gloo pair tests on loopback."""

from __future__ import annotations

import time

import pytest
from fabricdoc.probes.bandwidth.launch import (
    LocalLauncher,
    PairSpec,
    run_pair,
)

from fabricdoc.model.records import PortRef

A, B = PortRef("node0001", 1), PortRef("node0002", 1)


torch_needed = pytest.mark.gloo


@torch_needed
def test_gloo_sendrecv_on_loopback_measures_bandwidth():
    pytest.importorskip("torch")
    r = run_pair(LocalLauncher(), PairSpec(A, B, size_bytes=1 << 20, iters=2, port=29571, expected_gbps=100.0), 120)
    assert r.status == "ok", r.error
    assert r.busbw_gbps and r.busbw_gbps > 0 and r.wrong == 0
    assert r.ratio == pytest.approx(r.busbw_gbps / 100.0)


@torch_needed
def test_gloo_all_reduce_corruption_is_wrong_not_slow():
    pytest.importorskip("torch")
    spec = PairSpec(A, B, test="all_reduce", size_bytes=1 << 20, iters=2, port=29572, extra_args=("--inject-wrong", "3"))
    r = run_pair(LocalLauncher(), spec, 120)
    assert r.status == "wrong", r.error
    assert r.wrong == 6  # both ranks check their reduced buffer
    assert r.busbw_gbps is not None


class _PeerDies(LocalLauncher):
    """Rank 1 never starts: rank 0 blocks in the rendezvous like a collective whose peer died."""

    def procs(self, spec, timeout_s):
        return super().procs(spec, timeout_s)[:1]


@torch_needed
def test_pair_whose_peer_died_is_killed_and_recorded_hung():
    pytest.importorskip("torch")
    started = time.monotonic()
    r = run_pair(_PeerDies(), PairSpec(A, B, port=29573, round=3), timeout_s=8)
    assert r.status == "hung" and r.round == 3 and (r.src, r.dst) == (A, B)
    assert time.monotonic() - started < 20
