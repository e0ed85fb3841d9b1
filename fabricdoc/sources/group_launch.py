"""Group tests on real hosts: the group runner a sweep's isolation calls, over the launcher it asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fabricdoc.model.records import GroupResult
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.bandwidth import launch
from fabricdoc.sources.launchers import pair_launcher


def group_runner(fabric: Fabric, kind: str, *, timeout_s: float = 120.0, base_port: int = 29600,
                 launcher: launch.Launcher | None = None, nccl_tests: str | None = None,
                 **spec_fields: Any) -> Callable[[Any], GroupResult]:
    """A group runner (see :class:`fabricdoc.bandwidth.runner.GroupTestRunner`) over the ``kind`` launcher.

    ``spec_fields`` go to :class:`fabricdoc.probes.bandwidth.launch.GroupLaunchSpec` (backend,
    size_bytes, iters...). Each group of a round gets its own rendezvous port, ``base_port + slot``.
    ``nccl_tests`` (an nccl-tests binary or its directory, ``kind="mpirun"``) runs each group's
    collective as ``all_reduce_perf`` / ``alltoall_perf`` from there instead of fabricdoc's torch test.
    """
    chosen = launcher or pair_launcher(fabric, kind, nccl_tests)
    if nccl_tests:
        spec_fields = {**spec_fields, "program": "nccl-tests"}

    def run(spec: Any) -> GroupResult:
        group = launch.GroupLaunchSpec(
            members=tuple(spec.members), test=spec.test, round=spec.round, expected_gbps=spec.expected_gbps,
            phase=spec.phase, label=spec.label, port=base_port + spec.slot, **spec_fields,
        )  # fmt: skip
        return launch.run_group(chosen, group, timeout_s)

    return run
