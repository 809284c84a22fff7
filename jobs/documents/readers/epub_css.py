"""An EPUB's CSS (files, `<style>` elements, `style` attributes) without what loads from elsewhere or
runs: `@import`s and `url()`s the caller finds wrong (remote, outside the book: epub_clean), IE's
`expression()` and `behavior`, Mozilla's `-moz-binding`, `javascript:` URLs. CSS escapes are
written out first (`u\\72l(` is `url(`), and comments go."""

from __future__ import annotations

import re
from collections.abc import Callable

_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?")
_CSS_IMPORT = re.compile(r"@import\s+[^;]*;?", re.IGNORECASE)
_CSS_URL = re.compile(r"url\(\s*(['\"]?)(.*?)\1\s*\)", re.IGNORECASE | re.DOTALL)
_CSS_SCRIPTING = re.compile(r"expression\s*\(|-moz-binding|behavior\s*:|javascript:", re.IGNORECASE)
# A declaration that scripts: IE's expression() and behavior, Mozilla's XBL binding, a javascript: URL.
_CSS_SCRIPTING_DECLARATION = re.compile(
    r"(?:behavior|-moz-binding)\s*:[^;{}]*;?|[\w-]+\s*:[^;{}]*(?:expression\s*\(|javascript:)[^;{}]*;?", re.IGNORECASE
)


def scripts(css: str) -> bool:
    """Whether `css` (a declaration list) holds a scripting extension."""
    return bool(_CSS_SCRIPTING.search(css))


def clean_css(css: str, path: str, problem: Callable[[str, str], str], dropped: list[str]) -> str:
    """A stylesheet (of the file at `path`) without `@import`s or `url()`s that `problem(url, element)` finds
    something wrong with (remote, outside the book) and without scripting extensions; what went, in `dropped`."""
    css = _CSS_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)) if int(m.group(1), 16) < 0x110000 else "", css)
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)

    def imported(m: re.Match[str]) -> str:
        urls = _CSS_URL.findall(m.group(0)) or re.findall(r"(['\"])(.*?)\1", m.group(0))
        target = urls[0][1] if urls else ""
        if target and not problem(target, "link"):
            return m.group(0)
        dropped.append(f"{path}: @import {target[:60]!r}")
        return ""

    def url(m: re.Match[str]) -> str:
        target = m.group(2)
        if problem(target, "img"):
            dropped.append(f"{path}: url({target[:60]!r})")
            return "none"
        return m.group(0)

    css = _CSS_SCRIPTING_DECLARATION.sub("", css)
    return _CSS_URL.sub(url, _CSS_IMPORT.sub(imported, css))
