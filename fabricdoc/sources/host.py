"""This host as a source: the host probes' bundle of records (what ``fabricdoc probe`` prints)."""

from __future__ import annotations

from fabricdoc.probes.host.collect import HostBundle, collect_host

__all__ = ["HostBundle", "collect_host"]
