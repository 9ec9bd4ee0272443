"""The packages: the modules' folders, and harness.kind_configs, whose data comes from
kind-configs/ (pyproject.toml's package-dir), which no folder search finds."""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["harness*", "dispatchers*", "suites*"]),
        "harness.kind_configs",
    ]
)
