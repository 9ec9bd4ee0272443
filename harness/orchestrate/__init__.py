"""A run from start to report: its plan and options, the dispatcher it starts, the pytest
it runs, the report it builds."""
