"""The model's text (light markdown) → Telegram HTML: Telegram's tag set for the shared parser
(`strata.adapters.markdown`). Pure: no I/O, no SDK.

Bold and `#` headings are `<b>`, italic `<i>`, strikethrough `<s>`, code `<code>` and
fenced blocks `<pre><code class="language-…">`; links may be http(s), `tg://` or `mailto:`.
Quotes need no escaping outside tags. When Telegram still refuses the entities, the adapter
resends the part as plain text (`chat.Chat.send`). Imports `strata.adapters.markdown`.
"""

from __future__ import annotations

from strata.adapters.markdown import Style, render

TELEGRAM = Style(
    tags={"strong": "b", "em": "i", "s": "s", "code": "code", "heading": "b"},
    schemes=("http://", "https://", "tg://", "mailto:"),
    code_language=True,
)


def to_html(text: str) -> str:
    """Convert the model's markdown-ish `text` to Telegram HTML."""
    return render(text, TELEGRAM)
