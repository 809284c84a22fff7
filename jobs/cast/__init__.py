"""A cast of voices, on the text side: declaring one (a narrator, members, variants, aliases, seeds:
`--voice alice=FILE|NAME`, `cast.toml`), narrate's markup (`[alice]`, `[/]`, `\\[`) and the
importers of other tools' markup, quoted speech found without markup (`--dialogue-voice`), each
sentence's voice label given to a document as it is read, and what `narrate cast` prints. The
voices themselves are resolved later (jobs.voices.choice); nothing here reads audio or talks to
Redis."""
