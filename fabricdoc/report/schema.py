"""JSON Schema of the v1 report, as ``fabricdoc schema`` prints it (validation: :mod:`fabricdoc.report.validation`)."""

from __future__ import annotations

from typing import Any

from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.verdict import Verdict, verdict_lines
from fabricdoc.report.evidence_schema import evidence_schemas

_PORT = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2}
_NUM = {"type": ["number", "null"]}
_INT = {"type": "integer", "minimum": 0}
_STR_OR_NULL = {"type": ["string", "null"]}
_TAG = {"type": "string", "pattern": "^([0-9a-f]{6,64})?$"}


# One shape per evidence kind, generated from its declaration (fabricdoc.model.evidence); a report with any
# other shape is refused.
EVIDENCE_SCHEMAS: list[dict[str, Any]] = evidence_schemas()


def _columns(description: str, cols: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "description": description, "required": required,
            "properties": {k: {"type": "array", "items": v} for k, v in cols.items()}}


_NODE_COLUMNS = {"id": {"type": "string"}, "label": {"type": "string"}, "kind": {"enum": ["host", "switch"]},
                 "ports": {"type": "integer"}, "guid": _STR_OR_NULL}
_LINK_COLUMNS = {"a": _INT, "a_port": {"type": "integer"}, "b": _INT, "b_port": {"type": "integer"},
                 "lanes": {"type": "integer"}, "lane_gbps": {"type": "number"}, "max_lanes": {"type": ["integer", "null"]},
                 "max_lane_gbps": _NUM, "state": {"enum": ["up", "down"]},
                 "load": {"type": ["number", "null"], "minimum": 0, "maximum": 1}}
_PAIR_COLUMN_TYPES = {"src": {"type": "string"}, "src_port": {"type": "integer"}, "dst": {"type": "string"},
                      "dst_port": {"type": "integer"}, "status": {"enum": ["ok", "hung", "wrong", "error"]},
                      "busbw_gbps": _NUM, "expected_gbps": _NUM, "ratio": _NUM, "relative": _NUM,
                      "slow": {"type": "boolean"}, "round": {"type": "integer"},
                      "size_bytes": {"type": ["integer", "null"]}}
TOPOLOGY_COLUMNS: dict[str, Any] = {
    "type": "object",
    "description": "a large report's topology (instead of topology): the same fields, one array per field, "
    "every array of a table the same length. Links name their ends by index into the node arrays (a, b) and "
    "port (a_port, b_port); nodes.attrs holds one array per attribute, null where a node has none",
    "required": ["nodes", "links"],
    "properties": {
        "nodes": {**_columns("the nodes", _NODE_COLUMNS, ["id", "label", "kind", "ports"]),
                  "properties": {**_columns("", _NODE_COLUMNS, [])["properties"],
                                 "attrs": {"type": "object", "additionalProperties": {"type": "array"}}}},
        "links": _columns("the links", _LINK_COLUMNS, ["a", "a_port", "b", "b_port", "lanes", "lane_gbps"]),
    },
}
PAIR_COLUMNS: dict[str, Any] = _columns(
    "a large report's bandwidth tests (instead of pairs): the same fields, one array per field, all the same "
    "length; src and dst are node labels, src_port and dst_port their ports",
    _PAIR_COLUMN_TYPES, ["src", "src_port", "dst", "dst_port", "status"])


_EXPECTATIONS: dict[str, Any] = {
    "type": "object",
    "description": "what a healthy test of each shape (test kind, message size, path cables) reaches on this "
    "fabric now, learned from the bulk of the tests (median and robust spread, outliers excluded) with the "
    "nominal rate as the upper bound; a test is slow below slow_below x efficiency. contradictions: "
    "measurements the topology cannot explain (above the line rate, or far below any fabric): the verdict "
    "is then never pass",
    "required": ["shapes", "contradictions"],
    "properties": {
        "shapes": {"type": "array", "items": {
            "type": "object", "required": ["test", "efficiency", "spread", "tests", "source"],
            "properties": {"test": {"type": "string"}, "size_bytes": {"type": "integer", "minimum": 0},
                           "path_cables": {"type": ["integer", "null"]},
                           "efficiency": {"type": "number", "minimum": 0},
                           "spread": {"type": "number", "minimum": 0}, "tests": {"type": "integer", "minimum": 0},
                           "source": {"enum": ["learned", "history", "pairs", "prior"]},
                           "slow_below": {"type": "number"}}}},
        "contradictions": {"type": "array", "items": {"type": "string"}},
        "relative_only": {"type": "boolean"},
        "slow_ratio": _NUM,
        "notes": {"type": "array", "items": {"type": "string"}},
        "assumes": {"type": "object", "additionalProperties": {"type": "number"}},
    },
}

REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "fabricdoc.report/v1",
    "title": "fabricdoc report v1",
    "description": "Result of one fabricdoc sweep or analysis: verdict, findings with evidence, "
    "hosts to drain, what was tested and what could not be seen.",
    "type": "object",
    "required": ["schema", "generated_at", "fabric", "verdict", "findings", "drain", "tests"],
    "properties": {
        "schema": {"const": "fabricdoc.report/v1"},
        "generated_at": {"type": "string", "description": "ISO 8601 time the report was made (UTC): the sweep's end"},
        "started_at": {"type": ["string", "null"], "description": "ISO 8601 time the sweep started (UTC)"},
        "run_id": {"type": "string", "description": "unique id of the sweep (a resumed sweep keeps its journal's id)"},
        "producer": {"type": "string", "description": "the fabricdoc version that wrote the report"},
        "errors": {"type": "array", "items": {"type": "string"},
                   "description": "what failed after the findings were made (a history store that could not be "
                   "written): the report is kept, the command exits 2"},
        "fabric": {
            "type": "object",
            "required": ["name", "source", "hosts", "switches", "links"],
            "properties": {
                "name": {"type": "string"},
                "source": {"type": "string", "description": "where the fabric came from: generator:..., sim:PATH, ib, ibsim:PATH, file"},
                "hosts": {"type": "integer", "minimum": 0},
                "switches": {"type": "integer", "minimum": 0},
                "links": {"type": "integer", "minimum": 0},
            },
        },
        "verdict": {
            "enum": [v.value for v in Verdict],
            "description": "; ".join(line.strip() for line in verdict_lines()) + ". coverage lists what was not seen.",
        },
        "coverage": {
            "type": "object",
            "description": "what the sweep planned to see, what it saw, and what it could not see and why",
            "properties": {
                "complete": {"type": "boolean"},
                "ports": {"type": "object", "properties": {"planned": {"type": ["integer", "null"]},
                                                          "sampled": {"type": ["integer", "null"]}}},
                "hosts": {"type": "object", "properties": {"planned": {"type": ["integer", "null"]},
                                                          "seen": {"type": ["integer", "null"]}}},
                "tests": {"type": "object", "properties": {"planned": {"type": ["integer", "null"]},
                                                          "measured": {"type": ["integer", "null"]}}},
                "not_seen": {"type": "array", "items": {
                    "type": "object", "required": ["what", "why"],
                    "properties": {"what": {"type": "string"}, "why": {"type": "string"}}}},
                "not_seen_count": {"type": "integer", "minimum": 0},
                "cables": {"type": "object", "description": "up cables no finished bandwidth test crossed (no "
                           "route of the tests crosses them, or their tests could not run): said, not counted as "
                           "unseen; untested_shown names the first 20",
                           "properties": {"untested": {"type": "integer", "minimum": 0},
                                          "untested_shown": {"type": "array", "items": {"type": "string"}}}},
                "group_load": {"type": "object", "description": "per cable class (host-L1, L1-L2, ...), the most "
                               "concurrent flows group tests put on one cable direction (only with group tests)",
                               "additionalProperties": {"type": "integer", "minimum": 0}},
            },
        },
        "thresholds": {
            "type": "object",
            "description": "what the findings were judged with: suspect_fraction (more than this share of a "
            "cable's tests slow makes it a suspect), switch_fraction, min_confidence, and slow_ratio only when "
            "given (a test below this share of what healthy tests of its shape reach is slow; without it, "
            "slow means further below than the noise explains: see expectations)",
            "additionalProperties": {"type": "number"},
        },
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "kind", "name", "fault", "severity", "confidence", "evidence"],
                "properties": {
                    "id": {"type": "string", "pattern": "^([0-9a-f]{6,64}|F[0-9]{3,})$",
                           "description": "the finding's one name, as every output shows it: six hex digits "
                           "of the sha256 of its key (eight or more where two findings of this report share six), "
                           "the same for the same fault on the same part in every sweep (F001... in reports "
                           "written before ids were stable)"},
                    "key": {"type": "string", "description": "kind:component:fault, the same for the same fault on "
                            "the same part in every sweep: component is fabric ids and ports (GUID/port on "
                            "InfiniBand), never labels; its short form is the id"},
                    "kind": {"enum": ["link", "switch", "host", "nic", "gpu", "port", "pair"]},
                    "name": {"type": "string", "description": "human name as the fabric labels it (untrusted text)"},
                    "endpoints": {
                        "type": ["array", "null"],
                        "items": _PORT,
                        "description": "for links: the two [node description, port] ends",
                    },
                    "node_ids": {"type": "array", "items": {"type": "string"}, "description": "fabric ids (GUIDs on InfiniBand) of the nodes involved"},
                    "fault": {
                        "type": "string",
                        "description": "down, flapping, symbol_errors, rcv_errors, degraded_bandwidth, width_degraded, speed_degraded, congestion, pause_storm, hung, data_corruption, dead, gpu_error, ...",
                    },
                    "severity": {"enum": list(SEVERITIES)},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "evidence": {"type": "array", "items": {"oneOf": EVIDENCE_SCHEMAS}},
                    "action": {
                        "type": ["object", "null"],
                        "description": "what to do about it (rules in fabricdoc/model/faults.toml); "
                        "null in reports written before actions existed",
                        "required": ["do", "who", "urgency"],
                        "additionalProperties": False,
                        "properties": {
                            "do": {"type": "string", "description": "the step, in an engineer's words"},
                            "who": {"enum": ["data center", "network", "host admin", "nobody"]},
                            "urgency": {"enum": ["now", "next maintenance", "watch"]},
                            "why": {"type": "string"},
                        },
                    },
                },
            },
        },
        "drain": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["node", "reason"],
                "properties": {
                    "node": {"type": "string", "description": "host name as the fabric names it"},
                    "reason": {"type": "string"},
                    "findings": {"type": "array", "items": {"type": "string"},
                                 "description": "keys of the findings that put the host here"},
                    "tag": _TAG | {"description": "the id of the worst of those findings: the one the Slurm "
                                   "reason (fd:<fault> <id>) and the NPD message lead with; empty in reports "
                                   "written before tags"},
                    "tags": {"type": "array", "items": _TAG,
                             "description": "the ids of the findings, in the order of findings"},
                },
            },
        },
        "drain_held": {
            "type": "array",
            "description": "hosts the drain policy held back (maintenance list, not yet confirmed across "
            "sweeps, over the per-sweep cap), with why: not drained, still faulty",
            "items": {
                "type": "object",
                "required": ["node", "reason", "why"],
                "properties": {
                    "node": {"type": "string"}, "reason": {"type": "string"}, "why": {"type": "string"},
                    "findings": {"type": "array", "items": {"type": "string"}},
                    "tag": _TAG | {"description": "as on a drain entry: the worst finding's id"},
                    "tags": {"type": "array", "items": _TAG},
                },
            },
        },
        "drain_policy": {
            "type": ["object", "null"],
            "description": "the drain policy the drain list went through: mode (drain or comment), cap (hosts "
            "per sweep), confirm_sweeps of confirm_window, maintenance list",
        },
        "tests": {
            "type": "object",
            "properties": {
                "pairs_tested": {"type": "integer"},
                "pairs_slow": {"type": "integer"},
                "pairs_hung": {"type": "integer"},
                "pairs_wrong": {"type": "integer"},
                "pairs_error": {"type": "integer"},
                "rounds": {"type": ["integer", "null"]},
                "ports_sampled": {"type": "integer"},
                "interval_s": _NUM,
                "duration_s": _NUM,
                "connections_seen": {"type": "integer", "description": "a job's inter-host NCCL connections read "
                                     "from its NCCL_DEBUG output (among pairs_tested; only when any)"},
                "connections_failed": {"type": "integer", "description": "of those, the ones that failed "
                                       "(among pairs_hung)"},
                "groups_tested": {"type": "integer", "description": "group collectives run (only when any ran)"},
                "group_rounds": {"type": "integer", "description": "rounds of group collectives (rounds counts "
                                 "the pair rounds alone)"},
                "groups_failing": {"type": "integer"},
                "groups_error": {"type": "integer"},
            },
        },
        "probes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["probe", "target", "status", "duration_s"],
                "properties": {
                    "probe": {"type": "string"},
                    "target": {"type": "string"},
                    "status": {"enum": ["ok", "error", "timeout", "unsupported", "skipped", "warning"]},
                    "duration_s": {"type": "number"},
                    "error": {"type": ["string", "null"]},
                },
            },
        },
        "pairs": {
            "type": "array",
            "description": "every bandwidth test: measured vs expected",
            "items": {
                "type": "object",
                "required": ["src", "dst", "status"],
                "properties": {
                    "src": _PORT,
                    "dst": _PORT,
                    "status": {"enum": ["ok", "hung", "wrong", "error"]},
                    "busbw_gbps": _NUM,
                    "expected_gbps": _NUM,
                    "ratio": _NUM,
                    "relative": {**_NUM, "description": "measured over what healthy tests of its shape reach here "
                                 "(expectations): below 1 is slower than usual"},
                    "slow": {"type": "boolean", "description": "hung, or slower than the noise explains"},
                    "round": {"type": "integer"},
                    "size_bytes": {"type": ["integer", "null"], "description": "message size of the test (null: unknown)"},
                },
            },
        },
        "groups": {
            "type": "array",
            "description": "group collectives (sweep --groups / --full-load): measured vs expected busbw; "
            "phase screen, split, confirm, cross or full_load; absent when none ran",
            "items": {
                "type": "object",
                "required": ["members", "test", "phase", "status"],
                "properties": {
                    "members": {"type": "array", "items": _PORT},
                    "test": {"type": "string", "pattern": "^(all_reduce|alltoall|fan:[0-9]+)$",
                             "description": "fan:K: one way, from the first K members to the others"},
                    "phase": {"enum": ["screen", "split", "confirm", "cross", "switch", "full_load", "job"],
                              "description": "switch: a one-way load through half of the switches a failing "
                              "round loaded alike; job: a running job's communicator (NCCL Inspector), judged "
                              "against its peers of the same shape"},
                    "label": {"type": "string"},
                    "status": {"enum": ["ok", "hung", "wrong", "error"]},
                    "busbw_gbps": _NUM,
                    "expected_gbps": _NUM,
                    "ratio": _NUM,
                    "relative": _NUM,
                    "slow": {"type": "boolean"},
                    "round": {"type": "integer"},
                    "error": _STR_OR_NULL,
                },
            },
        },
        "expectations": _EXPECTATIONS,
        "impact": {
            "type": "object",
            "description": "AllReduce bus bandwidth and job cost (see fabricdoc impact)",
            "required": ["allreduce_busbw_gbps", "job"],
            "properties": {
                "algorithm": {"enum": ["ring", "tree"], "description": "which algorithm the headline figures are"},
                "job_hosts": {"type": "integer", "minimum": 0},
                "rails": {"type": "integer", "minimum": 0},
                "allreduce_busbw_gbps": {
                    "type": "object",
                    "description": "predicted nccl-tests busbw: all links healthy / with the findings / "
                    "also without the drain list's hosts / with the recommendation applied",
                    "required": ["nominal", "now", "after_drain"],
                    "properties": {"nominal": _NUM, "now": _NUM, "after_drain": _NUM, "recommended": _NUM},
                },
                "by_algorithm": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {
                            "nominal": _NUM, "now": _NUM, "after_drain": _NUM, "recommended": _NUM,
                            "per_rail_now": {"type": "array", "items": {"type": "number"}},
                            "bottleneck_now": {"type": ["object", "null"]},
                            "skipped": {"type": "string", "description": "why this algorithm was not computed"},
                        },
                    },
                },
                "expected_busbw": {
                    "type": "object",
                    "description": "calibrated expected busbw: the nominal / now / recommended figures times the "
                    "fabric's efficiency (median measured/expected of healthy tests, per message size, or given); "
                    "each algorithm says what it assumes",
                    "required": ["efficiency_source", "calibrated", "by_algorithm"],
                    "properties": {
                        "efficiency_source": {"type": "string"},
                        "calibrated": {"type": "boolean", "description": "false: no efficiency known, figures are nominal bounds"},
                        "by_algorithm": {"type": "object", "additionalProperties": {
                            "type": "object",
                            "required": ["assumes"],
                            "properties": {
                                "assumes": {"type": "string"},
                                "nominal": _NUM, "now": _NUM, "recommended": _NUM,
                                "efficiency": _NUM,
                                "expected": {"type": "object", "additionalProperties": _NUM},
                                "by_size": {"type": "array", "items": {"type": "object", "required": ["size_bytes", "efficiency"],
                                                                       "additionalProperties": _NUM}},
                                "measured": {"type": "array", "items": {"type": "string"},
                                             "description": "figures bound by a measured bandwidth: kept as measured"},
                            },
                        }},
                        "efficiency_by_size": {"type": "array", "items": {
                            "type": "object", "required": ["size_bytes", "efficiency"],
                            "properties": {"size_bytes": {"type": "integer"}, "efficiency": {"type": "number"},
                                           "tests": {"type": ["integer", "null"]}}}},
                    },
                },
                "routing_engine": {"type": "string", "description": "how the fabric routes around a port taken "
                                   "out of service: minhop (OpenSM tables recomputed) or up/down (ftree/updn, ECMP)"},
                "recommendation": {
                    "type": "object",
                    "description": "the remedy with the most predicted job throughput (hosts x busbw): the drain "
                    "list, plus switch-to-switch ports to take out of service and further hosts to drain",
                    "required": ["drain", "isolate", "hosts", "busbw_gbps", "throughput_fraction"],
                    "properties": {
                        "drain": {"type": "array", "items": {"type": "string"}},
                        "isolate": {"type": "array", "items": {"type": "array", "items": _PORT, "minItems": 2, "maxItems": 2},
                                    "description": "cables to take out of service, [[label, port], [label, port]]"},
                        "hosts": {"type": "integer", "minimum": 0},
                        "busbw_gbps": _NUM, "ring_busbw_gbps": _NUM, "tree_busbw_gbps": _NUM,
                        "vs_nominal": _NUM, "throughput_fraction": _NUM,
                        "why": {"type": "string"},
                        "findings": {"type": "array", "items": {"type": "string"},
                                     "description": "ids of the findings whose cables it takes out of service"},
                    },
                },
                "what_if": {
                    "type": "array",
                    "description": "remedies: the one asked for (fabricdoc impact --isolate/--drain), the recommended "
                    "one, the report's drain list, none, and the best alternatives",
                    "items": {
                        "type": "object",
                        "required": ["choice", "drain", "hosts", "busbw_gbps", "vs_nominal", "throughput_fraction"],
                        "properties": {
                            "choice": {"enum": ["given", "recommended", "report", "none", "alternative"]},
                            "drain": {"type": "array", "items": {"type": "string"}},
                            "isolate": {"type": "array", "items": {"type": "array", "items": _PORT, "minItems": 2, "maxItems": 2},
                                        "description": "cables taken out of service (routed around)"},
                            "hosts": {"type": "integer", "minimum": 0},
                            "busbw_gbps": _NUM,
                            "vs_nominal": _NUM,
                            "throughput_fraction": _NUM,
                        },
                    },
                },
                "job": {
                    "type": "object",
                    "description": "what failures cost a job of this size (hosts fail independently)",
                    "required": ["n_hosts", "hours", "failure_probability", "mtbf_hours",
                                 "recommended_checkpoint_minutes", "expected_goodput", "rate_source"],
                    "properties": {
                        "n_hosts": {"type": "integer", "minimum": 0},
                        "hours": {"type": "number", "minimum": 0},
                        "failure_probability": {"type": "number", "minimum": 0, "maximum": 1,
                                                "description": "at least one failure within the job: 1-(1-p)^N"},
                        "mtbf_hours": {**_NUM, "description": "the job's mean time between failures (null: none expected)"},
                        "recommended_checkpoint_minutes": {**_NUM, "description": "Young/Daly: sqrt(2 x write time x MTBF)"},
                        "expected_goodput": {"type": "number", "minimum": 0, "maximum": 1},
                        "expected_lost_hours": _NUM,
                        "host_failures_per_hour": _NUM,
                        "rate_source": {"type": "string", "description": "where the failure rate came from"},
                    },
                },
                "link_effects": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["link", "capacity_gbps"],
                        "properties": {
                            "link": {"type": "array", "items": _PORT, "minItems": 2, "maxItems": 2},
                            "capacity_gbps": {"type": "number"},
                            "nominal_gbps": _NUM,
                            "down": {"type": "boolean"},
                            "rule": {"type": ["string", "null"]},
                            "finding": {"type": ["string", "null"]},
                        },
                    },
                },
                "unmapped_findings": {"type": "array", "items": {"type": "string"}},
                "uncosted_findings": {
                    "type": "array",
                    "description": "findings the busbw figures leave out, with why (faults only group tests showed)",
                    "items": {"type": "object", "required": ["finding", "why"], "additionalProperties": False,
                              "properties": {"finding": {"type": "string"}, "why": {"type": "string"}}},
                },
            },
        },
        "topology_columns": TOPOLOGY_COLUMNS,
        "pairs_columns": PAIR_COLUMNS,
        "topology": {
            "type": "object",
            "description": "the fabric, so the report alone can be drawn and re-analysed",
            "required": ["nodes", "links"],
            "properties": {
                "nodes": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["id", "label", "kind", "ports"],
                        "properties": {
                            "id": {"type": "string"},
                            "label": {"type": "string"},
                            "kind": {"enum": ["host", "switch"]},
                            "ports": {"type": "integer"},
                            "guid": {"type": ["string", "null"]},
                            "attrs": {"type": "object"},
                        },
                    },
                },
                "links": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["a", "b", "lanes", "lane_gbps"],
                        "properties": {
                            "a": _PORT,
                            "b": _PORT,
                            "lanes": {"type": "integer"},
                            "lane_gbps": {"type": "number"},
                            "max_lanes": {"type": ["integer", "null"]},
                            "max_lane_gbps": _NUM,
                            "state": {"enum": ["up", "down"]},
                            "load": {"type": "number", "minimum": 0, "maximum": 1,
                                     "description": "sent bits/s at the busier end over the trained rate during "
                                     "the sweep's counter interval (absent: no data counter told it)"},
                        },
                    },
                },
            },
        },
    },
}
