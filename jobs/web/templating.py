"""The pages' HTML: Jinja2 templates (jobs/web/templates/, autoescaped), the static files they load
(jobs/web/static/: htmx, vendored; the pages' own script and style sheet; Swagger UI for /docs,
vendored in static/swagger/; no CDN), and the Content Security Policy every page, /docs too, is
sent with (scripts and styles from this server only, nothing inline)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from narrate.jobs.humanize import clock

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.templating import Jinja2Templates

HERE = Path(__file__).parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
NAV = (("/new", "New"), ("/queue", "Queue"), ("/books", "Books"), ("/voices", "Voices"))
_templates: Jinja2Templates | None = None


def _seconds(value: float | None) -> str:
    return "–" if value is None else clock(float(value))


def templates() -> Jinja2Templates:
    global _templates
    if _templates is None:
        from starlette.templating import Jinja2Templates

        _templates = Jinja2Templates(directory=str(TEMPLATES))
        _templates.env.filters["clock"] = _seconds
        _templates.env.globals["nav"] = NAV
    return _templates


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """The page `name` (a template), sent with the pages' Content Security Policy."""
    web = request.app.state.web
    page = {"signed_in": web.settings.api_key is not None, "path": request.url.path, **context}
    return templates().TemplateResponse(
        request, name, page, status_code=status, headers={"Content-Security-Policy": PAGE_POLICY,
                                                          "Cache-Control": "no-store"}
    )  # fmt: skip
