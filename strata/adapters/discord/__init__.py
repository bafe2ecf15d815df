"""The Discord adapter (discord.py): direct messages become turns in the sender's private
channel. `mapping` is the pure event → `InboundMessage` part; `adapter` owns the client."""
