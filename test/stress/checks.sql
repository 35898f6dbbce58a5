-- test/stress/checks.sql: the invariants of the stress run, checked after
-- the drain.  Prints one TAP line per check ("ok N - ..." / "not ok N -
-- ..."), then a "stress: ..." summary line.  Variables from stress.sh:
-- min_requests, min_kills.
--
-- Terms: a *unit* is one row of stress_audit (one claim settled by a
-- consumer in a committed transaction); a request is *consumer-settled*
-- when its terminal state came from a consumer's settle, as opposed to the
-- reaper (retries spent after a lost lease) or dlsm failing the updates of
-- an entity whose create ended in error; those two name themselves in
-- detail.

\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
\pset footer off

-- Requests with their consumer-settled flag, and audit rows per request.
CREATE TEMP VIEW req AS
SELECT q.*,
	   q.status IN ('complete', 'error')
	   AND coalesce(q.detail, '') NOT LIKE 'lease of process %'
	   AND coalesce(q.detail, '') NOT LIKE 'create request % ended in error'
	   AND coalesce(q.detail, '') NOT LIKE 'cancelled by role %'
	   AS consumer_settled,
	   EXISTS (SELECT 1 FROM stress_requeue_log r WHERE r.id = q.id) AS requeued
  FROM stress_q q;

CREATE TEMP VIEW audit_rows AS
SELECT a.unit_id, a.process_id, a.fence, a.entity, a.kind, a.outcome,
	   a.started_at, a.ended_at, r.id, r.status, r.row_fence
  FROM stress_audit a,
	   unnest(a.ids, a.statuses, a.fences) AS r(id, status, row_fence);

CREATE TEMP TABLE result (n int PRIMARY KEY, ok boolean NOT NULL, text text NOT NULL);

-- 1. nothing lost: the producer log and the queue hold the same requests
INSERT INTO result
SELECT 1, missing = 0 AND extra = 0 AND produced > 0,
	   format('nothing lost: %s requests produced, %s in the queue, %s missing, %s not produced or changed',
			  produced, queued, missing, extra)
  FROM (SELECT count(p.id) AS produced, count(q.id) AS queued,
			   count(*) FILTER (WHERE q.id IS NULL) AS missing,
			   count(*) FILTER (WHERE p.id IS NULL) AS extra
		  FROM stress_producer_log p
		  FULL JOIN stress_q q
			ON q.id = p.id AND q.entity = p.entity AND q.kind = p.kind) s;

-- 2. after the drain every request is terminal
INSERT INTO result
SELECT 2, count(*) FILTER (WHERE status NOT IN ('complete', 'error')) = 0,
	   format('every request terminal: %s complete, %s error, %s new, %s in-progress',
			  count(*) FILTER (WHERE status = 'complete'),
			  count(*) FILTER (WHERE status = 'error'),
			  count(*) FILTER (WHERE status = 'new'),
			  count(*) FILTER (WHERE status = 'in-progress'))
  FROM stress_q;

-- 3. no request settled twice: at most one unit moved a request to a
-- terminal state; a consumer-settled request matches exactly that unit
-- (same process id, fence and status), any other terminal request none;
-- every unit settled all of its rows and none of them was left in progress;
-- a transactional claim is never lost
INSERT INTO result
SELECT 3, twice = 0 AND mismatched = 0 AND partial = 0 AND lost_tx = 0,
	   format('no request settled twice: %s settled by two units, %s terminal requests not matching exactly one unit (%s consumer-settled, %s by reaper or failed create), %s units settling fewer rows than claimed or leaving one in progress, %s transactional claims lost',
			  twice, mismatched, by_consumer, by_dlsm, partial, lost_tx)
  FROM (SELECT count(*) AS twice FROM (
			SELECT x.id FROM audit_rows x
			 WHERE x.status IN ('complete', 'error')
			 GROUP BY x.id
			HAVING count(*) > 1 + (SELECT count(*) FROM stress_requeue_log r
									WHERE r.id = x.id)) t) a,
	   -- a requeued request was settled once more before its requeue
	   (SELECT count(*) FILTER (WHERE terminal <> consumer_settled::int + requeued::int
								  OR matching <> consumer_settled::int) AS mismatched,
			   count(*) FILTER (WHERE consumer_settled) AS by_consumer,
			   count(*) FILTER (WHERE NOT consumer_settled) AS by_dlsm
		  FROM (SELECT r.consumer_settled, r.requeued,
					   count(x.id) AS terminal,
					   count(x.id) FILTER (WHERE x.process_id = r.process_id
											 AND x.fence = r.fence
											 AND x.row_fence = r.fence
											 AND x.status = r.status) AS matching
				  FROM req r
				  LEFT JOIN audit_rows x
					ON x.id = r.id AND x.status IN ('complete', 'error')
				 WHERE r.status IN ('complete', 'error')
				 GROUP BY r.id, r.consumer_settled, r.requeued) s) b,
	   (SELECT count(*) AS partial FROM stress_audit
		 WHERE settled <> cardinality(ids) OR cardinality(statuses) <> cardinality(ids)
			OR 'in-progress' = ANY (statuses)) c,
	   (SELECT coalesce(sum(n), 0) AS lost_tx FROM stress_stats
		 WHERE what = 'lost-tx') d;

-- 4. no entity in two units at once: the [claim, settle] intervals of the
-- units of one entity do not overlap
INSERT INTO result
SELECT 4, n_overlap = 0 AND multi = 0,
	   format('no entity in two units at once: %s overlapping pairs of units, %s units spanning several entities, over %s units of %s entities',
			  n_overlap, multi, units, entities)
  FROM (SELECT count(*) AS n_overlap FROM stress_audit a
		  JOIN stress_audit b ON b.entity = a.entity AND b.unit_id > a.unit_id
		   AND a.started_at < b.ended_at AND b.started_at < a.ended_at) o,
	   (SELECT count(*) FILTER (WHERE cardinality(entities) <> 1) AS multi,
			   count(*) AS units, count(DISTINCT entity) AS entities
		  FROM stress_audit) m;

-- 5. no update handled before its create completed: each update unit
-- starts after a unit that completed the entity's create ended; the
-- updates of an entity whose create failed all failed, unhandled
INSERT INTO result
SELECT 5, early = 0 AND mixed = 0 AND bad_rows = 0,
	   format('no update handled before its create completed: %s update units too early, %s units mixing kinds, %s update requests complete without a complete create or handled after a failed one; %s updates failed with their create',
			  early, mixed, bad_rows, failed_with_create)
  FROM (SELECT count(*) FILTER (WHERE kind = 'update' AND NOT EXISTS (
				   SELECT 1 FROM stress_audit c
					WHERE c.entity = u.entity AND c.kind = 'create'
					  AND c.statuses[1] = 'complete'
					  AND c.ended_at < u.started_at)) AS early,
			   count(*) FILTER (WHERE cardinality(kinds) <> 1
								 OR (kind = 'create' AND cardinality(ids) <> 1)) AS mixed
		  FROM stress_audit u) e,
	   (SELECT count(*) FILTER (WHERE (upd.status = 'complete' AND cr.status <> 'complete')
								 OR (cr.status = 'error' AND (upd.status <> 'error'
									 OR EXISTS (SELECT 1 FROM audit_rows x WHERE x.id = upd.id))))
				   AS bad_rows,
			   count(*) FILTER (WHERE upd.detail LIKE 'create request % ended in error')
				   AS failed_with_create
		  FROM stress_q upd
		  LEFT JOIN stress_q cr ON cr.entity = upd.entity AND cr.kind = 'create'
		 WHERE upd.kind = 'update') b;

-- 6. grouped updates share one process id and fence
INSERT INTO result
SELECT 6, bad_units = 0 AND bad_pids = 0 AND multi > 0,
	   format('grouped updates share one process id and fence: %s units of several requests (largest %s), %s with several fences, %s process ids in the queue with several fences or entities',
			  multi, largest, bad_units, bad_pids)
  FROM (SELECT count(*) FILTER (WHERE cardinality(ids) > 1) AS multi,
			   max(cardinality(ids)) AS largest,
			   count(*) FILTER (WHERE EXISTS (SELECT 1 FROM unnest(fences) f
											   WHERE f <> fence)) AS bad_units
		  FROM stress_audit) a,
	   (SELECT count(*) AS bad_pids FROM (
			SELECT process_id FROM stress_q WHERE process_id IS NOT NULL
			 GROUP BY process_id
			HAVING count(DISTINCT fence) > 1 OR count(DISTINCT entity) > 1) p) b;

-- 7. fences strictly increase over claims, in time order, within each
-- entity; no two units share a fence
INSERT INTO result
SELECT 7, backwards = 0 AND shared = 0,
	   format('fences strictly increase within each entity: %s units with a fence not above the previous unit of the entity, %s fences shared by two units',
			  backwards, shared)
  FROM (SELECT count(*) FILTER (WHERE prev >= fence) AS backwards
		  FROM (SELECT fence, lag(fence) OVER (PARTITION BY entity
											   ORDER BY started_at) AS prev
				  FROM stress_audit) s) a,
	   (SELECT count(*) - count(DISTINCT fence) AS shared FROM stress_audit) b;

-- 8. requests of one entity are handled in id order: a unit never handles
-- a request while an older request of the same entity is still open (a
-- request waits while an older request of its entity is open; a group of
-- updates must not jump over an older update either)
CREATE TEMP TABLE jumps AS
SELECT x.unit_id, x.entity, x.id, older.id AS older_id
  FROM audit_rows x
  JOIN stress_q older ON older.entity = x.entity AND older.id < x.id
 -- (a requeued request is open again, behind later ones: by design)
 WHERE NOT EXISTS (SELECT 1 FROM stress_requeue_log r WHERE r.id = older.id)
   AND NOT EXISTS (SELECT 1 FROM stress_audit a
					WHERE a.unit_id = x.unit_id AND older.id = ANY (a.ids))
   AND (older.settled_at IS NULL OR older.settled_at > x.started_at);

INSERT INTO result
SELECT 8, count(*) = 0,
	   format('requests of an entity are handled in id order: %s units handling a request before an older one of the entity was settled%s',
			  count(DISTINCT unit_id),
			  (SELECT format(' (e.g. unit %s handled request %s of entity %s before request %s)',
							 unit_id, id, entity, older_id)
				 FROM jumps ORDER BY unit_id LIMIT 1))
  FROM jumps;

-- 9. nothing is claimed before it is due: every row of a unit had its
-- run_at (a retry's backoff) behind it when the claim returned
INSERT INTO result
SELECT 9, count(*) FILTER (WHERE run_at > started_at) = 0,
	   format('nothing claimed before its run_at: %s of %s units claimed early%s',
			  count(*) FILTER (WHERE run_at > started_at), count(*),
			  (SELECT format(' (e.g. unit %s claimed requests %s %s before their run_at)',
							 unit_id, ids, run_at - started_at)
				 FROM stress_audit WHERE run_at > started_at
				 ORDER BY unit_id LIMIT 1))
  FROM stress_audit;

-- 10. the run stressed: enough requests, kills, a crash, and every kind
-- of failure happened
INSERT INTO result
SELECT 10, requests >= :min_requests AND kills >= :min_kills AND crashes >= 1
		  AND kills_in_unit > 0
		  AND retries > 0 AND errors > 0 AND rollbacks > 0 AND lost > 0
		  AND reaped > 0 AND abandoned > 0 AND batches > 0 AND exhausted > 0,
	   format('the run stressed: %s requests (min %s), %s units (%s batched claims), %s consumers killed (min %s; %s inside a transactional unit), %s producer kills, %s server crash, %s retries, %s error settles, %s rollbacks, %s lost claims, %s lost heartbeats, %s abandoned leases, %s rows reaped, %s requests out of attempts, %s heartbeats',
			  requests, :min_requests, units, batches, kills, :min_kills, kills_in_unit,
			  producer_kills, crashes, retries, errors, rollbacks, lost,
			  lost_heartbeats, abandoned, reaped, exhausted, heartbeats)
  FROM (SELECT count(*) AS requests,
			   count(*) FILTER (WHERE detail LIKE '%retries exhausted%') AS exhausted
		  FROM stress_q) q,
	   (SELECT count(*) AS units,
			   count(DISTINCT txid) FILTER (WHERE mode <> 'drain') AS txs,
			   count(*) FILTER (WHERE outcome = 'retry') AS retries,
			   count(*) FILTER (WHERE outcome = 'error') AS errors
		  FROM stress_audit) a,
	   (SELECT count(*) AS batches FROM (
			SELECT txid FROM stress_audit WHERE mode <> 'drain'
			 GROUP BY txid HAVING count(*) > 1) b) b,
	   (SELECT coalesce(sum(n) FILTER (WHERE what = 'kill'), 0) AS kills,
			   coalesce(sum(n) FILTER (WHERE what = 'kill-in-unit'), 0) AS kills_in_unit,
			   coalesce(sum(n) FILTER (WHERE what = 'kill-producer'), 0) AS producer_kills,
			   coalesce(sum(n) FILTER (WHERE what = 'crash'), 0) AS crashes,
			   coalesce(sum(n) FILTER (WHERE what = 'rollback'), 0) AS rollbacks,
			   coalesce(sum(n) FILTER (WHERE what = 'lost'), 0) AS lost,
			   coalesce(sum(n) FILTER (WHERE what = 'lost-heartbeat'), 0) AS lost_heartbeats,
			   coalesce(sum(n) FILTER (WHERE what = 'abandon'), 0) AS abandoned,
			   coalesce(sum(n) FILTER (WHERE what = 'reaped'), 0) AS reaped,
			   coalesce(sum(n) FILTER (WHERE what = 'heartbeat'), 0) AS heartbeats
		  FROM stress_stats) s;

-- 11. never more units of a group in progress than its concurrency
-- limit: at the start of each unit, the units of its group whose
-- [claim, settle] interval holds that moment (the audit's interval lies
-- inside the unit's time in progress, so an overlap here is a real one;
-- a unit settled in its claiming transaction is done at its settle, where
-- its slot comes free, not at the commit)
CREATE TEMP TABLE group_load AS
SELECT a.group_key, a.unit_id,
	   (SELECT count(*) FROM stress_audit b
		 WHERE b.group_key = a.group_key
		   AND b.started_at <= a.started_at AND a.started_at < b.settling_at) AS load,
	   coalesce((SELECT l.concurrency FROM dlsm_group_limits l
				  WHERE l.queue = 'stress_q'::regclass AND l.group_key = a.group_key),
				(SELECT l.concurrency FROM dlsm_group_limits l
				  WHERE l.queue = 'stress_q'::regclass AND l.group_key IS NULL)) AS lim
  FROM stress_audit a
 WHERE a.group_key IS NOT NULL;

INSERT INTO result
SELECT 11, count(*) FILTER (WHERE load > lim) = 0 AND count(*) > 0
		  AND count(*) FILTER (WHERE load = lim) > 0,
	   format('never more units of a group in progress than its limit: %s of %s units of groups began above it (%s at it; groups: %s)',
			  count(*) FILTER (WHERE load > lim), count(*),
			  count(*) FILTER (WHERE load = lim),
			  (SELECT string_agg(format('%s max %s of %s', group_key, m, l), ', ' ORDER BY group_key)
				 FROM (SELECT group_key, max(load) AS m, max(lim) AS l
						 FROM group_load GROUP BY group_key) g))
  FROM group_load;

-- 12. never more claims of a rate-limited group than its rate in any
-- window: claims are spaced by per / rate at least, so no window of
-- length per holds more than rate of them.  A claim's time is taken a
-- moment after it was admitted, so windows are per less 0.3 s long.
INSERT INTO result
SELECT 12, count(*) FILTER (WHERE in_window > rate) = 0 AND count(*) > 0,
	   format('never more claims of a group than its rate: %s of %s claims of group gr began a window of %s ms holding more than %s claims (at most %s)',
			  count(*) FILTER (WHERE in_window > rate), count(*),
			  max(window_ms), max(rate), max(in_window))
  FROM (SELECT a.unit_id, l.rate,
			   extract(epoch FROM l.per - interval '0.3 s') * 1000 AS window_ms,
			   (SELECT count(*) FROM stress_audit b
				 WHERE b.group_key = a.group_key
				   AND b.claimed_at >= a.claimed_at
				   AND b.claimed_at < a.claimed_at + (l.per - interval '0.3 s')) AS in_window
		  FROM stress_audit a
		  JOIN dlsm_group_limits l
			ON l.queue = 'stress_q'::regclass AND l.group_key = a.group_key
		 WHERE l.rate IS NOT NULL) w;

-- 13. deduplication: no request with a dedup key added while another of
-- the key was live (the call that added b returned before a was settled:
-- a was new or in progress all along), none requeued while another of its
-- key was live (requeued a at r.at, within b's last known live span: from
-- its add, or from its own requeue, to its settle; a requeue sees b only
-- once b's enqueue or requeue committed, after its log line, and a settle
-- of b that it saw was stamped before its own log line), and every call
-- answered with an existing id got a request of its key
INSERT INTO result
SELECT 13, key_overlaps = 0 AND requeue_overlaps = 0 AND wrong = 0 AND deduped > 0,
	   format('no two live requests with one dedup key: %s overlapping pairs, %s requeues of a held key, %s calls answered with another key''s id, over %s calls (%s answered with an existing id; %s requeues refused)',
			  key_overlaps, requeue_overlaps, wrong, calls, deduped, refused)
  FROM (SELECT count(*) AS key_overlaps FROM stress_q a
		  JOIN stress_q b ON b.dedup_key = a.dedup_key AND b.id > a.id
		  JOIN stress_dedup_log d ON d.id = b.id AND d.added
		 WHERE d.at < coalesce(a.settled_at, 'infinity')
		   AND NOT EXISTS (SELECT 1 FROM stress_requeue_log r WHERE r.id = a.id)) o,
	   (SELECT count(*) AS requeue_overlaps FROM stress_requeue_log r
		  JOIN stress_q a ON a.id = r.id
		  JOIN stress_q b ON b.dedup_key = a.dedup_key AND b.id <> a.id
		  LEFT JOIN stress_requeue_log rb ON rb.id = b.id
		  LEFT JOIN stress_dedup_log d ON d.id = b.id AND d.added
		 WHERE r.at < coalesce(b.settled_at, 'infinity')
		   AND coalesce(rb.at, d.at) < r.at) ro,
	   (SELECT coalesce(sum(n), 0) AS refused FROM stress_stats
		 WHERE what = 'requeue-refused') rr,
	   (SELECT count(*) FILTER (WHERE q.dedup_key IS DISTINCT FROM d.key) AS wrong,
			   count(*) AS calls,
			   count(*) FILTER (WHERE NOT d.added) AS deduped
		  FROM stress_dedup_log d LEFT JOIN stress_q q ON q.id = d.id) c;

-- 14. dead letters: every requeued request ended terminal again, settled
-- after its requeue by exactly one consumer's unit (or by the reaper, or a
-- cancel, as any request may be); cancels never hand a request out
INSERT INTO result
SELECT 14, bad = 0 AND requeued > 0 AND handed_out = 0,
	   format('every requeued request settled again exactly once: %s of %s requeued requests not so; %s cancelled requests handed out after their cancel (%s cancelled)',
			  bad, requeued, handed_out, cancelled)
  FROM (SELECT count(*) AS requeued,
			   count(*) FILTER (WHERE q.status NOT IN ('complete', 'error')
				 OR (SELECT count(*) FROM audit_rows x
					  WHERE x.id = r.id AND x.status IN ('complete', 'error')
						AND x.started_at > r.at)
					<> (q.detail IS NULL OR q.detail NOT LIKE 'lease of process %'
						AND q.detail NOT LIKE 'cancelled by role %')::int) AS bad
		  FROM stress_requeue_log r JOIN stress_q q ON q.id = r.id) a,
	   (SELECT count(*) AS cancelled,
			   count(*) FILTER (WHERE EXISTS (SELECT 1 FROM audit_rows x
											  WHERE x.id = q.id
												AND x.started_at > q.settled_at)) AS handed_out
		  FROM stress_q q WHERE q.detail LIKE 'cancelled by role %') c;

SELECT CASE WHEN ok THEN 'ok' ELSE 'not ok' END || ' ' || n || ' - ' || text
  FROM result ORDER BY n;

SELECT format('stress: %s requests, %s units, %s consumers killed, %s server crash, %s invariant violations',
			  (SELECT count(*) FROM stress_q),
			  (SELECT count(*) FROM stress_audit),
			  (SELECT coalesce(sum(n), 0) FROM stress_stats WHERE what = 'kill'),
			  (SELECT coalesce(sum(n), 0) FROM stress_stats WHERE what = 'crash'),
			  (SELECT count(*) FROM result WHERE NOT ok AND n <> 10));
