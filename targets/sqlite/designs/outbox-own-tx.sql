-- outbox, a correct design written differently from outbox-protocol.sql:
-- the design makes its own transaction ids. The bench's `:tx_id` is never
-- used: staging a message inserts a row whose AUTOINCREMENT key the step
-- returns (`RETURNING tx AS my_tx`), and the state commit, the outbox commit
-- and the redo address the staged row by that id. The state store is the
-- same dense version log as the shipped protocol's (a compare-and-swap is an
-- INSERT OR IGNORE of version ver + 1).

-- name: schema
CREATE TABLE IF NOT EXISTS state_log (
  ver    INTEGER PRIMARY KEY,
  msg_id INTEGER,
  tx_id  INTEGER,
  kind   TEXT NOT NULL          -- 'init' (ver 0 only), 'change', 'cleanup'
);
CREATE TABLE IF NOT EXISTS outbox_staging (
  tx_id  INTEGER PRIMARY KEY AUTOINCREMENT,
  msg_id INTEGER NOT NULL,
  ver    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
  msg_id INTEGER PRIMARY KEY,
  ver    INTEGER NOT NULL
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
-- The head row of the spec's store: <<[ver |-> 0, msgId |-> NULL, txId |-> NULL]>>.
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind) VALUES (0, NULL, NULL, 'init');

-- name: handle.load_state
-- goto-if: head_tx is null -> process
-- LoadState = the head of the store. A txId at the head means a handler
-- stopped half way through a transaction: redo it first.
SELECT ver AS base_ver, msg_id AS head_msg, tx_id AS head_tx
FROM state_log ORDER BY ver DESC LIMIT 1;

-- name: handle.redo_outbox_commit
-- Redo_OutboxCommit = outbox[staging[txId].msgId] := staging[txId] (first
-- writer wins, as OutboxCommit).
INSERT OR IGNORE INTO outbox (msg_id, ver)
SELECT msg_id, ver FROM outbox_staging WHERE tx_id = :head_tx;

-- name: handle.redo_state_cleanup
-- fail-if: changes = 0
-- goto: load_state
-- Redo_StateCleanup = compare-and-swap on the head just loaded. Lost: an
-- other handler moved the head; Fail() (the delivery comes back). Won: load
-- the head again, it is the base of this attempt's own transaction.
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind)
VALUES (:base_ver + 1, :head_msg, NULL, 'cleanup');

-- name: handle.process
-- goto-if: rows > 0 -> publish
-- Process = an outbox entry means the message was processed: send it again.
SELECT ver AS done_ver FROM outbox WHERE msg_id = :msg_id;

-- name: handle.stage_outbox
-- StageOutbox = staging[txId] := (msg.id, base ver). txId is this attempt's own.
INSERT INTO outbox_staging (msg_id, ver)
VALUES (:msg_id, :base_ver)
RETURNING tx_id AS my_tx;

-- name: handle.state_commit
-- fail-if: changes = 0
-- StateCommit = the business state change, a compare-and-swap on the base.
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind)
VALUES (:base_ver + 1, :msg_id, :my_tx, 'change');

-- name: handle.outbox_commit
-- OutboxCommit = outbox[msg.id] := staging[txId]. First writer wins (OR
-- IGNORE): in the protocol every write of outbox[msg] carries the same
-- record (the one committed change's), so this equals the spec's overwrite,
-- and an outbox entry, once written, never changes.
INSERT OR IGNORE INTO outbox (msg_id, ver)
SELECT msg_id, ver FROM outbox_staging WHERE tx_id = :my_tx;

-- name: handle.state_cleanup
-- fail-if: changes = 0
-- StateCleanup = compare-and-swap on the version just committed (base + 1),
-- the seed's intent (read literally it compares with the base and always
-- loses). Lost: another handler's redo cleaned up first; Fail().
INSERT OR IGNORE INTO state_log (ver, msg_id, tx_id, kind)
VALUES (:base_ver + 2, :msg_id, NULL, 'cleanup');

-- name: handle.publish
-- SendAndAck, first half = publish outbox[msg.id] (a resend publishes the
-- same (msg_id, ver) again; consumers deduplicate by id).
INSERT INTO out_queue (msg_id, ver) SELECT msg_id, ver FROM outbox WHERE msg_id = :msg_id;

-- name: handle.ack
-- SendAndAck, second half = processed := processed \union {msg}. The bench
-- acks the delivery on its queue after this step.
INSERT INTO processed (msg_id, dup_id) VALUES (:msg_id, :dup_id);

-- name: export.state_log
SELECT ver, msg_id, tx_id, kind FROM state_log;

-- name: export.outbox
SELECT msg_id, ver FROM outbox;

-- name: export.out_queue
SELECT seq, msg_id, ver FROM out_queue;

-- name: export.processed
SELECT msg_id, dup_id FROM processed;
