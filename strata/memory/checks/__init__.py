"""The grounding rule every model-written memory passes before it is stored, and what it is made
of. Pure: no storage, no model.
"""
