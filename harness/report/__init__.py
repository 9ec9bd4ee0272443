"""The conformance report: its model and writers (`model`), the gate's check of a
written report (`verify`, with report.yaml's JSON Schema `report.schema.json`), the
HTML page (`html`) and the redaction every writer applies (`redaction`)."""

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
    CheckResult,
    Finding,
    Report,
    catalogue,
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
    "catalogue",
    "core_ids",
    "redact",
    "summarize",
    "verify_report",
    "verify_report_bytes",
    "verify_report_data",
]
