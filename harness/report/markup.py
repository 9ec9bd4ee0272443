"""Text made safe for report.html: redacted, then escaped for HTML and SVG."""

from __future__ import annotations

import html
from typing import Any

from harness.report.redaction import report_text


def escaped(value: Any) -> str:
    """Escaped (and redacted) text for HTML and SVG."""
    return html.escape(report_text("" if value is None else str(value)), quote=True)
