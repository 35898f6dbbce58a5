-- test/stress/sharded_checks.sql: the invariants of the sharded stress run
-- (test/t/060_sharding.pl), checked in the router database after the drain,
-- over every shard at once.  The test has copied each shard's queue into
-- all_q and its history into all_h (with the node), next to the router's
-- own sh_produced, sh_units and sh_stats.  Prints one TAP line per check,
-- then a "sharded: ..." summary line.  Variables: min_requests, min_kills.
--
-- A *unit* here is a claim as the shard recorded it: the rows that went
-- from new to in-progress under one process id and fence on one node; it
-- ends when they leave in-progress (settle, retry, reap).  The history is
-- written by a trigger in the transaction of each change, so it is the
-- truth; the router's sh_units (written after a settle returned) is checked
-- against it.  A move copies the terminal create of each moved entity to
-- the target: such copies (inserted terminal) are history, not requests.

\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
\pset footer off

CREATE TEMP TABLE copies AS
SELECT h.node, h.id FROM all_h h
 WHERE h.old_status IS NULL AND h.new_status IN ('complete', 'error');

CREATE TEMP TABLE orig AS
SELECT q.* FROM all_q q
 WHERE NOT EXISTS (SELECT 1 FROM copies c WHERE c.node = q.node AND c.id = q.id);

CREATE TEMP TABLE units AS
SELECT h.node, h.process_id, h.fence,
	   min(h.entity) AS entity, count(DISTINCT h.entity) AS entities,
	   min(h.kind) AS kind, count(DISTINCT h.kind) AS kinds,
	   array_agg(h.id ORDER BY h.id) AS ids,
	   min(h.at) AS claim_at, max(h.run_at) AS run_at
  FROM all_h h
 WHERE h.old_status = 'new' AND h.new_status = 'in-progress'
 GROUP BY h.node, h.process_id, h.fence;

CREATE TEMP TABLE unit_ends AS
SELECT h.node, h.old_pid AS process_id, h.old_fence AS fence,
	   max(h.at) AS end_at, count(*) AS rows
  FROM all_h h
 WHERE h.old_status = 'in-progress'
 GROUP BY h.node, h.old_pid, h.old_fence;

CREATE TEMP TABLE spans AS
SELECT u.*, coalesce(e.end_at, 'infinity') AS end_at
  FROM units u LEFT JOIN unit_ends e USING (node, process_id, fence);

-- when each original request reached its terminal state
CREATE TEMP TABLE terminal AS
SELECT h.node, h.id, count(*) AS n, min(h.at) AS at, min(h.new_status) AS status
  FROM all_h h
 WHERE h.old_status IS NOT NULL AND h.new_status IN ('complete', 'error')
 GROUP BY h.node, h.id;

CREATE TEMP TABLE result (n int PRIMARY KEY, ok boolean NOT NULL, text text NOT NULL);

-- 1. nothing lost: every enqueue the router acknowledged is on its
-- shard, once; nothing is on a shard that was not produced; nothing the
-- router refused reached a shard
INSERT INTO result
SELECT 1, missing = 0 AND twice = 0 AND wrong = 0 AND phantom = 0 AND refused_there = 0 AND done > 0,
	   format('nothing lost: %s enqueues acknowledged, %s requests on %s shards, %s missing, %s twice, %s not where the router said, %s not produced, %s refused but enqueued; %s unacknowledged attempts, %s of them enqueued',
			  done, (SELECT count(*) FROM orig), (SELECT count(DISTINCT node) FROM orig),
			  missing, twice, wrong, phantom, refused_there, unacked, unacked_there)
  FROM (SELECT count(*) FILTER (WHERE p.state = 'done') AS done,
			   count(*) FILTER (WHERE p.state = 'done' AND o.n IS NULL) AS missing,
			   count(*) FILTER (WHERE o.n > 1) AS twice,
			   count(*) FILTER (WHERE p.state = 'done' AND o.n = 1
								 AND (o.node <> p.node OR o.id <> p.id
									  OR o.entity <> p.entity OR o.kind <> p.kind)) AS wrong,
			   count(*) FILTER (WHERE p.state = 'refused' AND o.n IS NOT NULL) AS refused_there,
			   count(*) FILTER (WHERE p.state = 'intent') AS unacked,
			   count(*) FILTER (WHERE p.state = 'intent' AND o.n IS NOT NULL) AS unacked_there
		  FROM sh_produced p
		  LEFT JOIN (SELECT payload->>'token' AS token, count(*) AS n, min(node) AS node,
							min(id) AS id, min(entity) AS entity, min(kind) AS kind
					   FROM orig GROUP BY 1) o ON o.token = p.token::text) a,
	   (SELECT count(*) AS phantom FROM orig o
		 WHERE NOT EXISTS (SELECT 1 FROM sh_produced p WHERE p.token::text = o.payload->>'token')) b;

-- 2. after the drain every request is terminal
INSERT INTO result
SELECT 2, count(*) FILTER (WHERE status NOT IN ('complete', 'error')) = 0,
	   format('every request terminal: %s complete, %s error, %s new, %s in-progress',
			  count(*) FILTER (WHERE status = 'complete'), count(*) FILTER (WHERE status = 'error'),
			  count(*) FILTER (WHERE status = 'new'), count(*) FILTER (WHERE status = 'in-progress'))
  FROM orig;

-- 3. no request settled twice: one transition into a terminal state per
-- terminal request, none for the others; every settle the router reported
-- is on one shard, with as many rows of that process id leaving
-- in-progress for that outcome; single-unit claims carry their node in
-- the process id's last byte (the router makes their process ids), and
-- every claim does when the shards have dlsm.node_id
INSERT INTO result
SELECT 3, twice = 0 AND unmatched = 0 AND untagged = 0 AND reported > 0
		  AND (NOT tagging OR untagged_units = 0),
	   format('no request settled twice: %s requests reached a terminal state twice or wrongly; %s settles reported by the router, %s not matching the shards'' history, %s single-unit claims not tagged with their node; %s',
			  twice, reported, unmatched, untagged,
			  CASE WHEN tagging THEN format('the shards tag process ids (dlsm.node_id): %s of %s units not tagged with their node', untagged_units, units)
				   ELSE 'the shards do not tag process ids (no dlsm.node_id)' END)
  FROM (SELECT count(*) AS twice FROM orig o
		  LEFT JOIN terminal t USING (node, id)
		 WHERE CASE WHEN o.status IN ('complete', 'error')
					THEN t.n IS DISTINCT FROM 1 OR t.status <> o.status
					ELSE t.n IS NOT NULL END) a,
	   (SELECT count(*) AS reported,
			   count(*) FILTER (WHERE m.nodes IS DISTINCT FROM 1 OR m.rows <> s.settled) AS unmatched,
			   count(*) FILTER (WHERE s.single AND m.node IS NOT NULL
								 AND dlsm_proxy_node_of_process(s.process_id) <> m.node) AS untagged
		  FROM sh_units s
		  LEFT JOIN LATERAL (
			SELECT count(DISTINCT h.node) AS nodes, min(h.node) AS node, count(*) AS rows
			  FROM all_h h
			 WHERE h.old_pid = s.process_id AND h.old_status = 'in-progress'
			   AND h.new_status = ANY (CASE s.outcome WHEN 'complete' THEN '{complete}'::text[]
												   WHEN 'error' THEN '{error}'::text[]
												   ELSE '{new,error}'::text[] END)
			   AND (h.new_status <> 'new' OR h.detail LIKE 'stress %')
			   AND (h.new_status <> 'error' OR s.outcome = 'error' OR h.detail LIKE '%retries exhausted%')) m ON true) b,
	   (SELECT count(*) AS units,
			   count(*) FILTER (WHERE dlsm_proxy_node_of_process(u.process_id) <> u.node) AS untagged_units
		  FROM units u) c,
	   (SELECT bool_and(tags_process_ids) AS tagging FROM dlsm_proxy_nodes) d;

-- 4. no entity in two units at once, across all shards
INSERT INTO result
SELECT 4, overlapping = 0 AND multi = 0 AND open_units = 0,
	   format('no entity in two units at once: %s overlapping pairs of units, %s units spanning several entities, %s units never ended, over %s units of %s entities',
			  overlapping, multi, open_units, units, entities)
  FROM (SELECT count(*) AS overlapping FROM spans a
		  JOIN spans b ON b.entity = a.entity AND (b.node, b.process_id, b.fence) > (a.node, a.process_id, a.fence)
		   AND a.claim_at < b.end_at AND b.claim_at < a.end_at) o,
	   (SELECT count(*) FILTER (WHERE entities <> 1) AS multi,
			   count(*) FILTER (WHERE end_at = 'infinity') AS open_units,
			   count(*) AS units, count(DISTINCT entity) AS entities FROM spans) m;

-- 5. no update handled before its create completed (wherever the create
-- was: a moved entity's create stayed on the old shard); the updates of a
-- failed create failed with it, unhandled
INSERT INTO result
SELECT 5, early = 0 AND mixed = 0 AND bad_rows = 0,
	   format('no update handled before its create completed: %s update units too early, %s units mixing kinds, %s update requests complete without a complete create or handled after a failed one; %s updates failed with their create',
			  early, mixed, bad_rows, failed_with_create)
  FROM (SELECT count(*) FILTER (WHERE u.kind = 'update' AND EXISTS (
				   SELECT 1 FROM orig c WHERE c.entity = u.entity AND c.kind = 'create')
			   AND NOT EXISTS (
				   SELECT 1 FROM orig c JOIN terminal t USING (node, id)
					WHERE c.entity = u.entity AND c.kind = 'create'
					  AND t.status = 'complete' AND t.at < u.claim_at)) AS early,
			   count(*) FILTER (WHERE u.kinds <> 1
								 OR (u.kind = 'create' AND cardinality(u.ids) <> 1)) AS mixed
		  FROM spans u) e,
	   (SELECT count(*) FILTER (WHERE (upd.status = 'complete' AND cr.status <> 'complete')
								 OR (cr.status = 'error' AND (upd.status <> 'error'
									 OR EXISTS (SELECT 1 FROM units x
												 WHERE x.node = upd.node AND upd.id = ANY (x.ids)
												   AND x.claim_at > ct.at)))) AS bad_rows,
			   count(*) FILTER (WHERE upd.detail LIKE 'create request % ended in error') AS failed_with_create
		  FROM orig upd
		  LEFT JOIN orig cr ON cr.entity = upd.entity AND cr.kind = 'create'
		  LEFT JOIN terminal ct ON ct.node = cr.node AND ct.id = cr.id
		 WHERE upd.kind = 'update') b;

-- 6. grouped updates share one process id and fence
INSERT INTO result
SELECT 6, bad = 0 AND multi > 0,
	   format('grouped updates share one process id and fence: %s units of several requests (largest %s), %s process ids with several fences',
			  multi, largest, bad)
  FROM (SELECT count(*) FILTER (WHERE cardinality(ids) > 1) AS multi,
			   max(cardinality(ids)) AS largest FROM units) a,
	   (SELECT count(*) AS bad FROM (SELECT node, process_id FROM units
									   GROUP BY 1, 2 HAVING count(DISTINCT fence) > 1) x) b;

-- 7. fences strictly increase within each entity, in claim order, across
-- shards: an entity moved to another shard gets fences above its last
-- ones on the old shard
INSERT INTO result
SELECT 7, backwards = 0 AND moved > 0,
	   format('fences strictly increase within each entity: %s units with a fence not above the previous unit of the entity (%s of them on another shard than that unit); %s entities handled on two shards',
			  backwards, backwards_across, moved)
  FROM (SELECT count(*) FILTER (WHERE prev >= fence) AS backwards,
			   count(*) FILTER (WHERE prev >= fence AND prev_node <> node) AS backwards_across
		  FROM (SELECT node, fence,
					   lag(fence) OVER w AS prev, lag(node) OVER w AS prev_node
				  FROM units WINDOW w AS (PARTITION BY entity ORDER BY claim_at)) s) a,
	   (SELECT count(*) AS moved FROM (SELECT entity FROM units GROUP BY entity
										HAVING count(DISTINCT node) > 1) m) b;

-- 8. requests of an entity are handled in id order on its shard: a unit
-- never takes a request while an older request of the entity there, not
-- in the unit, is open
CREATE TEMP TABLE jumps AS
SELECT u.node, u.process_id, u.entity, x.id, o.id AS older_id
  FROM units u, unnest(u.ids) x(id)
  JOIN orig o ON true
 WHERE o.node = u.node AND o.entity = u.entity AND o.id < x.id
   AND NOT (o.id = ANY (u.ids))
   AND (SELECT min(h.at) FROM all_h h WHERE h.node = o.node AND h.id = o.id) < u.claim_at
   AND coalesce((SELECT t.at FROM terminal t WHERE t.node = o.node AND t.id = o.id),
				'infinity') > u.claim_at;

INSERT INTO result
SELECT 8, count(*) = 0,
	   format('requests of an entity are handled in id order: %s units taking a request before an older one of the entity was settled%s',
			  count(DISTINCT (node, process_id)),
			  (SELECT format(' (e.g. node %s: request %s of entity %s before request %s)',
							 node, id, entity, older_id) FROM jumps LIMIT 1))
  FROM jumps;

-- 9. nothing claimed before it was due
INSERT INTO result
SELECT 9, count(*) FILTER (WHERE run_at > claim_at) = 0,
	   format('nothing claimed before its run_at: %s of %s units claimed early',
			  count(*) FILTER (WHERE run_at > claim_at), count(*))
  FROM units;

-- 10. the run stressed: requests, units, batches, kills, lost claims,
-- reaps, retries, errors, a move, shard connections lost
INSERT INTO result
SELECT 10, requests >= :min_requests AND kills >= :min_kills AND batches > 0
		  AND retries > 0 AND errors > 0 AND rollbacks > 0 AND lost > 0
		  AND reaped > 0 AND abandoned > 0 AND exhausted > 0 AND shards = 3
		  AND unreachable > 0,
	   format('the run stressed: %s requests (min %s) on %s shards, %s units, %s batched claims, %s consumers killed (min %s), %s retries, %s error settles, %s rollbacks (%s after the settle), %s lost claims, %s lost heartbeats, %s abandoned leases, %s rows reaped, %s requests out of attempts, %s heartbeats, %s calls that could not reach a shard, %s enqueues refused during the move',
			  requests, :min_requests, shards, units, batches, kills, :min_kills, retries, errors,
			  rollbacks, rollbacks_after, lost, lost_heartbeats, abandoned, reaped, exhausted,
			  heartbeats, unreachable, refused)
  FROM (SELECT count(*) AS requests, count(DISTINCT node) AS shards,
			   count(*) FILTER (WHERE detail LIKE '%retries exhausted%') AS exhausted
		  FROM orig) q,
	   (SELECT count(*) AS units FROM units) u,
	   (SELECT count(*) FILTER (WHERE old_status = 'in-progress' AND new_status = 'new'
								 AND detail LIKE 'lease of process %') AS reaped
		  FROM all_h) h,
	   (SELECT count(*) FILTER (WHERE outcome = 'retry') AS retries,
			   count(*) FILTER (WHERE outcome = 'error') AS errors
		  FROM sh_units) a,
	   (SELECT coalesce(sum(n) FILTER (WHERE what = 'kill'), 0) AS kills,
			   coalesce(sum(n) FILTER (WHERE what = 'batch'), 0) AS batches,
			   coalesce(sum(n) FILTER (WHERE what IN ('rollback', 'rollback-after-settle')), 0) AS rollbacks,
			   coalesce(sum(n) FILTER (WHERE what = 'rollback-after-settle'), 0) AS rollbacks_after,
			   coalesce(sum(n) FILTER (WHERE what = 'lost'), 0) AS lost,
			   coalesce(sum(n) FILTER (WHERE what = 'lost-heartbeat'), 0) AS lost_heartbeats,
			   coalesce(sum(n) FILTER (WHERE what = 'abandon'), 0) AS abandoned,
			   coalesce(sum(n) FILTER (WHERE what = 'heartbeat'), 0) AS heartbeats,
			   coalesce(sum(n) FILTER (WHERE what LIKE '%-unreachable'), 0) AS unreachable,
			   coalesce(sum(n) FILTER (WHERE what = 'enqueue-refused-moving'), 0) AS refused
		  FROM sh_stats) s;

SELECT CASE WHEN ok THEN 'ok' ELSE 'not ok' END || ' ' || n || ' - ' || text
  FROM result ORDER BY n;

SELECT format('sharded: %s requests on %s shards, %s units, %s consumers killed, %s invariant violations',
			  (SELECT count(*) FROM orig), (SELECT count(DISTINCT node) FROM orig),
			  (SELECT count(*) FROM units),
			  (SELECT coalesce(sum(n), 0) FROM sh_stats WHERE what = 'kill'),
			  (SELECT count(*) FROM result WHERE NOT ok AND n <> 10));
