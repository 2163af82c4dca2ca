// The groups design (specs/BacktalkGroups.tla, docs/groups.md) as a
// Cloudflare Worker on D1: error events grouped into issues by fingerprint.
//
// Like the production system it stands for, its atomic and naive variants
// use NO transactions and NO D1 batch(): every statement is awaited on its
// own, so statements of concurrent requests interleave freely between two
// awaits. That is the design under test; specstorm loads this Worker
// through its API mapping (examples/d1-worker/*.toml) and audits the D1
// file afterwards. The batch variant sends each event's statements as one
// D1 batch() instead: one transaction, all or nothing.
//
// Its API and schema are its own, deliberately not specstorm's HTTP contract:
//   GET  /healthz                                  -> 200 "ok" once the schema exists
//   POST /api/:project/envelope                    {"events": [{event_id, fingerprint, message, release}, ...]}
//        -> 200 {"items": [{"event_id", "status": "created" | "duplicate", "group"}]} (request order)
//   POST /api/groups/:id/resolve                   -> 200 {"ok": true, "count": n}
//        | 409 {"ok": false, "state": "open" | "resolved" | "regressed", "count": n} | 404 {"ok": false}
//   GET  /api/groups/lookup?project=..&fingerprint=..  -> 200 {"id": ...} | 404
//
// VARIANT (a [vars] entry, `wrangler dev --var VARIANT:naive` to change it):
//   atomic (or groups-atomic): the counting step is one UPDATE that also flips
//     resolved -> regressed (the design).
//   naive (or groups-naive): the counting step reads the state with a SELECT,
//     then, in a separate statement, writes the regression decided from the
//     value read: a resolve between the two is lost (the bug the bench must catch).
//   batch (or groups-batch): the three ingest statements of one event in one
//     db.batch([...]), which D1 runs as one transaction (in order, any error
//     rolls back all): no event row without its count, ever.
// TOKEN (optional secret or var): when set, every /api/ request must carry
// `Authorization: Bearer <TOKEN>` (401 otherwise). /healthz stays open.
// D1_LATENCY_MS (optional var, default 0): a wait before every statement,
//   standing for the network round trip to a remote D1 database that the
//   local one of `wrangler dev` does not have (README.md, "Why D1_LATENCY_MS").

export interface Env {
  DB: D1Database;
  VARIANT?: string;
  TOKEN?: string;
  D1_LATENCY_MS?: string;
}

type Variant = "atomic" | "naive" | "batch";

const VARIANTS: Record<string, Variant> = {
  atomic: "atomic",
  naive: "naive",
  "groups-atomic": "atomic",
  "groups-naive": "naive",
  batch: "batch",
  "groups-batch": "batch",
};

const MAX_EVENTS = 100;
const MAX_ID_LEN = 200;

// ---------------------------------------------------------------- schema

// One schema creation per isolate, shared by the requests that arrive while
// it runs; a failure is forgotten so that the next request tries again.
let schemaReady: Promise<void> | null = null;

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS events (
     event_id TEXT PRIMARY KEY,
     project  TEXT NOT NULL,
     fp       TEXT NOT NULL,
     group_id TEXT NOT NULL,
     message  TEXT,
     release  TEXT,
     ts       INTEGER NOT NULL
   )`,
  // No UNIQUE(project, fp) and no CHECK on state: a broken variant must be
  // able to break them, so that the audit, not the schema, finds it.
  `CREATE TABLE IF NOT EXISTS issues (
     id         TEXT PRIMARY KEY,
     project    TEXT NOT NULL,
     fp         TEXT NOT NULL,
     state      TEXT NOT NULL, -- unresolved | resolved | regressed
     times_seen INTEGER NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS issues_project_fp ON issues (project, fp)`,
];

function ensureSchema(db: Db): Promise<void> {
  if (!schemaReady) {
    schemaReady = (async () => {
      for (const sql of SCHEMA) {
        await db.run(sql);
      }
    })().catch((e) => {
      schemaReady = null;
      throw e;
    });
  }
  return schemaReady;
}

// ---------------------------------------------------------------- statements

/** D1 one statement at a time: each call is one prepared statement, awaited
 *  alone (no batch(), no transaction), after the configured latency. */
class Db {
  constructor(
    private readonly db: D1Database,
    private readonly latencyMs: number,
  ) {}

  private async stmt(sql: string, params: unknown[]): Promise<D1PreparedStatement> {
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    return this.db.prepare(sql).bind(...params);
  }

  async run(sql: string, ...params: unknown[]): Promise<D1Result> {
    return (await this.stmt(sql, params)).run();
  }

  async first<T>(sql: string, ...params: unknown[]): Promise<T | null> {
    return (await this.stmt(sql, params)).first<T>();
  }

  async all<T>(sql: string, ...params: unknown[]): Promise<T[]> {
    return (await (await this.stmt(sql, params)).all<T>()).results;
  }

  /** The statements as one D1 batch: one round trip (one latency wait),
   *  run by D1 as one transaction, in order; any error rolls back all. */
  async batch(statements: [string, unknown[]][]): Promise<D1Result[]> {
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    return this.db.batch(statements.map(([sql, params]) => this.db.prepare(sql).bind(...params)));
  }
}

// ---------------------------------------------------------------- helpers

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function error(status: number, message: string): Response {
  return json({ error: message }, status);
}

class BadRequest extends Error {}

/** The group id: a deterministic hash of (project, fingerprint), so that
 *  concurrent creators of one group collide harmlessly on INSERT OR IGNORE. */
async function groupId(project: string, fp: string): Promise<string> {
  const data = new TextEncoder().encode(project + "\n" + fp);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  let hex = "";
  for (let i = 0; i < 8; i++) hex += digest[i].toString(16).padStart(2, "0");
  return hex;
}

/** The state as the API reports it (the schema's `unresolved` is `open`). */
function apiState(state: string): string {
  return state === "unresolved" ? "open" : state;
}

function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

// ---------------------------------------------------------------- ingest

interface EventIn {
  event_id: string;
  fingerprint: string;
  message: string;
  release: string;
}

function stringField(e: Record<string, unknown>, key: string, i: number, required: boolean): string {
  const v = e[key];
  if (v === undefined && !required) return "";
  if (typeof v !== "string") {
    throw new BadRequest(`events[${i}].${key} must be a string`);
  }
  return v;
}

function parseEnvelope(body: unknown): EventIn[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new BadRequest('the body must be a JSON object {"events": [...]}');
  }
  const events = (body as Record<string, unknown>).events;
  if (!Array.isArray(events)) throw new BadRequest('"events" must be an array');
  if (events.length < 1 || events.length > MAX_EVENTS) {
    throw new BadRequest(`"events" must hold 1 to ${MAX_EVENTS} events, found ${events.length}`);
  }
  return events.map((e, i) => {
    if (typeof e !== "object" || e === null || Array.isArray(e)) {
      throw new BadRequest(`events[${i}] must be an object`);
    }
    const rec = e as Record<string, unknown>;
    const ev = {
      event_id: stringField(rec, "event_id", i, true),
      fingerprint: stringField(rec, "fingerprint", i, true),
      message: stringField(rec, "message", i, false),
      release: stringField(rec, "release", i, false),
    };
    if (ev.event_id.length === 0 || ev.event_id.length > MAX_ID_LEN) {
      throw new BadRequest(`events[${i}].event_id must have 1 to ${MAX_ID_LEN} characters`);
    }
    if (ev.fingerprint.length === 0) {
      throw new BadRequest(`events[${i}].fingerprint must not be empty`);
    }
    return ev;
  });
}

/** One event as one D1 batch (the batch variant). Every parameter is bound
 *  before the batch is sent, so no statement can stop the batch on what an
 *  earlier one did: the duplicate check lives in the SQL instead. The issue
 *  is created first (harmless for a duplicate: its issue exists), the count
 *  is taken only when the event's row is not there yet, and the event row
 *  is inserted last; all three in one transaction, so the count and the row
 *  are both there or neither is, and a duplicate changes nothing. The
 *  insert's changes say created or duplicate. */
async function ingestBatch(db: Db, project: string, ev: EventIn, gid: string) {
  const results = await db.batch([
    [
      `INSERT OR IGNORE INTO issues (id, project, fp, state, times_seen)
       VALUES (?1, ?2, ?3, 'unresolved', 0)`,
      [gid, project, ev.fingerprint],
    ],
    [
      `UPDATE issues
          SET times_seen = times_seen + 1,
              state = CASE WHEN state = 'resolved' THEN 'regressed' ELSE state END
        WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM events WHERE event_id = ?2)`,
      [gid, ev.event_id],
    ],
    [
      `INSERT OR IGNORE INTO events (event_id, project, fp, group_id, message, release, ts)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
      [ev.event_id, project, ev.fingerprint, gid, ev.message, ev.release, Date.now()],
    ],
  ]);
  const created = results[2].meta.changes > 0;
  return { event_id: ev.event_id, status: created ? "created" : "duplicate", group: gid };
}

/** One event, step by step (docs/groups.md), each statement awaited alone
 *  (atomic, naive), or as one batch (batch). */
async function ingestOne(db: Db, variant: Variant, project: string, ev: EventIn) {
  const gid = await groupId(project, ev.fingerprint);
  if (variant === "batch") return ingestBatch(db, project, ev, gid);

  // s1: the event row; a retry of the same id changes nothing and stops here.
  const s1 = await db.run(
    `INSERT OR IGNORE INTO events (event_id, project, fp, group_id, message, release, ts)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`,
    ev.event_id, project, ev.fingerprint, gid, ev.message, ev.release, Date.now(),
  );
  if (s1.meta.changes === 0) {
    return { event_id: ev.event_id, status: "duplicate", group: gid };
  }

  // s2: the issue, created by whichever request comes first.
  await db.run(
    `INSERT OR IGNORE INTO issues (id, project, fp, state, times_seen)
     VALUES (?1, ?2, ?3, 'unresolved', 0)`,
    gid, project, ev.fingerprint,
  );

  // s3: count the event, and reopen a resolved issue as regressed.
  if (variant === "atomic") {
    await db.run(
      `UPDATE issues
          SET times_seen = times_seen + 1,
              state = CASE WHEN state = 'resolved' THEN 'regressed' ELSE state END
        WHERE id = ?1`,
      gid,
    );
  } else {
    // naive: read, then write what was decided from the value read. A resolve
    // that lands between the two statements is lost: the write keeps the
    // issue resolved although it counted an event after the resolve.
    const row = await db.first<{ state: string }>(`SELECT state FROM issues WHERE id = ?1`, gid);
    const read = row ? row.state : null;
    await db.run(
      `UPDATE issues
          SET times_seen = times_seen + 1,
              state = CASE WHEN ?1 = 'resolved' THEN 'regressed' ELSE state END
        WHERE id = ?2`,
      read, gid,
    );
  }
  return { event_id: ev.event_id, status: "created", group: gid };
}

async function ingest(request: Request, db: Db, variant: Variant, project: string): Promise<Response> {
  if (project.length === 0) return error(400, "the project must not be empty");
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return error(400, "the body is not valid JSON");
  }
  let events: EventIn[];
  try {
    events = parseEnvelope(body);
  } catch (e) {
    if (e instanceof BadRequest) return error(400, e.message);
    throw e;
  }
  const items = [];
  // Sequentially, in request order: one event's statements never overlap
  // another's of the same envelope (other requests' do).
  for (const ev of events) {
    items.push(await ingestOne(db, variant, project, ev));
  }
  return json({ items });
}

// ---------------------------------------------------------------- resolve

async function resolve(db: Db, id: string): Promise<Response> {
  // One statement: the state change and the count it saw, together.
  const done = await db.all<{ times_seen: number }>(
    `UPDATE issues SET state = 'resolved'
      WHERE id = ?1 AND state IN ('unresolved', 'regressed')
      RETURNING times_seen`,
    id,
  );
  if (done.length > 0) {
    return json({ ok: true, count: done[0].times_seen });
  }
  // Nothing changed: a probe tells why (already resolved, or no such issue).
  const probe = await db.first<{ state: string; times_seen: number }>(
    `SELECT state, times_seen FROM issues WHERE id = ?1`,
    id,
  );
  if (!probe) return json({ ok: false }, 404);
  return json({ ok: false, state: apiState(probe.state), count: probe.times_seen }, 409);
}

// ---------------------------------------------------------------- lookup

async function lookup(db: Db, url: URL): Promise<Response> {
  const project = url.searchParams.get("project");
  const fp = url.searchParams.get("fingerprint");
  if (!project || !fp) return error(400, "project and fingerprint are required");
  const row = await db.first<{ id: string }>(
    `SELECT id FROM issues WHERE project = ?1 AND fp = ?2 ORDER BY id LIMIT 1`,
    project, fp,
  );
  if (!row) return error(404, "no such issue");
  return json({ id: row.id });
}

// ---------------------------------------------------------------- routing

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const variant = VARIANTS[env.VARIANT ?? ""];
    if (!variant) {
      return error(
        500,
        `VARIANT must be one of ${Object.keys(VARIANTS).join(", ")}; found ${JSON.stringify(env.VARIANT ?? null)} ` +
          `(set it in wrangler.toml [vars] or with wrangler dev --var VARIANT:atomic)`,
      );
    }
    const latency = Number(env.D1_LATENCY_MS ?? "0");
    if (!Number.isFinite(latency) || latency < 0 || latency > 1000) {
      return error(500, `D1_LATENCY_MS must be a number of milliseconds from 0 to 1000; found ${JSON.stringify(env.D1_LATENCY_MS)}`);
    }
    const db = new Db(env.DB, latency);
    const url = new URL(request.url);
    const parts = url.pathname.split("/").filter((p) => p.length > 0);
    const method = request.method;

    try {
      if (parts.length === 1 && parts[0] === "healthz") {
        if (method !== "GET" && method !== "HEAD") return error(405, "use GET");
        await ensureSchema(db);
        // The variant in a header, to tell by hand which one a running Worker is.
        return new Response("ok", { headers: { "content-type": "text/plain", "x-variant": variant } });
      }
      if (parts[0] !== "api") return error(404, "not found");

      if (env.TOKEN) {
        const auth = request.headers.get("authorization") ?? "";
        if (!timingSafeEqual(auth, `Bearer ${env.TOKEN}`)) {
          return new Response(JSON.stringify({ error: "missing or wrong bearer token" }), {
            status: 401,
            headers: { "content-type": "application/json", "www-authenticate": "Bearer" },
          });
        }
      }
      await ensureSchema(db);

      // GET /api/groups/lookup?project=..&fingerprint=..
      if (parts.length === 3 && parts[1] === "groups" && parts[2] === "lookup") {
        if (method !== "GET") return error(405, "use GET");
        return await lookup(db, url);
      }
      // POST /api/groups/:id/resolve
      if (parts.length === 4 && parts[1] === "groups" && parts[3] === "resolve") {
        if (method !== "POST") return error(405, "use POST");
        const id = decode(parts[2]);
        if (id === null) return error(400, "bad group id encoding");
        return await resolve(db, id);
      }
      // POST /api/:project/envelope
      if (parts.length === 3 && parts[2] === "envelope") {
        if (method !== "POST") return error(405, "use POST");
        const project = decode(parts[1]);
        if (project === null) return error(400, "bad project encoding");
        return await ingest(request, db, variant, project);
      }
      return error(404, "not found");
    } catch (e) {
      // A statement failed (D1 error, overload): the request's outcome is
      // unknown to the client, as for any 5xx. Events of an envelope handled
      // before the failure stay handled.
      const message = e instanceof Error ? e.message : String(e);
      console.error(`${method} ${url.pathname}: ${message}`);
      return error(500, `internal error: ${message}`);
    }
  },
} satisfies ExportedHandler<Env>;
