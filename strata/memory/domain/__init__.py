"""Memory's domain: the transcript, episodes, facts, recall, decay, reminders, persons and the
model prompts that write memory. Built on `engines` and `coordination`.
"""
