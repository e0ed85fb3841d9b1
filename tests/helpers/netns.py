"""Network namespaces joined by veth pairs for one test, created and deleted by name.

Every namespace is named ``<prefix>-<short>``; ``Lab.cleanup`` deletes its nftables
tables and namespaces by name (deleting a namespace removes its veth ends and qdiscs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field

from tests.helpers.waiting import wait_for


def sh(*argv: str, check: bool = True, timeout: float = 10.0) -> subprocess.CompletedProcess:
    """Run a command (argv only, never a shell) with a timeout."""
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=check)


def operstate(ns: str, ifname: str) -> str:
    out = sh("ip", "-n", ns, "-o", "link", "show", ifname, check=False).stdout
    parts = out.split()
    return parts[parts.index("state") + 1] if "state" in parts else "GONE"


@dataclass
class Lab:
    """Namespaces and veth pairs created for one test; ``cleanup`` removes them by name."""

    prefix: str
    namespaces: list[str] = field(default_factory=list)
    nft_tables: list[tuple[str, str, str]] = field(default_factory=list)

    def netns(self, short: str) -> str:
        name = f"{self.prefix}-{short}"
        sh("ip", "netns", "del", name, check=False)
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")
        return name

    def veth(self, ns_a: str, if_a: str, ns_b: str, if_b: str,
             addr_a: str | None = None, addr_b: str | None = None) -> None:
        sh("ip", "link", "add", if_a, "netns", ns_a, "type", "veth", "peer", "name", if_b, "netns", ns_b)
        for ns, ifname, addr in ((ns_a, if_a, addr_a), (ns_b, if_b, addr_b)):
            if addr:
                sh("ip", "-n", ns, "addr", "add", addr, "dev", ifname)
            sh("ip", "-n", ns, "link", "set", ifname, "up")
        wait_for(lambda: operstate(ns_a, if_a) == "UP" and operstate(ns_b, if_b) == "UP",
                 5, f"{if_a}/{if_b} up")

    def nft(self, ns: str, family: str, table: str, ruleset: str) -> None:
        self.nft_tables.append((ns, family, table))
        subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=ruleset, text=True,
                       capture_output=True, timeout=10, check=True)

    def flap(self, ns: str, ifname: str, watch_ns: str, watch_if: str, times: int) -> None:
        """Take ``ifname`` down and up ``times`` times, waiting each time until the peer saw it."""
        for _ in range(times):
            sh("ip", "-n", ns, "link", "set", ifname, "down")
            wait_for(lambda: operstate(watch_ns, watch_if) != "UP", 5, f"{watch_if} down")
            sh("ip", "-n", ns, "link", "set", ifname, "up")
            wait_for(lambda: operstate(watch_ns, watch_if) == "UP", 5, f"{watch_if} up")

    def cleanup(self) -> None:
        for ns, family, table in self.nft_tables:
            sh("ip", "netns", "exec", ns, "nft", "delete", "table", family, table, check=False)
        for ns in reversed(self.namespaces):
            sh("ip", "netns", "del", ns, check=False)


def can_netns() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None
