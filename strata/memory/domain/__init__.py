"""The model prompts that write memory (`prompts`), used by `strata.memory.lifecycle` and
`strata.memory.facts`. Everything else of memory lives by feature beside this package.
"""
