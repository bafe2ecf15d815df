"""Printing stored text: control characters are shown, never obeyed (issue 21, defect 5)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

from strata.bot.visible import visible

ROOT = Path(__file__).parents[2]
# Every module that prints to the operator's terminal.
PRINTING = [*sorted((ROOT / "strata" / "app" / "cli").glob("*.py")),
            *sorted((ROOT / "strata" / "adapters" / "console").glob("*.py"))]


def test_control_characters_are_shown_and_text_is_kept() -> None:
    assert visible("red \x1b[31mRED\x1b[0m") == "red ^[[31mRED^[[0m"
    assert visible("\x1b]0;title\x07") == "^[]0;title^G"
    assert visible("over\rwrite\x08\x00\x7f") == "over^Mwrite^H^@\\u007f"
    assert visible("8-bit \x9b2J csi") == "8-bit \\u009b2J csi"
    assert visible("lines\n\tand tabs, café, Привет, 😀") == "lines\n\tand tabs, café, Привет, 😀"


def test_json_through_visible_stays_the_same_json() -> None:
    data = {"text": "a\x1b[31m\x7f\x9b\u200b é\n"}
    shown = visible(json.dumps(data, ensure_ascii=False, indent=2))
    assert "\x1b" not in shown and "\x7f" not in shown and "\x9b" not in shown
    assert json.loads(shown) == data


def test_every_printing_module_prints_through_say() -> None:
    """A new listing cannot print stored text raw: `print(`, `sys.stdout.write(` and `input(`
    are refused in the command-line and console modules (`strata.bot.visible.say` instead)."""
    assert PRINTING
    for path in PRINTING:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            target = ast.unparse(func)
            assert name not in ("print", "input"), f"{path.name}:{node.lineno}: {target}"
            assert target not in ("sys.stdout.write", "sys.stderr.write"), (
                f"{path.name}:{node.lineno}: {target}")
