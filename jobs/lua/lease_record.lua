-- KEYS: lease, then hashes; ARGV: lease value, field, then one value per hash ("" deletes the field,
-- "-" leaves it). Writes only while the lease is the caller's.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
for i = 2, #KEYS do
  local v = ARGV[i + 1]
  if v == '' then redis.call('HDEL', KEYS[i], ARGV[2])
  elseif v ~= '-' then redis.call('HSET', KEYS[i], ARGV[2], v) end
end
return 1
