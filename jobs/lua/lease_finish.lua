-- KEYS: lease, schedules hash, state, problem; ARGV: lease value, schedule name, new state.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then redis.call('DEL', KEYS[1]) return 0 end
redis.call('SET', KEYS[3], ARGV[3])
redis.call('DEL', KEYS[1], KEYS[4])
return 1
