"""The benchmarks' process sampler, on this test process itself."""

from __future__ import annotations

import os
import time

from harness.tools import sampling


def test_samples_rss_and_cpu_of_the_selected_processes() -> None:
    with sampling.ProcessSampler(lambda: sampling.with_children(os.getpid()), 0.01) as s:
        time.sleep(0.1)
    assert s.peak_rss >= s.last_rss > 0 and os.getpid() in s.cpu


def test_vanished_processes_are_skipped() -> None:
    assert sampling.with_children(2**22 + 12345) == []
    assert os.getpid() in {p.pid for p in sampling.in_groups({os.getpgid(0)})}
