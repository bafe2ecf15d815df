"""The prompts that write memory, one module per task (compaction, roll-up, episode summary,
fact extraction): each builds the messages only; the writers in `strata.bot.writers` ask the
model and memory checks the answer before it is stored."""
