"""One book across many hosts: cutting a book into part jobs, the parts' audio in Redis, taking over a
dead host's parts, and `narrate fetch`."""
