"""Strata's memory, by feature: `recall`, `lifecycle` (episodes cut, compacted, rolled up,
decayed) and `facts` sit on `store` (every repository and all the SQL), which sits on `checks`
(the grounding rule), `rules` (pure types and word rules), `coordination` and `engines`
(import-linter keeps the order, and keeps the features off the engines and off each other).

May import its own modules and the leaf modules of `bot` (`types`, `ports`, `errors`, `clock`,
`tokens`) only.
"""
