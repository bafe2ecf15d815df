"""The benchmark harness, outside the core: `strata eval recall` and the lived eval.

`recall` (the static eval), `lived` (the eval after the memory has lived through the data set)
and `cli` (the `strata eval` command) depend on `bot`, `memory` and `cognition`; none of those
imports this package (an import-linter contract). The `strata` command line finds `cli` through
the `strata.commands` entry point group (pyproject.toml).
"""
