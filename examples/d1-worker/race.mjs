// A small load by hand against a running Worker (no specstorm needed):
// concurrent ingesters send envelopes to a few hot issues while resolvers
// resolve them back to back; then it checks duplicates and looks for a
// missed regression, the way specstorm's NoMissedRegression does: an
// observation of an issue as (resolved, count c) that no successful resolve
// explains (none returned exactly c).
//
//   node race.mjs [--url http://127.0.0.1:8787] [--seconds 10] [--ingesters 16]
//                 [--resolvers 4] [--batch 5] [--groups 3] [--token T]
//
// Exit 0 whatever it finds; it prints what it found.

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []),
);
const url = args.url ?? "http://127.0.0.1:8787";
const seconds = Number(args.seconds ?? 10);
const ingesters = Number(args.ingesters ?? 16);
const resolvers = Number(args.resolvers ?? 4);
const batch = Number(args.batch ?? 5);
const groups = Number(args.groups ?? 3);
const headers = { "content-type": "application/json" };
if (args.token) headers.authorization = `Bearer ${args.token}`;

const project = `race${Date.now()}`;
const fps = Array.from({ length: groups }, (_, i) => `hot-${i}`);
const deadline = Date.now() + seconds * 1000;
const now = () => performance.now();

let requests = 0;
let created = 0;
let duplicates = 0;
let errors = 0;
const ingestLatency = [];
const groupIds = new Map(); // fingerprint -> id (from the answers)
const resolves = new Map(); // id -> [{start, end, count}] of successful resolves
const probes = []; // {id, start, end, state, count}: refused resolves

async function ingester(w) {
  let n = 0;
  while (Date.now() < deadline) {
    const events = [];
    for (let i = 0; i < batch; i++) {
      const fp = fps[(w + n + i) % fps.length];
      // One event in ten is a retry of the previous envelope's first event.
      const id = i === 0 && n > 0 && n % 10 === 0 ? `${project}-${w}-${n - 1}-0` : `${project}-${w}-${n}-${i}`;
      events.push({ event_id: id, fingerprint: fp, message: "boom", release: "race@1" });
    }
    const t0 = now();
    const r = await fetch(`${url}/api/${encodeURIComponent(project)}/envelope`, {
      method: "POST",
      headers,
      body: JSON.stringify({ events }),
    });
    requests++;
    if (r.status !== 200) {
      errors++;
      await r.text();
      n++;
      continue;
    }
    const body = await r.json();
    ingestLatency.push(now() - t0);
    body.items.forEach((item, i) => {
      if (item.status === "created") created++;
      else duplicates++;
      groupIds.set(events[i].fingerprint, item.group);
    });
    n++;
  }
}

async function resolver() {
  let k = 0;
  while (Date.now() < deadline) {
    const ids = [...groupIds.values()];
    if (ids.length === 0) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    const id = ids[k++ % ids.length];
    const start = now();
    const r = await fetch(`${url}/api/groups/${id}/resolve`, { method: "POST", headers });
    const body = await r.json();
    const end = now();
    requests++;
    if (r.status === 200) {
      if (!resolves.has(id)) resolves.set(id, []);
      resolves.get(id).push({ start, end, count: body.count });
    } else if (r.status === 409) {
      probes.push({ id, start, end, state: body.state, count: body.count });
    } else {
      errors++;
    }
  }
}

const t0 = Date.now();
await Promise.all([
  ...Array.from({ length: ingesters }, (_, w) => ingester(w)),
  ...Array.from({ length: resolvers }, () => resolver()),
]);
const elapsed = (Date.now() - t0) / 1000;

// The final rows, read through the API: a refused resolve is a probe too.
for (const id of groupIds.values()) {
  const start = now();
  const r = await fetch(`${url}/api/groups/${id}/resolve`, { method: "POST", headers });
  const body = await r.json();
  const end = now();
  if (r.status === 200) {
    if (!resolves.has(id)) resolves.set(id, []);
    resolves.get(id).push({ start, end, count: body.count });
  } else if (r.status === 409) probes.push({ id, start, end, state: body.state, count: body.count, final: true });
}

let missed = 0;
for (const p of probes) {
  if (p.state !== "resolved") continue;
  const explained = (resolves.get(p.id) ?? []).some((s) => s.start < p.end && s.count === p.count);
  if (!explained) {
    missed++;
    if (missed <= 5) {
      const before = (resolves.get(p.id) ?? []).filter((s) => s.start < p.end).map((s) => s.count);
      console.log(
        `MISSED REGRESSION: issue ${p.id} read (resolved, ${p.count})${p.final ? " at the end" : ""}, ` +
          `yet no resolve returned ${p.count} (latest resolves returned ${before.slice(-3).join(", ") || "nothing"})`,
      );
    }
  }
}

const sorted = ingestLatency.sort((a, b) => a - b);
const pct = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(1) : "-");
const okResolves = [...resolves.values()].reduce((a, l) => a + l.length, 0);
const refusedBy = {};
for (const p of probes) refusedBy[p.state] = (refusedBy[p.state] ?? 0) + 1;
console.log(
  JSON.stringify(
    {
      seconds: elapsed,
      requests,
      requests_per_s: Math.round(requests / elapsed),
      events_created: created,
      events_per_s: Math.round(created / elapsed),
      duplicates,
      errors,
      resolves_ok: okResolves,
      resolves_refused: probes.length,
      refused_by_state: refusedBy,
      envelope_latency_ms: { p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), max: pct(1) },
      missed_regressions: missed,
    },
    null,
    2,
  ),
);
