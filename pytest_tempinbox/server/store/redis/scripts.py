"""The Redis store's key names and its Lua scripts: each member's one atomic round trip.

Every change the Redis store (:mod:`.store`) makes runs as one of these
scripts, so it is atomic however many server processes share the Redis, and
costs one round trip. The layout of the keys is described in
:mod:`.store`'s docstring. Standard library only: redis-py is imported
by the store, not here.
"""

from __future__ import annotations

__all__ = [
    "ADD_FAULT",
    "CHANNEL",
    "CHARGE",
    "CLEAR_FAULTS",
    "CREATE",
    "DELETE",
    "DELETE_MESSAGES",
    "DELIVER",
    "FAULTS_ADDED",
    "GENERATED",
    "PENDING_FAULTS",
    "PREFIX",
    "READ",
    "SAVE_JSON",
    "STATS",
    "SWEEP",
    "TAKE_FAULT",
    "USAGE",
    "inbox_key",
    "secret_key",
]

PREFIX = "tempinbox:"
_STORE = PREFIX + "{store}:"  # the store-wide keys, all in one hash slot
CHANNEL = _STORE + "events"
FAULTS_ADDED = _STORE + "faults-added"
GENERATED = _STORE + "generated"
REFUSALS = _STORE + "refusals"


def inbox_key(address: str, part: str) -> str:
    """The key of one part of the inbox at ``address`` (``inbox``, ``ids``, ``msgs``...)."""
    return f"{PREFIX}{{{address}}}:{part}"


def secret_key(name: str) -> str:
    """The key of the store-wide secret ``name`` (:meth:`.store.RedisStore.secret`)."""
    return f"{_STORE}secret:{name}"


# Shared by the scripts: key names, the removal of one message, the purge of one inbox.
_COMMON = f"""
local G = '{_STORE}'
local PREFIX = '{PREFIX}'
local function key(addr, part) return '{PREFIX}{{' .. addr .. '}}:' .. part end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function remove_message(addr, id, evicted)
  local msgs = key(addr, 'msgs')
  local size = redis.call('HSTRLEN', msgs, id)
  redis.call('HDEL', msgs, id, id .. ':e', id .. ':j', id .. ':u')
  redis.call('ZREM', key(addr, 'ids'), id)
  redis.call('DECRBY', key(addr, 'bytes'), size)
  redis.call('ZREM', G .. 'arrivals', id .. ' ' .. addr)
  redis.call('HINCRBY', G .. 'stats', 'bytes', 0 - size)
  redis.call('HINCRBY', G .. 'stats', 'messages', -1)
  if evicted then redis.call('HINCRBY', G .. 'stats', 'evictions', 1) end
end
local function purge(addr)
  local ids = redis.call('ZRANGE', key(addr, 'ids'), 0, -1)
  for _, id in ipairs(ids) do redis.call('ZREM', G .. 'arrivals', id .. ' ' .. addr) end
  local bytes = tonumber(redis.call('GET', key(addr, 'bytes')) or '0')
  redis.call('HINCRBY', G .. 'stats', 'bytes', 0 - bytes)
  redis.call('HINCRBY', G .. 'stats', 'messages', 0 - #ids)
  redis.call('DEL', key(addr, 'inbox'), key(addr, 'ids'), key(addr, 'msgs'),
    key(addr, 'bytes'), key(addr, 'faults'), key(addr, 'watched'))
  redis.call('ZREM', G .. 'inboxes', addr)
  local owner = redis.call('GET', key(addr, 'owner'))
  if owner then
    redis.call('ZREM', PREFIX .. 'tenant:' .. owner .. ':live', addr)
    redis.call('DEL', key(addr, 'owner'))
  end
  redis.call('PUBLISH', G .. 'events', 'x ' .. addr)
  return #ids
end
local function sweep()
  local due = redis.call('ZRANGEBYSCORE', G .. 'inboxes', '-inf', now_ms())
  local swept = 0
  for _, addr in ipairs(due) do
    if redis.call('EXISTS', key(addr, 'inbox')) == 0 then
      purge(addr)
      swept = swept + 1
    end
  end
  return swept
end
local function take_window(name, limit, ms)
  -- One more in a fixed window of ms: false, or the ms until it frees when it is full.
  if limit == '' then return false end
  local used = tonumber(redis.call('GET', name) or '0')
  if used >= tonumber(limit) then
    local left = redis.call('PTTL', name)
    if left < 0 then left = tonumber(ms) end
    return left
  end
  if redis.call('INCR', name) == 1 then redis.call('PEXPIRE', name, ms) end
  return false
end
local function expire_with_inbox(addr, part)
  local at = redis.call('PEXPIRETIME', key(addr, 'inbox'))
  if at > 0 then redis.call('PEXPIREAT', key(addr, part), at) end
end
"""

CREATE = (
    _COMMON
    + """
-- ARGV: address, created_at (ISO), ttl in seconds ('' for none), owner ('' for
-- none), then the quotas ('' for none): live inboxes, inboxes per window, the
-- window in ms, and the name the owner's counters go by.
-- Returns {gen}, {0} (the address is live), {-1} (over the live inboxes
-- quota) or {-2, ms until the window frees}.
local addr, ttl, owner = ARGV[1], ARGV[3], ARGV[4]
local max_live, per_window, window, counted = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if redis.call('EXISTS', key(addr, 'inbox')) == 1 then return {0} end
if redis.call('ZSCORE', G .. 'inboxes', addr) then purge(addr) end  -- an expired one's leftovers
local live = PREFIX .. 'tenant:' .. counted .. ':live'
if max_live ~= '' then
  local count
  if owner == '' then
    count = redis.call('ZCOUNT', G .. 'inboxes', '(' .. now_ms(), '+inf')
  else
    redis.call('ZREMRANGEBYSCORE', live, '-inf', now_ms())
    count = redis.call('ZCARD', live)
  end
  if count >= tonumber(max_live) then return {-1} end
end
if per_window ~= '' then
  local left = take_window(PREFIX .. 'tenant:' .. counted .. ':window', per_window, window)
  if left then return {-2, left} end
end
local gen = redis.call('INCR', G .. 'gen')
-- UIDVALIDITY: the creation second, above the last one given (see next_validity)
local validity = math.max(tonumber(redis.call('TIME')[1]),
  tonumber(redis.call('GET', G .. 'validity') or '0') + 1)
redis.call('SET', G .. 'validity', validity)
redis.call('HSET', key(addr, 'inbox'), 'created', ARGV[2], 'ttl', ttl, 'gen', gen,
  'validity', validity)
local deadline = '+inf'
if ttl ~= '' then
  local ms = math.max(1, math.floor(tonumber(ttl) * 1000 + 0.5))
  redis.call('PEXPIRE', key(addr, 'inbox'), ms)
  deadline = now_ms() + ms
end
redis.call('ZADD', G .. 'inboxes', deadline, addr)
if owner ~= '' then
  redis.call('SET', key(addr, 'owner'), owner)
  if ttl ~= '' then redis.call('PEXPIREAT', key(addr, 'owner'), deadline) end
  redis.call('SADD', PREFIX .. 'tenant:' .. owner .. ':inboxes', addr)
  redis.call('ZADD', live, deadline, addr)
end
return {gen}
"""
)

DELIVER = (
    _COMMON
    + """
-- ARGV: raw, envelope header, max messages per inbox, max stored bytes, then the addresses
local raw, header = ARGV[1], ARGV[2]
local max_messages, max_bytes = tonumber(ARGV[3]), tonumber(ARGV[4])
local ms = now_ms()
local last = tonumber(redis.call('GET', G .. 'ms') or '0')
if ms < last then ms = last else redis.call('SET', G .. 'ms', ms) end
local size = #raw
local stored = {}
for i = 5, #ARGV do
  local addr = ARGV[i]
  if redis.call('EXISTS', key(addr, 'inbox')) == 1 then
    local seq = redis.call('INCR', G .. 'seq')
    local id = string.format('%012x%012x', ms, seq)
    local ids = key(addr, 'ids')
    local uid = redis.call('HINCRBY', key(addr, 'inbox'), 'uid', 1)
    redis.call('HSET', key(addr, 'msgs'), id, raw, id .. ':e', header, id .. ':u', uid)
    expire_with_inbox(addr, 'msgs')
    redis.call('ZADD', ids, 0, id)
    redis.call('INCRBY', key(addr, 'bytes'), size)
    redis.call('ZADD', G .. 'arrivals', seq, id .. ' ' .. addr)
    redis.call('HINCRBY', G .. 'stats', 'bytes', size)
    redis.call('HINCRBY', G .. 'stats', 'messages', 1)
    if redis.call('ZCARD', ids) > max_messages then
      remove_message(addr, redis.call('ZRANGE', ids, 0, 0)[1], true)
    end
    if redis.call('EXISTS', key(addr, 'watched')) == 1 then  -- a server waits on it
      redis.call('PUBLISH', G .. 'events', 'd ' .. addr)
    end
    stored[#stored + 1] = addr
    stored[#stored + 1] = id
    stored[#stored + 1] = uid
  end
end
while tonumber(redis.call('HGET', G .. 'stats', 'bytes') or '0') > max_bytes do
  local oldest = redis.call('ZPOPMIN', G .. 'arrivals')
  if #oldest == 0 then break end
  local id, addr = string.match(oldest[1], '^(%S+) (.*)$')
  if redis.call('EXISTS', key(addr, 'inbox')) == 0 then
    purge(addr)  -- expired, not swept yet: all of it goes
  else
    remove_message(addr, id, true)
  end
end
return stored
"""
)

READ = (
    _COMMON
    + """
-- ARGV: address, mode (all, after, since, one, last, none), cursor, and for a
-- wait the milliseconds it may last: deliveries are announced that long at least.
-- Returns {0} (no inbox), {1} (after is no message of it) or
-- {2, created, ttl, gen, pttl, then id, raw, header, json, uid for each message}.
local addr, mode, cursor, watch = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4] or '')
local info = redis.call('HMGET', key(addr, 'inbox'), 'created', 'ttl', 'gen')
if not info[3] then return {0} end
if watch and redis.call('PTTL', key(addr, 'watched')) < watch then
  redis.call('SET', key(addr, 'watched'), 1, 'PX', watch)
end
local ids_key = key(addr, 'ids')
local out = {2, info[1], info[2], info[3], redis.call('PTTL', key(addr, 'inbox'))}
local ids
if mode == 'none' then return out
elseif mode == 'all' then ids = redis.call('ZRANGE', ids_key, 0, -1)
elseif mode == 'last' then
  out[6] = redis.call('ZRANGE', ids_key, -1, -1)[1] or ''
  return out
elseif mode == 'one' then
  ids = {}
  if redis.call('ZSCORE', ids_key, cursor) then ids[1] = cursor end
else
  if mode == 'after' and not redis.call('ZSCORE', ids_key, cursor) then return {1} end
  local low = '-'
  if cursor ~= '' then low = '(' .. cursor end
  ids = redis.call('ZRANGEBYLEX', ids_key, low, '+')
end
local msgs = key(addr, 'msgs')
for _, id in ipairs(ids) do
  local values = redis.call('HMGET', msgs, id, id .. ':e', id .. ':j', id .. ':u')
  out[#out + 1] = id
  out[#out + 1] = values[1]
  out[#out + 1] = values[2]
  out[#out + 1] = values[3]
  out[#out + 1] = values[4] or '0'
end
return out
"""
)

SAVE_JSON = (
    _COMMON
    + """
-- ARGV: address, id, json: kept only while the message is
if redis.call('HEXISTS', key(ARGV[1], 'msgs'), ARGV[2]) == 1 then
  redis.call('HSET', key(ARGV[1], 'msgs'), ARGV[2] .. ':j', ARGV[3])
end
return 0
"""
)

DELETE = (
    _COMMON
    + """
if redis.call('EXISTS', key(ARGV[1], 'inbox')) == 0 then return -1 end
return purge(ARGV[1])
"""
)

DELETE_MESSAGES = (
    _COMMON
    + """
-- ARGV: address, then the ids to remove. Returns -1 (no inbox) or how many were there.
local addr = ARGV[1]
if redis.call('EXISTS', key(addr, 'inbox')) == 0 then return -1 end
local removed = 0
for i = 2, #ARGV do
  if redis.call('ZSCORE', key(addr, 'ids'), ARGV[i]) then
    remove_message(addr, ARGV[i], false)
    removed = removed + 1
  end
end
if removed > 0 and redis.call('EXISTS', key(addr, 'watched')) == 1 then  -- an IDLE may wait on it
  redis.call('PUBLISH', G .. 'events', 'm ' .. addr)
end
return removed
"""
)

SWEEP = _COMMON + "\nreturn sweep()\n"

USAGE = (
    _COMMON
    + """
-- ARGV: address. Returns false (no inbox), or {owner ('' for none), messages,
-- bytes}: what the owner's live inboxes hold together (everyone's for none).
local addr = ARGV[1]
if redis.call('EXISTS', key(addr, 'inbox')) == 0 then return false end
local owner = redis.call('GET', key(addr, 'owner'))
if not owner then
  local v = redis.call('HMGET', G .. 'stats', 'messages', 'bytes')
  return {'', tonumber(v[1] or '0'), tonumber(v[2] or '0')}
end
local live = PREFIX .. 'tenant:' .. owner .. ':live'
redis.call('ZREMRANGEBYSCORE', live, '-inf', now_ms())
local messages, bytes = 0, 0
for _, a in ipairs(redis.call('ZRANGE', live, 0, -1)) do
  messages = messages + redis.call('ZCARD', key(a, 'ids'))
  bytes = bytes + tonumber(redis.call('GET', key(a, 'bytes')) or '0')
end
return {owner, messages, bytes}
"""
)

CHARGE = (
    _COMMON
    + """
-- ARGV: the window's key, its limit, its length in ms. Returns -1 (counted), or
-- the ms until the window frees (over the quota: nothing counted).
return take_window(ARGV[1], ARGV[2], ARGV[3]) or -1
"""
)

STATS = (
    _COMMON
    + """
sweep()
local values = redis.call('HMGET', G .. 'stats', 'messages', 'bytes', 'evictions')
return {redis.call('ZCARD', G .. 'inboxes'), tonumber(values[1] or '0'),
  tonumber(values[2] or '0'), tonumber(values[3] or '0')}
"""
)

# A queued fault is "stage times json", the JSON being the fault without its times.
ADD_FAULT = (
    _COMMON
    + """
-- ARGV: address, the fault, the most faults an inbox may hold
local addr = ARGV[1]
if redis.call('EXISTS', key(addr, 'inbox')) == 0 then return -1 end
if redis.call('LLEN', key(addr, 'faults')) >= tonumber(ARGV[3]) then return -2 end
redis.call('RPUSH', key(addr, 'faults'), ARGV[2])
expire_with_inbox(addr, 'faults')
redis.call('SET', G .. 'faults-added', 1)
redis.call('PUBLISH', G .. 'events', 'f')
return 0
"""
)

PENDING_FAULTS = (
    _COMMON
    + """
if redis.call('EXISTS', key(ARGV[1], 'inbox')) == 0 then return false end
return redis.call('LRANGE', key(ARGV[1], 'faults'), 0, -1)
"""
)

CLEAR_FAULTS = (
    _COMMON
    + """
if redis.call('EXISTS', key(ARGV[1], 'inbox')) == 0 then return -1 end
local count = redis.call('LLEN', key(ARGV[1], 'faults'))
redis.call('DEL', key(ARGV[1], 'faults'))
return count
"""
)

TAKE_FAULT = (
    _COMMON
    + """
-- ARGV: address, stage. Returns the fault taken (its times being 1), or false.
local faults = key(ARGV[1], 'faults')
if redis.call('EXISTS', key(ARGV[1], 'inbox')) == 0 then return false end
local first = redis.call('LINDEX', faults, 0)
if not first then return false end
local stage, times, rest = string.match(first, '^(%S+) (%d+) (.*)$')
if stage ~= ARGV[2] then return false end
times = tonumber(times)
if times > 1 then
  redis.call('LSET', faults, 0, stage .. ' ' .. (times - 1) .. ' ' .. rest)
else
  redis.call('LPOP', faults)
end
return stage .. ' 1 ' .. rest
"""
)
