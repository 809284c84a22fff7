"""Podcast feeds: named lists of narrations (`--feed NAME` at submit or on a schedule) kept in
Redis with a per-feed token, and their RSS 2.0 documents with the iTunes and Podcasting 2.0 tags
podcast apps read. `narrate serve` serves them (jobs/web/feed_routes.py); `narrate feed` manages them."""
