"""Benchmarks and the reliability suite (run from the repository root, e.g.
`python -m bench.reliability --quick --out r.json`). Not part of the installed packages."""
