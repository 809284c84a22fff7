-- One speech request lets go of a clip it waited for.
-- KEYS[1]: the clip's waiters counter (narrate:clip:<id>:waiting); KEYS[2]: its parts stream.
-- Returns 1 when no request waits any more (the counter and the stream are gone: the caller may cancel the
-- clip's job), else 0.
local left = redis.call('DECR', KEYS[1])
if left > 0 then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1
