"""Memory's domain: the transcript, episodes, facts, recall, decay, reminders, persons and the
checks a model's text passes before it is stored (the prompts and the model calls are
cognition's). Built on `engines` and `coordination`.
"""
