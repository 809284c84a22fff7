-- KEYS[1]: the job's hash; ARGV: the worker's name, the serialized meta, then KEPT_WHILE_AWAY.
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if status == 'started' then
  if redis.call('HGET', KEYS[1], 'worker_name') ~= ARGV[1] then return 0 end
else
  local kept = false
  for i = 3, #ARGV do
    if status == ARGV[i] then kept = true end
  end
  if not kept then return 0 end
end
redis.call('HSET', KEYS[1], 'meta', ARGV[2])
return 1
