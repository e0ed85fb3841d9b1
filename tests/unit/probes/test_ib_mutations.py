"""The new InfiniBand readers accept a damaged real input or refuse it with fabricdoc's own error, never another.

Deterministic mutations (seeded by file) of the real captures each reader is tested on.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable

import pytest
from fabricdoc.probes.ib import ibdiagnet as diag
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports
from fabricdoc.probes.ib.ibroute import parse_routes

from fabricdoc.errors import FabricdocError
from tests.helpers.paths import DATA

NASTY = ["-1", "9" * 5000, "0x", "1e999", "nan", "\x00", '"', ",", " : ", "4xNDR", "N/A", "0xfffffffffffffffe"]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    kind = rng.randrange(6)
    if kind == 0:
        i = rng.randrange(len(text))
        return text[:i]
    if kind == 1 and len(lines) > 1:
        del lines[rng.randrange(len(lines))]
        return "\n".join(lines)
    if kind == 2:
        tokens = text.split(" ")
        tokens[rng.randrange(len(tokens))] = rng.choice(NASTY)
        return " ".join(tokens)
    if kind == 3:
        fields = text.split(",")
        fields[rng.randrange(len(fields))] = rng.choice(NASTY)
        return ",".join(fields)
    if kind == 4 and len(lines) > 2:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    return text + rng.choice(NASTY) * rng.randrange(1, 20)


def _db(text: str, source: str) -> object:
    db = diag.parse_db_csv(text, source)
    return diag.db_nodes(db), diag.db_ports(db), diag.db_links(db), diag.db_pm(db), diag.db_pm(db, "PM_DELTA"), diag.db_run(db)


RUN = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
TARGETS: dict[str, tuple[Callable[[str, str], object], list]] = {
    "db_csv": (_db, [RUN / "ibdiagnet2.db_csv"]),
    "lst": (diag.parse_ibdiagnet_lst, [RUN / "ibdiagnet2.lst"]),
    "net_dump": (diag.parse_ibdiagnet_net_dump, [RUN / "ibdiagnet2.net_dump"]),
    "pm": (diag.parse_ibdiagnet_pm, [RUN / "ibdiagnet2.pm"]),
    "cables": (diag.parse_ibdiagnet_cables, [DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_cables" / "ibdiagnet2.cables"]),
    "fdbs": (diag.parse_ibdiagnet_fdbs, [DATA / "ibdiagnet2" / "real_index_fdbs_docstring_excerpt" / "ibdiagnet2.fdbs"]),
    "ports report": (parse_ibnetdiscover_ports, [DATA / "ib" / "ibnetdiscover" / "ports" / "stdout.txt"]),
    "routes": (parse_routes, [DATA / "ib" / "dump_fts" / "mad_drops_stderr" / "stdout.txt",
                              DATA / "ib" / "ibroute" / "all_switches_stderr" / "stdout.txt"]),
    "ibnetdiscover": (lambda t, s: parse_ibnetdiscover(t, s, partial=True),
                      [DATA / "ibnetdiscover" / "real_topograph_dgx_h100_superpod_ndr" / "example.out",
                       DATA / "ibnetdiscover" / "real_gary_sequoia_ndr_ibdiagnet2_mlx5_naming" / "ibdiagnet2.ibnetdiscover"]),
}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_damaged_real_input_is_accepted_or_refused_with_fabricdoc_s_own_error(target):
    fn, files = TARGETS[target]
    for path in files:
        text = path.read_text()
        rng = random.Random(f"{target}:{path.name}")
        for i in range(60):
            mutated = _mutate(text, rng)
            with contextlib.suppress(FabricdocError):  # anything else escapes and fails the test
                fn(mutated, f"{path.name} (mutation {i})")
