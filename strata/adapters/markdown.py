"""The model's text (light markdown) as a platform's HTML: one parser (markdown-it-py), and a
`Style` per platform saying which tags it shows (`telegram.formatting`, `matrix.mapping`).

Only what reads well in a chat is markup: paragraphs, `#` headings (shown bold), fenced code
blocks, inline code, links of the platform's schemes, bold, italic and strikethrough. Lists,
quotes, rules, indented code and raw HTML stay the characters they were; `__name__` stays a
name (models write Python's dunder names more often than that emphasis). Everything the model
wrote is escaped, so its text can never inject markup, and the line breaks it wrote are kept
(blocks are joined by as many breaks as separated them). The tags come from a tree, so they
are always balanced. Imports markdown-it-py only.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

# Blocks and inline rules that stay text: a chat is not a document.
_OFF = ["code", "blockquote", "hr", "list", "reference", "html_block", "lheading", "image",
        "autolink", "html_inline", "entity", "newline"]
_MARKS = ("strong", "em", "s")


@dataclass(frozen=True)
class Style:
    """How one platform shows markup: its tag for `strong`, `em`, `s`, `code` and `heading`,
    the link schemes it may open, its line break, and whether quotes are escaped."""

    tags: Mapping[str, str]
    schemes: tuple[str, ...]
    newline: str = "\n"
    quote: bool = False
    code_language: bool = False  # `class="language-…"` on a fenced block's `<code>`


def _parser(schemes: Sequence[str]) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("strikethrough")
    md.disable(_OFF)
    # A link of another scheme (`javascript:`) is not parsed as one: it stays its text.
    md.validateLink = lambda url: url.lower().startswith(tuple(schemes))  # type: ignore[method-assign]
    return md


_PARSERS: dict[tuple[str, ...], MarkdownIt] = {}


def render(text: str, style: Style) -> str:
    """`text` as `style`'s HTML (see the module doc)."""
    md = _PARSERS.get(style.schemes)
    if md is None:
        md = _PARSERS[style.schemes] = _parser(style.schemes)
    tokens = md.parse(text.replace("\x00", ""))
    out: list[str] = []
    last_line: int | None = None
    for i, tok in enumerate(tokens):
        if tok.map is not None and tok.type in ("paragraph_open", "heading_open", "fence"):
            if last_line is not None:
                out.append(style.newline * (tok.map[0] - last_line + 1))
            last_line = tok.map[1]
        if tok.type == "fence":
            out.append(_fence(tok, style))
        elif tok.type == "inline":
            body = _inline(tok.children or [], style)
            if tokens[i - 1].type == "heading_open":
                tag = style.tags["heading"]
                body = f"<{tag}>{body}</{tag}>"
            out.append(body)
    return "".join(out)


def _fence(tok: Token, style: Style) -> str:
    lang = tok.info.split()[0] if tok.info.strip() else ""
    css = f' class="language-{html.escape(lang)}"' if lang and style.code_language else ""
    body = html.escape(tok.content.rstrip("\n"), quote=style.quote)
    return f"<pre><code{css}>{body}</code></pre>"


def _inline(tokens: Sequence[Token], style: Style) -> str:
    out: list[str] = []
    for tok in tokens:
        name, _, edge = tok.type.rpartition("_")
        if name in _MARKS and edge in ("open", "close"):
            if tok.markup == "__":  # a dunder name, not emphasis
                out.append("__")
            else:
                tag = style.tags[name]
                out.append(f"<{tag}>" if edge == "open" else f"</{tag}>")
        elif tok.type == "link_open":
            out.append(f'<a href="{html.escape(str(tok.attrs["href"]))}">')
        elif tok.type == "link_close":
            out.append("</a>")
        elif tok.type == "code_inline":
            tag = style.tags["code"]
            out.append(f"<{tag}>{html.escape(tok.content, quote=style.quote)}</{tag}>")
        else:  # text (line breaks included: the `newline` rule is off)
            text = html.escape(tok.content, quote=style.quote)
            out.append(text.replace("\n", style.newline))
    return "".join(out)
