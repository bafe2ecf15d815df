"""What takes memory away: `/forget` and `/wipe` (plan, search, the deletion), the decay pass
and the janitor, and the pruning of transcript rows no live episode cites."""
