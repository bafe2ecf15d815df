"""The Telegram adapter (python-telegram-bot): private chats → private channels, groups →
shared channels (answered on mention, reply or command), HTML replies, streamed edits."""
