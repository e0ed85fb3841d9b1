"""`fabricdoc schema`: print the JSON Schema of the v1 report."""

from __future__ import annotations

import argparse
import json

from fabricdoc.cli.args import EXIT_CODES
from fabricdoc.model.verdict import EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of the report (fabricdoc.report/v1)",
                       description="Print the JSON Schema (draft 2020-12) every fabricdoc report validates against.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--validate", metavar="FILE", help="validate a report file instead; exit 2 with the first problem")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.report.report import Report
    from fabricdoc.report.schema import REPORT_SCHEMA

    if args.validate:
        Report.load(args.validate)
        from fabricdoc.model.text import escape

        print(f"{escape(args.validate)}: valid fabricdoc.report/v1")
        return EXIT_OK
    print(json.dumps(REPORT_SCHEMA, indent=2))
    return EXIT_OK
