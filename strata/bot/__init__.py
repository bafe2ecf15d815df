"""The turn: the processor (`turns`) and its parts, one job each — who may talk and chat
commands (`access`, `commands`), the prompt (`turn_prompt`, `prompt`, `ambient`,
`context_window`), the model call with tools and streaming (`model_turn`, `tools`, `tool_args`,
`llm`), the rate limit and the failure messages (`limits`, `failures`), background turns
(`background`) and after-turn work (`after_turn`); how platform messages become turns, in order
per channel and across processes (`scheduler`, `claims`), and how a turn's reply reaches its
room (`delivery`, `reply_stream`). The decorators the composition root wraps around the model
and recall live beside them (`metered_chat`, `timed_chat`, `recall_record`, counting in
`metrics`). Imports `strata.memory` and `strata.core` only (the layers contract in
pyproject.toml).
"""
