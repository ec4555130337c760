import { createHash } from 'node:crypto';

/** A Lua script, run by its SHA-1 once the server has it. */
export interface LuaScript {
  text: string;
  sha: string;
}

const script = (text: string): LuaScript => ({ text, sha: createHash('sha1').update(text).digest('hex') });

// Every stream is checked before anything is written: a key of another type would otherwise fail
// its XADD halfway through a script, the messages before it published and the rest not.
const STREAM_TYPES = `
for i = first_stream, #KEYS do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'stream' and t ~= 'none' then
    return redis.error_reply('WRONGTYPE key ' .. KEYS[i] .. ' holds a ' .. t .. ', not a stream')
  end
end`;

const XADD = `
local function xadd(key, maxlen, payload)
  if maxlen == '0' then
    redis.call('XADD', key, '*', 'event', payload)
  else
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'event', payload)
  end
end`;

/**
 * A batch and its checkpoint, atomically (a script runs alone). KEYS: the checkpoint hash, then
 * the streams. ARGV: epoch, lsn, the JSON of what is published of unfinished transactions ('' for
 * nothing), maxlen, then (stream's index in KEYS, message) pairs. Returns 0 once written, or the
 * stored epoch, writing nothing, when it is newer than the writer's (fenced).
 */
export const APPLY_BATCH = script(`${XADD}
local stored = tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0')
if stored > tonumber(ARGV[1]) then
  return stored
end
local first_stream = 2
${STREAM_TYPES}
for i = 5, #ARGV, 2 do
  xadd(KEYS[tonumber(ARGV[i])], ARGV[4], ARGV[i + 1])
end
redis.call('HSET', KEYS[1], 'lsn', ARGV[2], 'epoch', ARGV[1])
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], 'unfinished')
else
  redis.call('HSET', KEYS[1], 'unfinished', ARGV[3])
end
return 0
`);

/**
 * Snapshot rows of one stream, and with the last of a partition its done marker, atomically.
 * KEYS: the snapshot hash, the stream. ARGV: maxlen, marker field ('' for none), rows of the
 * partition, then the messages. Returns 0.
 */
export const PUBLISH_ROWS = script(`${XADD}
local first_stream = 2
${STREAM_TYPES}
for i = 4, #ARGV do
  xadd(KEYS[2], ARGV[1], ARGV[i])
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
end
return 0
`);
