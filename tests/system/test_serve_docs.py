"""`narrate serve`'s /docs page in a real browser (Playwright driving the installed Chromium), against a
real server: Swagger UI, vendored in the package (jobs/web/static/swagger/), renders the server's
OpenAPI 3.1 document and runs a request, with every request the page makes going to the server itself
(no CDN), under the pages' Content Security Policy (nothing inline) with no console error."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from helpers.chromium import SKIP_REASON, find_chromium
from helpers.web import serve

pytestmark = pytest.mark.skipif(find_chromium() is None, reason=SKIP_REASON)
VIOLATIONS = """window.__violations = [];
document.addEventListener("securitypolicyviolation",
                          e => window.__violations.push(e.violatedDirective + " " + e.blockedURI));"""


@pytest.fixture(scope="module")
def served(checkpoint):
    s = serve(checkpoint)
    yield s
    logs = s.close()
    assert "Traceback" not in logs, logs[-4000:]


def test_the_docs_page_is_the_vendored_swagger_ui_under_the_pages_policy(served):
    from narrate.jobs.web.templating import PAGE_POLICY

    page = served.get("/docs")
    assert page.status_code == 200 and page.headers["content-security-policy"] == PAGE_POLICY
    assert "unsafe-inline" not in PAGE_POLICY and "unsafe-eval" not in PAGE_POLICY
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert [src for src, _ in scripts] == [
        ' src="/static/swagger/swagger-ui-bundle.js" defer',
        ' src="/static/docs.js" defer',
    ]
    assert all(not body.strip() for _, body in scripts)  # nothing inline
    assert "http" not in page.text  # no address elsewhere
    assert served.get("/openapi.json").json()["openapi"].startswith("3.1")
    for path in ("/static/swagger/swagger-ui-bundle.js", "/static/swagger/swagger-ui.css", "/static/docs.js"):
        assert served.get(path).status_code == 200, path


def test_the_docs_page_renders_and_runs_a_request_with_nothing_from_elsewhere(served, page):
    requested: list[str] = []
    console: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.add_init_script(VIOLATIONS)
    page.goto(served.url + "/docs")

    post = page.locator(".opblock.opblock-post:has(.opblock-summary-path[data-path='/v1/narrations'])")
    post.first.wait_for(state="visible", timeout=30_000)
    assert page.locator(".opblock").count() >= 8  # the whole list of operations, not only the first
    assert "narrate" in page.locator(".info .title").inner_text()

    models = page.locator(".opblock.opblock-get:has(.opblock-summary-path[data-path='/v1/models'])").first
    models.locator(".opblock-summary-control").click()
    models.locator("button.try-out__btn").click()
    models.locator("button.execute").click()
    status = models.locator(".live-responses-table tr.response .response-col_status").first
    status.wait_for(state="visible", timeout=30_000)
    assert status.inner_text().strip() == "200"
    assert "tts-1" in models.locator(".live-responses-table tr.response .response-col_description").first.inner_text()

    assert page.evaluate("window.__violations") == []
    assert console == [], console
    origin = urlsplit(served.url)
    elsewhere = [u for u in requested if urlsplit(u)[:2] != origin[:2] and not u.startswith(("data:", "blob:"))]
    assert elsewhere == [], elsewhere
    paths = {urlsplit(u).path for u in requested}
    assert {
        "/docs",
        "/static/swagger/swagger-ui-bundle.js",
        "/static/swagger/swagger-ui.css",
        "/static/docs.js",
        "/openapi.json",
        "/v1/models",
    } <= paths, paths
