"""Dispatchers shaped like vendors' ones, for the project's own e2e tests of the harness."""
