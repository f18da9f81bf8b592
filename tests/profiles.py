"""How many examples each Hypothesis property (and each long parametrisation) runs. README's command runs the
default profile (a fifth of each count, at least 5) so a newcomer's run is short; CI runs `HYPOTHESIS_PROFILE=ci`
with the full counts (.ci/run's second pytest run). A test that sets its own count writes
`max_examples=examples(full)`: the property is the same in both profiles, only the number of examples it is tried
on differs."""

import math
import os

from hypothesis import settings

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "default")
SHARE = {"default": 0.2, "ci": 1.0}
if PROFILE not in SHARE:
    raise SystemExit(f"HYPOTHESIS_PROFILE={PROFILE!r}: expected one of {', '.join(SHARE)}")


def examples(full: int) -> int:
    """The number of examples a property with `full` examples in CI runs in this profile."""
    return max(min(full, 5), math.ceil(full * SHARE[PROFILE]))


settings.register_profile("ci", max_examples=100)  # Hypothesis' own default, for a @given without a count
settings.register_profile("default", max_examples=examples(100))
settings.load_profile(PROFILE)
