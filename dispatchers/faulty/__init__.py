"""Faulty dispatchers: the reference dispatcher with exactly one promise broken each.

``python -m dispatchers.faulty --fault NAME [reference flags...]``; the faults are in
``faults.py`` (those of the controller itself in ``controllers.py``), their profiles in
``dispatchers/profiles/faulty-*.yaml`` and the checks each must fail in
``suites/selftest.py``. A conformance suite is only as good as the dispatchers
it rejects: a fault that passes its checks is a hole in a check.
"""
