"""Bandwidth tests on real hosts: the launcher a sweep asks for, built from the fabric's node attributes,
and the pair runner that runs one planned test through it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabricdoc.errors import ConfigError
from fabricdoc.fabric.identity import host_name
from fabricdoc.model.records import PairResult, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.bandwidth import launch
from fabricdoc.probes.bandwidth.nccl_tests_binaries import binary_for

LAUNCHERS = ("local", "netns", "srun", "mpirun")


def pair_launcher(fabric: Fabric, kind: str, nccl_tests: str | None = None) -> launch.Launcher:
    """The launcher for ``kind``, reading namespaces, addresses and interfaces from node attributes."""

    def attr(port: PortRef, name: str) -> str:
        table = fabric.nodes[port.node].attrs.get(name) or {}
        value = table.get(port.port, table.get(str(port.port)))
        if value is None:
            raise ConfigError(f"host {fabric.label(port.node)!r} has no {name} entry for port {port.port} in the fabric file")
        return str(value)

    def hostname(port: PortRef) -> str:
        return host_name(fabric, port.node)  # an HCA's host on InfiniBand, the host itself on Ethernet

    has_ifnames = any(n.attrs.get("ifnames") for n in fabric.hosts())
    if kind == "netns":
        return launch.NetnsLauncher(
            namespace=lambda p: str(fabric.nodes[p.node].attrs.get("netns") or p.node),
            address=lambda p: attr(p, "addresses"),
            ifname=lambda p: attr(p, "ifnames"),
        )
    if kind == "srun":
        return launch.SrunLauncher(hostname=hostname, ifname=(lambda p: attr(p, "ifnames")) if has_ifnames else None)
    if kind == "mpirun":
        return launch.MpirunLauncher(hostname=hostname, nccl_binary=nccl_tests)
    if kind == "local":
        return launch.LocalLauncher()
    raise ConfigError(f"unknown launcher {kind!r} (one of {', '.join(LAUNCHERS)})")


def nccl_pair_binary(given: str) -> str:
    """The nccl-tests binary pair tests run for ``--nccl-tests GIVEN``: GIVEN itself, or its
    ``sendrecv_perf`` when GIVEN is the directory of the binaries."""
    return (binary_for(given, "sendrecv") or given) if Path(given).is_dir() else given


def launcher_runner(launcher: launch.Launcher, *, timeout_s: float = 120.0, base_port: int = 29500,
                    **spec_fields: Any) -> Callable[[Any], PairResult]:
    """A pair runner (see :class:`fabricdoc.bandwidth.runner.PairRunner`) over a launcher.

    ``spec_fields`` go to :class:`fabricdoc.probes.bandwidth.launch.PairSpec` (test,
    backend, size_bytes, iters, program...). Each test of a round gets its own
    rendezvous port, ``base_port + slot``.
    """

    def run(spec: Any) -> PairResult:
        pair = launch.PairSpec(
            src=spec.src, dst=spec.dst, round=spec.round, expected_gbps=spec.expected_gbps,
            port=base_port + spec.slot, **spec_fields,
        )  # fmt: skip
        return launch.run_pair(launcher, pair, timeout_s)

    return run
