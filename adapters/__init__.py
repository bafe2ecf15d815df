"""Platform adapters: one sub-package per platform, each a pure `mapping.py` (platform event →
`InboundMessage`) and an `adapter.py` (lifecycle, send, edit, typing).

May import `bot.types`, `bot.ports`, `bot.errors` and `bot.config` only; platform SDKs are
imported only here.
"""
