-- outbox, a correct design written differently from outbox-protocol.sql:
-- the versioned state store is ONE head row updated by a compare-and-swap
-- (`UPDATE ... WHERE ver = :base_ver`), whose every version a trigger
-- appends to a history table (what export.state_log reads); the outbox and
-- the acks are UPSERTs (`ON CONFLICT DO NOTHING`), and `processed` keeps one
-- row per delivery however often it is acked.

-- name: schema
CREATE TABLE IF NOT EXISTS head (
  id     INTEGER PRIMARY KEY CHECK (id = 1),
  ver    INTEGER NOT NULL,
  msg_id INTEGER,
  tx_id  INTEGER,
  kind   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS head_history (
  ver    INTEGER PRIMARY KEY,
  msg_id INTEGER,
  tx_id  INTEGER,
  kind   TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS head_born AFTER INSERT ON head BEGIN
  INSERT INTO head_history (ver, msg_id, tx_id, kind)
  VALUES (NEW.ver, NEW.msg_id, NEW.tx_id, NEW.kind);
END;
CREATE TRIGGER IF NOT EXISTS head_moved AFTER UPDATE ON head BEGIN
  INSERT INTO head_history (ver, msg_id, tx_id, kind)
  VALUES (NEW.ver, NEW.msg_id, NEW.tx_id, NEW.kind);
END;
CREATE TABLE IF NOT EXISTS staged (
  tx_id  INTEGER PRIMARY KEY,
  msg_id INTEGER NOT NULL,
  ver    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sent_once (
  msg_id INTEGER PRIMARY KEY,
  ver    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS published (
  seq    INTEGER PRIMARY KEY AUTOINCREMENT,
  msg_id INTEGER NOT NULL,
  ver    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS acks (
  msg_id INTEGER NOT NULL,
  dup_id INTEGER NOT NULL,
  PRIMARY KEY (msg_id, dup_id)
);
INSERT OR IGNORE INTO head (id, ver, msg_id, tx_id, kind) VALUES (1, 0, NULL, NULL, 'init');

-- name: handle.load_state
-- goto-if: head_tx is null -> process
SELECT ver AS base_ver, msg_id AS head_msg, tx_id AS head_tx FROM head WHERE id = 1;

-- name: handle.redo_outbox_commit
INSERT INTO sent_once (msg_id, ver)
SELECT msg_id, ver FROM staged WHERE tx_id = :head_tx
ON CONFLICT (msg_id) DO NOTHING;

-- name: handle.redo_state_cleanup
-- fail-if: changes = 0
-- goto: load_state
UPDATE head SET ver = :base_ver + 1, msg_id = :head_msg, tx_id = NULL, kind = 'cleanup'
WHERE id = 1 AND ver = :base_ver;

-- name: handle.process
-- goto-if: rows > 0 -> publish
SELECT ver AS done_ver FROM sent_once WHERE msg_id = :msg_id;

-- name: handle.stage_outbox
INSERT INTO staged (tx_id, msg_id, ver) VALUES (:tx_id, :msg_id, :base_ver)
ON CONFLICT (tx_id) DO UPDATE SET msg_id = excluded.msg_id, ver = excluded.ver;

-- name: handle.state_commit
-- fail-if: changes = 0
UPDATE head SET ver = :base_ver + 1, msg_id = :msg_id, tx_id = :tx_id, kind = 'change'
WHERE id = 1 AND ver = :base_ver;

-- name: handle.outbox_commit
INSERT INTO sent_once (msg_id, ver)
SELECT msg_id, ver FROM staged WHERE tx_id = :tx_id
ON CONFLICT (msg_id) DO NOTHING;

-- name: handle.state_cleanup
-- fail-if: changes = 0
UPDATE head SET ver = :base_ver + 2, msg_id = :msg_id, tx_id = NULL, kind = 'cleanup'
WHERE id = 1 AND ver = :base_ver + 1;

-- name: handle.publish
INSERT INTO published (msg_id, ver) SELECT msg_id, ver FROM sent_once WHERE msg_id = :msg_id;

-- name: handle.ack
INSERT INTO acks (msg_id, dup_id) VALUES (:msg_id, :dup_id)
ON CONFLICT (msg_id, dup_id) DO NOTHING;

-- name: export.state_log
SELECT ver, msg_id, tx_id, kind FROM head_history;

-- name: export.outbox
SELECT msg_id, ver FROM sent_once;

-- name: export.out_queue
SELECT seq, msg_id, ver FROM published;

-- name: export.processed
SELECT msg_id, dup_id FROM acks;
