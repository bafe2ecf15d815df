"""The reliability suite: `python -m bench.reliability [--quick] --out FILE`.

Eight cases run the real turn path, the real `strata run` process and the real platform
adapters against the project's fakes (tests/fakes) and a real Synapse, and each prints one
figure that must hold. See docs/reliability.md ("The reliability suite").
"""
