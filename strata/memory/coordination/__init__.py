"""Coordination between processes sharing one database: the one fenced lease system (turns,
pollers, job claims), runners, cursors, job runs, the turn queue and the model calls counted
per person.
"""
