-- KEYS: the queue keys in priority order, then the claim list. Returns {queue key, job id} or nil.
-- A job already on the claim list comes first ({"", job id}): a live worker has none there unless
-- the reply to an earlier claim was lost (the connection broke and the client retried), which
-- would otherwise strand that job until the host's next worker start.
local claims = KEYS[#KEYS]
local held = redis.call('LINDEX', claims, 0)
if held then return {'', held} end
for i = 1, #KEYS - 1 do
  local id = redis.call('LMOVE', KEYS[i], claims, 'LEFT', 'RIGHT')
  if id then return {KEYS[i], id} end
end
return nil
