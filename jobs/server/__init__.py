"""The Redis/Valkey server: the connection (NARRATE_REDIS_URL or the embedded Valkey), the embedded
server's supervision and local state, durability of acknowledged writes, stored inputs (documents,
voices)."""
