-- KEYS: a queue key, the claim list. ARGV: a job id. Moves that job (wherever it waits in the queue)
-- onto the claim list. Returns 1 if it was taken, 0 if the queue no longer holds it (another worker
-- has taken it, or it was canceled).
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0
