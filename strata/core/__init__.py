"""The bottom layer: types, ports (Protocols), config, errors, the clock and small leaf helpers.

Imports nothing else of Strata; every other layer may import it.
"""
