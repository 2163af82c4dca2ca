-- groups, variant "txn": the atomic design's three ingest statements in ONE
-- transaction block (BEGIN IMMEDIATE ... COMMIT; see targets/README.md,
-- "Transaction blocks"). The event row, its group and its increment
-- commit together or not at all: a crash inside the block rolls all three
-- back, so no event is ever stranded (a row without its increment).
-- IMMEDIATE takes the write lock at BEGIN, where the busy timeout applies.
-- The resolver is the atomic one (one autocommit statement).

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
-- begin: immediate
-- stop-if: changes = 0
-- The event id is the client's, reused by retries: no change = duplicate
-- (the block then commits having changed nothing).
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
-- end: commit
UPDATE error_groups
SET event_count = event_count + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = :group_id;

-- name: resolve.update
-- stop-if: rows > 0
-- The count at the instant of the resolve, from the statement that resolved.
UPDATE error_groups SET status = 'resolved'
WHERE id = :group_id AND status IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
-- Run when the update was refused: tells why (already resolved, with the
-- count seen here, or no such group).
SELECT status, event_count FROM error_groups WHERE id = :group_id;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
