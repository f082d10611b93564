"""Hypothesis profiles shared by the property-based suites.

Each suite has a short default for CI and runs deeper with ``HYPOTHESIS_PROFILE=long``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"


def profile(name: str, examples: int, long_examples: int) -> settings:
    """The settings of one suite: ``examples`` by default, ``long_examples`` when long."""
    base = settings(
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )
    settings.register_profile(name, base, max_examples=examples)
    settings.register_profile(f"{name}-long", base, max_examples=long_examples)
    return settings.get_profile(f"{name}-long" if LONG else name)
