"""`fabricdoc schema`: print the JSON Schema of the v1 report."""

from __future__ import annotations

import argparse
import json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the report (fabricdoc.report/v1)",
                       description="Print the JSON Schema (draft 2020-12) every fabricdoc report validates against.")
    p.add_argument("--validate", metavar="REPORT", help="validate a report file instead; exit 2 with the first problem")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.report import Report
    from fabricdoc.schema import REPORT_SCHEMA

    if args.validate:
        Report.load(args.validate)
        print(f"{args.validate}: valid fabricdoc.report/v1")
        return 0
    print(json.dumps(REPORT_SCHEMA, indent=2))
    return 0
