-- groups, variant "deferred-resolve": the atomic ingest, and a resolver
-- that reads the status and then writes from what it read, in one
-- DEFERRED transaction block (targets/README.md, "Transaction blocks").
-- The read takes a snapshot; when another connection commits a write
-- before the update, SQLite refuses the update at once (SQLITE_BUSY or, in
-- WAL, SQLITE_BUSY_SNAPSHOT) without waiting for the busy timeout: the
-- bench rolls the block back (`fail`, nothing applied) and runs it again
-- from BEGIN, so the decision is never made from a stale read. Holds.

-- name: schema
-- The canonical tables, exactly as the audit reads them. Deliberately no
-- UNIQUE(project, fingerprint) and no CHECK on status: a broken design must
-- be able to break them, so that the audit (not the schema) finds it.
CREATE TABLE IF NOT EXISTS error_events (
  id          TEXT PRIMARY KEY,
  project     TEXT,
  fingerprint TEXT,
  group_id    TEXT,
  received_at INTEGER -- unix ms
);
CREATE TABLE IF NOT EXISTS error_groups (
  id          TEXT PRIMARY KEY,
  project     TEXT,
  fingerprint TEXT,
  status      TEXT,
  event_count INTEGER
);

-- name: ingest.s1
-- stop-if: changes = 0
-- The event id is the client's, reused by retries: no change = duplicate.
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
-- Concurrent creators of the same group collide harmlessly.
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
UPDATE error_groups
SET event_count = event_count + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;

-- name: resolve.read
-- begin: deferred
SELECT status AS cur FROM error_groups WHERE id = :group_id;

-- name: resolve.update
-- stop-if: rows > 0
-- end: commit
-- Decides from :cur alone: safe only because the read and this write
-- share one snapshot (a write in between fails this statement).
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND :cur IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
-- Run when the update was refused (autocommit, after the block).
SELECT status, event_count FROM error_groups WHERE id = :group_id;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
