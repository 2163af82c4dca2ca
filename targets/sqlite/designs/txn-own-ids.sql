-- groups, a correct design written differently, in a transaction block:
-- the own-ids design (the design computes its own group ids from
-- (project, fingerprint) and never uses the bench's :group_id) with its
-- three ingest statements in ONE IMMEDIATE block. The audit compares
-- groups by (project, fingerprint), so the ids need not match the
-- bench's. Every invariant must hold.

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
VALUES (:event_id, :project, :fingerprint, 'grp-' || :project || ':' || :fingerprint, :now_ms);

-- name: ingest.group
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES ('grp-' || :project || ':' || :fingerprint, :project, :fingerprint, 'open', 0);

-- name: ingest.count
-- counts: true
-- end: commit
UPDATE error_groups
SET event_count = event_count + 1,
    status = CASE WHEN status = 'resolved' THEN 'regressed' ELSE status END
WHERE id = 'grp-' || :project || ':' || :fingerprint;

-- name: resolve.update
-- stop-if: rows > 0
UPDATE error_groups SET status = 'resolved'
WHERE id = 'grp-' || :project || ':' || :fingerprint AND status IN ('open', 'regressed')
RETURNING event_count;

-- name: resolve.probe
SELECT status, event_count FROM error_groups
WHERE id = 'grp-' || :project || ':' || :fingerprint;

-- name: export.events
SELECT id, project, fingerprint, group_id, received_at FROM error_events;

-- name: export.groups
SELECT id, project, fingerprint, status, event_count FROM error_groups;
