"""Platform adapters: one sub-package per platform, each a pure `mapping.py` (platform event →
`InboundMessage`) and an `adapter.py` (lifecycle, submit, and a room's send, edit, typing as a
`runtime.ReplyOps`).

Imports `strata.core`, and of `strata.bot` only the reply's delivery for a turn answered at
once (`delivery`: Discord's slash commands, the console's `SORRY`) and `visible` (the console);
never `memory` or `cognition`, and one platform never
another's (import-linter contracts in pyproject.toml). Platform SDKs are imported only here.
"""
