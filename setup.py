"""The packages: the modules' folders (namespace folders too: the conformance scenarios'
suites/conformance/ has no __init__.py, pytest collects it by path), and
harness.kind_configs, whose data comes from kind-configs/ (pyproject.toml's package-dir),
which no folder search finds."""

from setuptools import find_namespace_packages, setup

setup(
    packages=[
        *find_namespace_packages(include=["harness*", "dispatchers*", "suites*"]),
        "harness.kind_configs",
    ]
)
