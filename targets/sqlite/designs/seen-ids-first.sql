-- groups, a correct design written differently: the duplicate check is a
-- table of ids seen (`seen`), written BEFORE the event row. An attempt
-- answers duplicate when its id is already in `seen`, which another attempt
-- may have written before that attempt stored the event. Every invariant
-- must hold.

-- name: schema
CREATE TABLE IF NOT EXISTS seen (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS error_events (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, group_id TEXT, received_at INTEGER);
CREATE TABLE IF NOT EXISTS error_groups (id TEXT PRIMARY KEY, project TEXT, fingerprint TEXT, status TEXT, event_count INTEGER);

-- name: ingest.dedup
-- stop-if: changes = 0
INSERT OR IGNORE INTO seen (id) VALUES (:event_id);

-- name: ingest.s1
INSERT OR IGNORE INTO error_events (id, project, fingerprint, group_id, received_at)
VALUES (:event_id, :project, :fingerprint, :group_id, :now_ms);

-- name: ingest.s2
INSERT OR IGNORE INTO error_groups (id, project, fingerprint, status, event_count)
VALUES (:group_id, :project, :fingerprint, 'open', 0);

-- name: ingest.s3
-- counts: true
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
