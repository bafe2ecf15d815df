"""Model work that writes memory, one module per task: compaction, episode summaries, roll-up
parents and fact extraction. Each asks the model here, in cognition, through the budgeted,
metered model it is handed (a job run's `JobContext.model()` or `JobContext.turn`, or after a
turn the model charged to the memory owner), and hands the answer to memory's store for that
layer, which checks it with the grounding rule (`strata.memory.checks.grounding`) before
anything is stored: the one door. `strata.memory` itself never calls a model.
"""
