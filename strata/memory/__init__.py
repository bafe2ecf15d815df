"""Strata's memory: storage, repositories, recall, decay and clustering.

May import its own modules and the leaf modules of `bot` (`types`, `ports`, `errors`, `clock`,
`tokens`) only.
"""
