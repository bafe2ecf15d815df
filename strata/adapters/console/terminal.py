"""The interactive `strata chat` prompt, on prompt_toolkit: line editing (arrow keys, Home/End,
Ctrl-A/E/W…), history across runs (↑/↓, Ctrl-R) kept in a 0600 file that forgetting reaches
(`strata.adapters.console.history`), and multi-line paste
(a terminal's bracketed paste arrives whole, newlines included, as one message). Ctrl-C clears
the line, Ctrl-D on an empty line ends the chat. Only for a terminal: piped input is read line
by line by `strata.adapters.console.adapter` without it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.application import run_in_terminal
from prompt_toolkit.history import History, InMemoryHistory
from prompt_toolkit.patch_stdout import patch_stdout

from strata.adapters.console.history import LiveFileHistory
from strata.core.private_files import private_dir, private_file

PROMPT = "you> "


class TerminalPrompt:
    def __init__(self, history: Path | None) -> None:
        store: History = InMemoryHistory()
        # Why the history is kept for this run only (an unwritable data folder): a chat
        # without saved history beats no chat. None when it is saved.
        self.unsaved: str | None = None
        if history is not None:
            try:
                # What the operator typed is as personal as the transcript: 0600 in a 0700
                # folder, made before prompt_toolkit opens it (it would use the umask's mode).
                private_dir(history.parent)
                # Read again before each prompt: a forget may have rewritten it meanwhile.
                store = LiveFileHistory(private_file(history))
            except OSError as exc:
                self.unsaved = f"cannot keep the prompt history in {history.parent}: {exc}"
        self.session: PromptSession[str] = PromptSession(history=store)

    async def read(self) -> str | None:
        """The next line the person sends; None when they end the chat (Ctrl-D)."""
        while True:
            try:
                # What else writes to stdout/stderr meanwhile (a notice from an after-turn
                # step) is printed above the prompt, not into the line being typed.
                with patch_stdout():
                    return await self.session.prompt_async(PROMPT)
            except KeyboardInterrupt:  # Ctrl-C: drop the line being typed, as a shell does
                continue
            except EOFError:
                return None

    @staticmethod
    async def above(write: Callable[[], None]) -> None:
        """Run `write` with the prompt (if one is showing) moved out of its way: a reminder
        arriving while the person types is printed above the line they are editing."""
        await run_in_terminal(write)
