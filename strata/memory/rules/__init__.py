"""Pure types and word rules that the store and every feature of memory share: the words of a text
as the index sees them, decay, source profiles, fact kinds. No SQL, no I/O.
"""
