"""The eight cases, one module each; importing this package registers them, in the order of
the issue's table."""

from bench.reliability.cases import (  # noqa: F401 - imported to register the cases
    fuzz,
    injection,
    isolation,
    job_fault,
    load,
    model_faults,
    platform_faults,
    sigkill,
)
from bench.reliability.suite import SUITE

SUITE.order(["sigkill", "model_faults", "platform_faults", "fuzz", "isolation", "injection",
             "load", "job_fault"])

__all__ = ["SUITE"]
