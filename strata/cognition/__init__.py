"""Strata's background cognition: the idle-gated runner, its jobs, reminders and scheduled
prompts. May import `bot` (the turn processor, ports) and `memory`; never `adapters`.
"""
