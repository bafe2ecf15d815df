"""The turn: the processor (`turns`) and its parts, one job each — who may talk and chat
commands (`access`, `commands`), the prompt (`turn_prompt`, `prompt`, `context_window`), the
model call with tools and streaming (`model_turn`, `tools`, `tool_args`, `llm`), the rate limit
and the failure messages (`limits`, `failures`), background turns (`background`) and after-turn
work (`after_turn`); how platform messages become turns, in order per channel and across
processes (`scheduler`, `claims`). Imports `strata.memory` and `strata.core` only (the layers
contract in pyproject.toml).
"""
