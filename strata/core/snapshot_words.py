"""The fixed words of the prompt's ambient snapshot, in one place: the bot writes its lines
with them (`strata.bot.ambient`), the reply checks catch a reply that copies them
(`strata.bot.reply_checks`), and episode summaries leave out a bot sentence that repeats them
(`strata.memory.lifecycle.code_lines`), since the person did not say them. A leaf module."""

from __future__ import annotations

import re

TIME = "Current time"
LOCAL_TIME = "Current local time for"
LAST_WROTE = "They last wrote"
THIS_TURN = "before this conversation turn"
LOCATION = "Last known location"
UPCOMING = "Upcoming reminders and scheduled prompts"

# Each snapshot line's telling words, as a reply or summary may repeat them in a sentence of
# its own ("your current local time is…", "you last wrote…"): a line's phrase or its core.
WORDING = re.compile(
    r"\b(?:current (?:local )?time|local time for|last wrote|this conversation turn|"
    r"upcoming reminders|scheduled prompts|last known location)\b", re.IGNORECASE)
