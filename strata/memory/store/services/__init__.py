"""The tables behind the bot's tools and services: agents, calendar events, connectors, reminders
and the web view's links and sessions.
"""
