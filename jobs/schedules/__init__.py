"""Recurring schedules: their definitions in Redis, cron times, the watched folder, one tick under a
lease, and the scheduler loop."""
