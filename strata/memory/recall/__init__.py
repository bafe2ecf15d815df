"""Turn-zero recall: candidate sources, ranking, the abstention gate, selection and packing.
Reads through `strata.memory.store`.
"""
