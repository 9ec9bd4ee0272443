"""report.html's style sheet, inline: the page is one file with nothing loaded from
outside."""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;
max-width:1100px}
h1{font-size:1.5em;margin:0 0 4px}h2{margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f4f4f4}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:.9em}
.passed{background:#d4f4dd;color:#0a6b2a}.failed{background:#fde0e0;color:#a01010}
.skipped{background:#eeeeee;color:#555}.not-supported{background:#f2f2f2;color:#888}
.partial{background:#fff1cc;color:#8a5a00}.undecided{background:#e9e0f7;color:#5a2d91}
.error{background:#f3d9f7;color:#6a1080}
.verdict{border-left:6px solid #888;padding:4px 16px;margin:0 0 8px}
.verdict.v-passed{border-color:#0a6b2a}.verdict.v-failed{border-color:#a01010}
.verdict.v-partial{border-color:#8a5a00}.verdict.v-error{border-color:#6a1080}
.verdict .result{font-size:1.1em;margin:8px 0}.verdict .badge{font-size:1em;padding:2px 12px}
.verdict ul{margin:4px 0;padding-left:20px}.verdict li{margin:2px 0}
.index{margin:4px 0;font-size:.92em}.index .group{font-weight:600}.index a{white-space:nowrap}
nav{font-size:.9em;margin:6px 0}nav a{margin-right:12px}
.finding{border-left:4px solid #a01010;padding:2px 12px;margin:10px 0}
.finding h4{margin:4px 0}
.actions{border-left:4px solid #3182bd;padding:2px 12px;margin:10px 0}
.actions h4{margin:4px 0}.actions ul{margin:4px 0;padding-left:20px}
.check{border:1px solid #e2e2e2;border-radius:6px;padding:8px 16px;margin:16px 0}
.check.failed,.check.undecided{border-left:6px solid currentColor}
.check.failed,.check.undecided,.check.passed,.check.skipped,.check.not-supported{
background:none;color:inherit}
.check.failed{border-left-color:#a01010}.check.undecided{border-left-color:#5a2d91}
.check h3{margin:6px 0}.check h3 .meta{font-size:.8em;font-weight:400;color:#777}
.message{white-space:pre-wrap;background:#f8f8f8;padding:6px;
border-radius:4px;font-family:ui-monospace,monospace;font-size:.9em}
details>summary{cursor:pointer;color:#555;font-size:.9em;margin:4px 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.85em;margin:6px 0}
.legend .item{display:inline-flex;align-items:center;gap:4px}
svg.timeline{display:block;max-width:100%;height:auto;margin:6px 0 14px}
svg text.row{font-size:12px;fill:#333;font-family:ui-monospace,DejaVu Sans Mono,monospace}
svg text.axis{font-size:11px;fill:#666}
svg text.action{font-size:10px;fill:#555}
.muted{color:#777}
.swatch{display:inline-block;width:18px;height:9px}
.swatch.inactive{background:
repeating-linear-gradient(45deg,#bdbdbd 0 2px,#eeeeee 2px 5px)!important}
.scroll{overflow-x:auto;width:max-content;max-width:calc(100vw - 64px)}
table.scorecard{font-size:.8em;margin:0}table.scorecard td{text-align:right;white-space:nowrap}
table.scorecard td,table.scorecard th{padding:3px 4px}
table.scorecard th{font-weight:400;vertical-align:bottom;font-size:.9em}
table.scorecard th.group{text-align:center;vertical-align:middle;font-weight:400;color:#555}
table.scorecard th.scenario,table.scorecard td.scenario{text-align:left}
table.scorecard tr.total td{font-weight:600;background:#fafafa}
"""
