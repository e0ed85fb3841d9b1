"""The simulator as a bandwidth backend for the measure loop: pair rounds and group rounds, each a round at once."""

from __future__ import annotations

from collections.abc import Callable

from fabricdoc.bandwidth.plan import Plan
from fabricdoc.bandwidth.runner import GroupSpec, ProgressEvent, TestSpec, group_rounds, run_plan
from fabricdoc.model.records import GroupResult, PairResult
from fabricdoc.sources.sim.simulator import Simulator


class SimMeasure:
    """A :class:`fabricdoc.sweep.Measure` over a :class:`Simulator` (tests, benchmarks)."""

    bidirectional = False

    def __init__(self, sim: Simulator, progress: Callable[[ProgressEvent], None] | None = None) -> None:
        self.sim = sim
        self.progress = progress

    def __call__(self, plan: Plan, first_round: int, into: list[PairResult]) -> list[PairResult]:
        def one_round(specs: list[TestSpec]) -> list[PairResult]:
            return self.sim.measure_round(specs[0].round, [(s.src, s.dst) for s in specs],
                                          [s.expected_gbps for s in specs], bidirectional=plan.bidirectional)

        return run_plan(self.sim.truth, plan, round_runner=one_round, first_round=first_round,
                        progress=self.progress, into=into)

    def group_round(self, into: list[GroupResult]) -> Callable[..., list[GroupResult]]:
        """The group-round runner isolation calls (results also go to ``into``)."""
        def one_round(specs: list[GroupSpec]) -> list[GroupResult]:
            return self.sim.measure_groups(specs[0].round, [(s.test, s.members) for s in specs],
                                           [s.expected_gbps for s in specs])

        return group_rounds(round_runner=one_round, into=into)
