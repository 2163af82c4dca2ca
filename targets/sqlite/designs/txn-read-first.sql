-- groups, a correct design written differently, in a transaction block:
-- the duplicate check is a READ first (is the event id stored?), then the
-- group row, the event row and the count, in ONE DEFERRED block. The read
-- takes the block's snapshot; when another connection commits a write
-- before the block's first write, SQLite refuses that write at once
-- (SQLITE_BUSY_SNAPSHOT) and the bench rolls the block back and runs it
-- again from BEGIN, so the block never writes from a stale "not seen".
-- Under load its rollbacks are in the history (`txn_rollback`). Every
-- invariant must hold.

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

-- name: ingest.seen
-- begin: deferred
-- stop-if: rows > 0
SELECT 1 AS seen FROM error_events WHERE id = :event_id;

-- name: ingest.group
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.event
-- stop-if: changes = 0
-- Never stops here: the read above saw no row in this block's snapshot,
-- and a row committed since would have failed this write.
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
