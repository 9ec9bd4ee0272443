"""The conformance report: its model and writers (`model`), the gate's check of a
written report (`verify`, with report.yaml's JSON Schema `report.schema.json`), the
HTML page (`html`) and the redaction every writer applies (`redaction`)."""

from harness.report.files import write_all, write_html
from harness.report.model import (
    API_VERSION,
    ERROR,
    FAILED,
    KIND,
    NOT_SUPPORTED,
    PASSED,
    RESULTS,
    SKIPPED,
    UNDECIDED,
    Catalogue,
    CheckResult,
    Finding,
    Report,
    core_ids,
    summarize,
)
from harness.report.redaction import REDACTED, redact
from harness.report.verify import verify_report, verify_report_bytes, verify_report_data

__all__ = [
    "API_VERSION",
    "ERROR",
    "FAILED",
    "KIND",
    "NOT_SUPPORTED",
    "PASSED",
    "REDACTED",
    "RESULTS",
    "SKIPPED",
    "UNDECIDED",
    "CheckResult",
    "Finding",
    "Report",
    "Catalogue",
    "core_ids",
    "redact",
    "summarize",
    "verify_report",
    "verify_report_bytes",
    "verify_report_data",
    "write_all",
    "write_html",
]
