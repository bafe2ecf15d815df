"""Storage engines: the connection factory, SQLite and PostgreSQL, migrations, and whole-file
operations (backup, transfer between engines). Imports `strata.core` only.
"""
