-- groups, a correct design written differently, in a transaction block:
-- the UPSERT design's two ingest statements (the event row, then one
-- UPSERT that creates the group with a count of 1 or counts the event and
-- decides the regression) in ONE IMMEDIATE block. The row and its count
-- commit together or not at all; a duplicate stops at the event insert
-- and commits nothing. Every invariant must hold.

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

-- name: ingest.event
-- begin: immediate
-- stop-if: changes = 0
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.count
-- counts: true
-- end: commit
INSERT INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 1)
ON CONFLICT (id) DO UPDATE
SET event_count = event_count + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END;

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
