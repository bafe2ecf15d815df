"""The Matrix adapter (matrix-nio): 1:1 rooms → private channels, larger rooms → shared."""
