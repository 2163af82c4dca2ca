-- groups, variant "naive-txn": a realistic mistake with transactions.
-- The event, its group and the status read run in one IMMEDIATE block;
-- the increment that decides the regression from that read runs in a
-- LATER block. Each block is atomic, but a resolve can commit between
-- the two: the second block then writes from a stale status and the
-- regression is missed, exactly as in the naive autocommit design. The
-- explorer and the load both catch it.

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
-- The event id is the client's, reused by retries: no change = duplicate.
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
-- Concurrent creators of the same group collide harmlessly.
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3_read
-- end: commit
SELECT status AS read_status FROM error_groups WHERE id = :group_id;

-- name: ingest.s3_write
-- begin: immediate
-- counts: true
-- end: commit
-- Decides regression from :read_status, which may be stale by now.
UPDATE error_groups
SET event_count = event_count + 1,
    status = CASE WHEN :read_status = 'resolved' THEN 'regressed' ELSE status END
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
