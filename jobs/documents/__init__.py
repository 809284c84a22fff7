"""Documents: reading files (readers/), text encodings and cleaning, languages, the lexicon, spoken-
text normalization (normalize/) and frame budgets. Nothing here talks to Redis."""
