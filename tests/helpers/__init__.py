"""What the tests share, one module per kind: processes (procs), the CLI in this process (cli),
servers (servers), audio (audio), documents and book files (books), the fake engine (fake), faults
(faults), queue operations (ops), schedules (sched), the dashboard over HTTP (dashboard), a
headless browser (browser), the stitch in a child process (encode) and the dtype probe
(dtype_probe). Imported as ``from helpers.procs import narrate`` (tests/ is on sys.path through
tests/conftest.py)."""
