"""Memory's life cycle: a channel's transcript cut into episodes, compacted, rolled up and decayed.
"""
