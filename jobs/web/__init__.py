"""`narrate serve`: one ASGI app (FastAPI) for programs (the `/v1` HTTP API: narrations of documents,
OpenAI's speech endpoint, models, voices) and, later, for people (server-rendered pages). It parses,
calls the same `narrate.jobs.api` functions as the CLI and renders JSON; its own parts are the
security guard (Host, Origin, bearer key), uploads streamed to a private folder with caps, the
views of a job for HTTP clients, callbacks at a job's end and the speech request's clip jobs."""
