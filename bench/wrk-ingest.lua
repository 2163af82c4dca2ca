-- wrk-ingest.lua: POST /v1/events (HTTP target contract v1, groups workload)
-- with a FRESH event id on every request, so every request is a real
-- ingest (accepted = true), never a duplicate.
--
--   wrk -t2 -c64 -d20s -s bench/wrk-ingest.lua http://127.0.0.1:PORT
--   wrk ... -s bench/wrk-ingest.lua http://127.0.0.1:PORT -- NAMESPACE
--
-- Keys are drawn like scenarios/groups-atomic.toml: 4 projects x 250
-- fingerprints = 1000 groups; group index g is project p{g%4}, fingerprint
-- fp{g/4}; the 4 hot groups (g = 0..3) take half of the events, the other
-- half is uniform over g = 4..999. The optional NAMESPACE is prefixed to
-- every project name and every event id, as the bench does on a target it
-- did not create (`r<ms>-<tag>.`, keys.event_id = "namespaced"), so a run's
-- rows can be told apart from earlier ones and both tools store keys of the
-- same length. Each request carries the bench's three op headers
-- (x-specstorm-op, x-specstorm-key, x-specstorm-f) and its body's layout,
-- so the server parses the same bytes from either tool.
--
-- Event ids are UUID-shaped: XXXXXXXX-TTTT-4RRR-VRRR-CCCCCCCCCCCC, where X is
-- random per request, R random per thread, T the thread number, V the
-- RFC 4122 variant nibble and C a per-thread counter: unique within a run.
-- The message has the length of the bench's.

local PROJECTS, FINGERPRINTS = 4, 250
local GROUPS = PROJECTS * FINGERPRINTS
local HOT_GROUPS, HOT_FRACTION = 4, 0.5

local next_thread = 0

-- /dev/urandom bytes as an integer (nbytes <= 4); falls back to the clock.
local function urandom(nbytes)
  local f = io.open("/dev/urandom", "rb")
  local n = 0
  if f then
    local s = f:read(nbytes)
    f:close()
    for i = 1, #s do n = n * 256 + s:byte(i) end
    return n
  end
  return math.floor((os.time() * 1000003 + os.clock() * 1e6) % 2 ^ (8 * nbytes))
end

-- Runs in the main thread, once per wrk thread, before the load starts.
function setup(thread)
  thread:set("thread_no", next_thread)
  thread:set("seed", urandom(4))
  next_thread = next_thread + 1
end

local counter = 0
local prefix, mid, path, namespace, headers, op_base

-- Runs in each wrk thread; args are what follows `--` on the command line.
function init(args)
  namespace = args[1] or ""
  math.randomseed(seed)
  -- Burn a few values: LuaJIT's first draws after seeding are correlated.
  for _ = 1, 10 do math.random() end
  prefix = string.format("%04x", thread_no % 0x10000)
  mid = string.format("4%03x-%x%03x", math.random(0, 0xfff),
    8 + math.random(0, 3), math.random(0, 0xfff))
  path = wrk.path:gsub("/+$", "") .. "/v1/events"
  headers = { ["Content-Type"] = "application/json", ["x-specstorm-f"] = "ingest" }
  -- Op ids of one thread apart from another's, as the bench's are unique.
  op_base = thread_no * 1000000000
end

function request()
  counter = counter + 1
  -- Two 24-bit halves: string.format's %x is 32-bit in LuaJIT.
  -- A random leading part, as client UUIDs (and the bench's ids) have: a
  -- sequential id would append to one B-tree page and flatter the server.
  -- The thread number and counter that follow keep it unique.
  local id = string.format("%04x%04x-%s-%s-%06x%06x",
    math.random(0, 0xffff), math.random(0, 0xffff), prefix, mid,
    math.floor(counter / 0x1000000) % 0x1000000, counter % 0x1000000)
  local g
  if math.random() < HOT_FRACTION then
    g = math.random(0, HOT_GROUPS - 1)
  else
    g = math.random(HOT_GROUPS, GROUPS - 1)
  end
  local body = string.format(
    '{"id": "%s%s", "project": "%sp%d", "fingerprint": "fp%d", "message": "TypeError: cannot read properties of undefined (reading \'x%d\')"}',
    namespace, id, namespace, g % PROJECTS, math.floor(g / PROJECTS), math.random(0, 999))
  headers["x-specstorm-op"] = tostring(op_base + counter)
  headers["x-specstorm-key"] = tostring(math.random(0, 0x7fffffff))
  return wrk.format("POST", path, headers, body)
end
