"""Platform adapters: one sub-package per platform, each a pure `mapping.py` (platform event →
`InboundMessage`) and an `adapter.py` (lifecycle, send, edit, typing).

May import `strata.core.types`, `strata.core.ports`, `strata.core.errors` and `strata.core.config`
only; platform SDKs are imported only here.
"""
