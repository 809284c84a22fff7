"""The pages' HTML: Jinja2 templates (jobs/web/templates/, autoescaped), the static files they load
(jobs/web/static/: htmx, vendored; the pages' own script and style sheet; Swagger UI for /docs,
vendored in static/swagger/; no CDN), every printed value without bidi controls, and the Content
Security Policy every page, /docs too, is sent with (scripts and styles from this server only,
nothing inline)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup
from narrate.jobs.api.redo_request import ranges
from narrate.jobs.counts import count
from narrate.jobs.humanize import clock, duration, moment
from narrate.jobs.xmltext import without_bidi

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


def eta(job: dict[str, Any]) -> str | None:
    """A narration's ETA as the Queue and Job pages show it ("ETA 1 min 17 s"; narrate.js `etaText`
    writes the same live): only while it runs and the figure is known."""
    seconds = (job.get("progress") or {}).get("eta_s")
    if job.get("status") != "in_progress" or seconds is None:
        return None
    return f"ETA {duration(float(seconds), spelled=True)}"


def realtime(job: dict[str, Any]) -> str | None:
    """Its realtime factor ("1.50× realtime"; narrate.js `rtfText`), or None where there is none."""
    factor = (job.get("progress") or {}).get("realtime_factor")
    return None if not factor else f"{float(factor):.2f}× realtime"


def shown(value: Any) -> Any:
    """Every value a template prints, as the page shows it: text without bidi controls (a title,
    file or voice name never reads otherwise than it is written; jobs/xmltext.py), escaped text kept
    escaped."""
    if isinstance(value, Markup):
        return Markup(without_bidi(str(value)))
    return without_bidi(value) if isinstance(value, str) else value


def templates() -> Jinja2Templates:
    global _templates
    if _templates is None:
        from starlette.templating import Jinja2Templates

        _templates = Jinja2Templates(directory=str(TEMPLATES))
        _templates.env.finalize = shown
        _templates.env.filters["clock"] = _seconds
        _templates.env.filters["moment"] = moment  # a place in the book, to the tenth (the proof's sentences)
        _templates.env.filters["ranges"] = ranges  # sentence numbers in short: 1, 3-5, 9 (a redo's)
        _templates.env.filters["count"] = count  # 1 chapter, 3 chapters: {{ n|count("chapter") }}
        _templates.env.globals["nav"] = NAV
        _templates.env.globals.update(eta=eta, realtime=realtime)
    return _templates


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """The page `name` (a template), sent with the pages' Content Security Policy."""
    from narrate.jobs.web import flash

    web = request.app.state.web
    from narrate.jobs.web.guard import SIGNED_IN_STATE

    # "Sign out" where there is a session to end: a key is set and this request passed the guard with it (not on
    # the sign-in page, which anyone may see)
    signed_in = web.settings.api_key is not None and bool(request.scope.get("state", {}).get(SIGNED_IN_STATE))
    page = {"signed_in": signed_in, "path": request.url.path, **context}
    answer = templates().TemplateResponse(
        request,
        name,
        page,
        status_code=status,
        headers={"Content-Security-Policy": PAGE_POLICY, "Cache-Control": "no-store"},
    )
    if not name.startswith("_"):  # a whole page (not a piece htmx swaps in) showed what the last action said
        flash.clear(request, answer)
    return answer
