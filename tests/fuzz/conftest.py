"""Hypothesis profiles of the parser fuzz tests (tests/fuzz).

* ``ci`` (the default): a bounded number of examples per test, so the whole directory adds well
  under a minute to the unit run on 2 cores; derandomised (the same examples every run, so CI is
  reproducible) with no example database, and ``print_blob`` on so a failure prints the blob
  that replays it (``@reproduce_failure``).
* ``long``: many more random examples with the local database, for ``bench/fuzz_parsers.py`` or
  ``HYPOTHESIS_PROFILE=long pytest tests/fuzz``. ``HPCTUI_FUZZ_EXAMPLES`` sets its example count.

The deadline is generous (a parse of these seeds takes milliseconds; a shared CI core can stall
for a while): it reports a pathological slowdown, :func:`fuzzkit.time_bound` catches a hang.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile(
    "ci", max_examples=int(os.environ.get("HPCTUI_FUZZ_CI_EXAMPLES", "60")), derandomize=True, database=None,
    print_blob=True, deadline=timedelta(seconds=2), suppress_health_check=_SLOW_OK,
)
settings.register_profile(
    "long", max_examples=int(os.environ.get("HPCTUI_FUZZ_EXAMPLES", "5000")), derandomize=False,
    print_blob=True, deadline=timedelta(seconds=2), suppress_health_check=_SLOW_OK,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
