-- The counter, read then written back: two workers that read the same
-- value write the same value, and one increment is lost.
-- name: schema
CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT OR IGNORE INTO counter (id, n) VALUES (1, 0);

-- name: increment.read
SELECT n FROM counter WHERE id = 1;

-- name: increment.write
UPDATE counter SET n = :n + 1 WHERE id = 1;

-- name: export.count
SELECT n FROM counter WHERE id = 1;
