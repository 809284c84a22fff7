"""`narrate serve`: one ASGI app (FastAPI) for programs (the `/v1` HTTP API: narrations of documents,
OpenAI's speech endpoint, models, voices; podcast feeds) and for people (server-rendered pages: New,
Queue, Job, Books, Voices, sign-in). It parses, calls the same `narrate.jobs.api` functions as the
CLI and renders JSON or HTML; its own parts are the guard (the security policy of jobs/security.py
for the web: Host, Origin, bearer key or session cookie; body caps), uploads streamed to a private
folder with caps, the views of a job for HTTP clients, callbacks at a job's end and the speech
request's clip jobs."""
