"""Coordination between processes sharing one database: leases, job claims, cursors, job runs
and the turn queue.
"""
