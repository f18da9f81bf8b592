"""How many examples each Hypothesis property (and each long parametrisation) runs. README's command runs the
default profile (a fifth of each count, at least 5) so a newcomer's run is short; CI runs `HYPOTHESIS_PROFILE=ci`
with the full counts (.ci/run's second pytest run). A test that sets its own count writes
`max_examples=examples(full)`: the property is the same in both profiles, only the number of examples it is tried
on differs."""

import math
import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
SHARE = {"default": 0.2, "ci": 1.0}
if PROFILE not in SHARE:
    raise SystemExit(f"HYPOTHESIS_PROFILE={PROFILE!r}: expected one of {', '.join(SHARE)}")


def examples(full: int) -> int:
    """The number of examples a property with `full` examples in CI runs in this profile."""
    return max(min(full, 5), math.ceil(full * SHARE[PROFILE]))


# no deadline and no complaint about slow data: a property here runs a whole computation per example, on a loaded
# 2-core machine, and no test may depend on its speed (tests/test_learners.py's sheets: ~0.3 s each)
SLOW = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=SLOW)  # Hypothesis' own count
settings.register_profile("default", max_examples=examples(100), deadline=None, suppress_health_check=SLOW)
settings.load_profile(PROFILE)
