"""The API the CLI, schedules and (later) the web layer call: the request, prepare and submit (one book
or many), model choice, due times, status, listing and info."""
