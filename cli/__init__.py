"""narrate.cli: click commands. They parse, call narrate.jobs / narrate.worker, and print."""
