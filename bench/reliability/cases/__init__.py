"""The eight cases, one module each; importing this package registers them in run order."""

from bench.reliability.cases import (  # noqa: F401 - imported to register the cases
    sigkill,
    model_faults,
    platform_faults,
    fuzz,
    isolation,
    injection,
    load,
    job_fault,
)
from bench.reliability.suite import SUITE

__all__ = ["SUITE"]
