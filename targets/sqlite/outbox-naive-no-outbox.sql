-- outbox, variant "naive-no-outbox": change the state and publish directly,
-- with no staged outbox and no txId marker. Every delivery of a message
-- changes the state again and publishes again, on its own base version
-- (AtMostOneStateChange, AtMostOneOutQueueMsg, ConsistentStateAndOutQueue);
-- a handler that dies between the change and the publish loses the output
-- of that attempt.

-- name: schema
CREATE TABLE IF NOT EXISTS state_log (
  ver    INTEGER PRIMARY KEY,
  msg_id INTEGER,
  tx_id  INTEGER,
  kind   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS out_queue (
  seq    INTEGER PRIMARY KEY AUTOINCREMENT,
  msg_id INTEGER NOT NULL,
  ver    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS processed (
  msg_id INTEGER NOT NULL,
  dup_id INTEGER NOT NULL
);
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind) VALUES (0, NULL, NULL, 'init');

-- name: handle.load_state
SELECT ver AS base_ver FROM state_log ORDER BY ver DESC LIMIT 1;

-- name: handle.state_commit
-- fail-if: changes = 0
-- The change, a compare-and-swap on the base (so the store stays a chain).
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind)
VALUES (:base_ver + 1, :msg_id, NULL, 'change');

-- name: handle.publish
INSERT INTO out_queue (msg_id, ver) VALUES (:msg_id, :base_ver);

-- name: handle.ack
INSERT INTO processed (msg_id, dup_id) VALUES (:msg_id, :dup_id);

-- name: export.state_log
SELECT ver, msg_id, tx_id, kind FROM state_log;

-- name: export.out_queue
SELECT seq, msg_id, ver FROM out_queue;

-- name: export.processed
SELECT msg_id, dup_id FROM processed;
