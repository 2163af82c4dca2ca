-- groups, a correct design written differently, in a transaction block:
-- another step order (the group row first, then the event row, then the
-- count) in ONE DEFERRED block. Its first statement writes, so there is
-- no earlier read whose snapshot another writer could move past: SQLite
-- takes the write lock at that statement with the busy handler, and the
-- block behaves as an IMMEDIATE one. A duplicate stops at the event insert
-- and commits only the group row (which its first send created already).
-- Every invariant must hold.

-- name: schema
CREATE TABLE IF NOT EXISTS error_events (
  id          TEXT PRIMARY KEY,
  project     TEXT,
  fingerprint TEXT,
  group_id    TEXT,
  received_at INTEGER
);
CREATE TABLE IF NOT EXISTS error_groups (
  id          TEXT PRIMARY KEY,
  project     TEXT,
  fingerprint TEXT,
  status      TEXT,
  event_count INTEGER
);

-- name: ingest.group
-- begin: deferred
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.event
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.count
-- counts: true
-- end: commit
UPDATE error_groups
SET event_count = event_count + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;

-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups WHERE id = :group_id;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
