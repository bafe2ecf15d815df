"""PostgreSQL's numbered migrations (`NNNN_name.sql`), applied in order by
`strata.memory.engines.pg.database`, each once, all pending ones in one transaction; `$DIM` is the
embedding dimension recorded when the database was created. A schema change adds a file here and one
in
`strata/memory/engines/migrations/` (a test keeps the two schemas' tables and columns equal)."""
