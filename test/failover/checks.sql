-- test/failover/checks.sql: the invariants of a failover run (run.sh),
-- checked on the last primary after the drain.  The client logs are loaded
-- into temp tables first (run.sh does it):
--
--   enq_ok (client, token, id, entity, kind)   enqueues the producer saw commit
--   enq_fail (client, token, entity, kind, why) enqueues that failed (maybe committed)
--   claims (client, port, process_id, fence, entity, ids, at)  claims returned
--   settles (client, process_id, result, settled, port)  settle outcomes seen
--   events (client, op, t0, t1, outcome, port)  every call: epoch seconds, ok/down/lost/error, server
--
-- psql variables: old_port, new_port (the primary before and after the
-- failover).  One TAP line per check, numbered from :first; the queue is
-- fo_q, the consumers' audit table fo_audit (one row per unit settled in a
-- committed transaction, written in the settle's transaction).

\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only on
\pset footer off

CREATE TEMP TABLE result (n int PRIMARY KEY, ok boolean NOT NULL, text text NOT NULL);

-- 1. nothing lost: every enqueue a producer saw commit is in the queue,
-- same id, entity, kind and token; every other row of the queue is an
-- enqueue whose call failed (committed, the answer lost)
INSERT INTO result
SELECT 1, missing = 0 AND stray = 0 AND acked > 0,
	   format('nothing lost: %s enqueues acknowledged, %s of them missing or changed; %s %s from failed calls (committed, answer lost), %s %s nobody enqueued',
			  acked, missing, ambiguous, CASE WHEN ambiguous = 1 THEN 'row' ELSE 'rows' END,
			  stray, CASE WHEN stray = 1 THEN 'row' ELSE 'rows' END)
  FROM (SELECT count(*) AS acked,
			   count(*) FILTER (WHERE NOT EXISTS (
				   SELECT 1 FROM fo_q q
					WHERE q.id = e.id AND q.entity = e.entity AND q.kind = e.kind
					  AND q.payload->>'token' = e.token)) AS missing
		  FROM enq_ok e) a,
	   (SELECT count(*) FILTER (WHERE f.token IS NOT NULL) AS ambiguous,
			   count(*) FILTER (WHERE f.token IS NULL) AS stray
		  FROM fo_q q
		  LEFT JOIN enq_fail f ON f.token = q.payload->>'token'
		 WHERE NOT EXISTS (SELECT 1 FROM enq_ok e WHERE e.token = q.payload->>'token')) b;

-- 2. every settle a consumer saw commit is there: its requests complete
-- under its process id, as many as it settled
INSERT INTO result
SELECT 2, bad = 0 AND acked > 0,
	   format('every acknowledged settle kept: %s settles acknowledged, %s not found complete under their process id',
			  acked, bad)
  FROM (SELECT count(*) AS acked,
			   count(*) FILTER (WHERE (SELECT count(*) FROM fo_q q
										WHERE q.process_id = s.process_id
										  AND q.status = 'complete') <> s.settled) AS bad
		  FROM settles s WHERE s.result = 'ok') x;

-- 3. after the drain every request is terminal
INSERT INTO result
SELECT 3, count(*) FILTER (WHERE status NOT IN ('complete', 'error')) = 0,
	   format('every request terminal after the drain: %s complete, %s error, %s new, %s in-progress',
			  count(*) FILTER (WHERE status = 'complete'),
			  count(*) FILTER (WHERE status = 'error'),
			  count(*) FILTER (WHERE status = 'new'),
			  count(*) FILTER (WHERE status = 'in-progress'))
  FROM fo_q;

-- 4. no request settled twice: at most one unit settled each request, and
-- each complete request matches exactly that unit (process id and fence)
INSERT INTO result
SELECT 4, twice = 0 AND unmatched = 0,
	   format('no request settled twice: %s requests in two settled units, %s complete requests not matching exactly one unit',
			  twice, unmatched)
  FROM (SELECT count(*) AS twice FROM (
			SELECT r.id FROM fo_audit a, unnest(a.ids) r(id)
			 WHERE a.settled > 0 GROUP BY r.id HAVING count(*) > 1) t) a,
	   (SELECT count(*) AS unmatched FROM fo_q q
		 WHERE q.status = 'complete'
		   AND (SELECT count(*) FROM fo_audit a
				 WHERE q.id = ANY (a.ids) AND a.settled > 0
				   AND a.process_id = q.process_id AND a.fence = q.fence) <> 1) b;

-- 5. no entity in two units at once
INSERT INTO result
SELECT 5, n_overlap = 0 AND units > 0,
	   format('no entity in two units at once: %s overlapping pairs over %s units of %s entities',
			  n_overlap, units, entities)
  FROM (SELECT count(*) AS n_overlap FROM fo_audit a
		  JOIN fo_audit b ON b.entity = a.entity AND b.unit_id > a.unit_id
		   AND a.started_at < b.ended_at AND b.started_at < a.ended_at) o,
	   (SELECT count(*) AS units, count(DISTINCT entity) AS entities FROM fo_audit) u;

-- 6. fences strictly increase within each entity, in claim order; no two
-- claims share a fence; grouped updates share one process id and fence
INSERT INTO result
SELECT 6, backwards = 0 AND shared = 0 AND mixed = 0,
	   format('fences rise within each entity: %s units with a fence not above the previous one of the entity, %s fences shared by two claims, %s process ids with several fences or entities; %s units of several requests',
			  backwards, shared, mixed, multi)
  FROM (SELECT count(*) FILTER (WHERE prev >= fence) AS backwards
		  FROM (SELECT fence, lag(fence) OVER (PARTITION BY entity ORDER BY started_at) AS prev
				  FROM fo_audit) s) a,
	   (SELECT count(*) - count(DISTINCT fence) AS shared FROM claims) b,
	   (SELECT count(*) AS mixed FROM (
			SELECT process_id FROM fo_q WHERE process_id IS NOT NULL
			 GROUP BY process_id
			HAVING count(DISTINCT fence) > 1 OR count(DISTINCT entity) > 1) p) c,
	   (SELECT count(*) FILTER (WHERE cardinality(ids) > 1) AS multi FROM fo_audit) d;

-- 7. fences across the failover: every claim the new primary handed out
-- has a fence above every claim of the old primary
INSERT INTO result
SELECT 7, before_max IS NOT NULL AND after_min IS NOT NULL AND after_min > before_max,
	   format('fences rise across the failover: highest before %s (%s claims on port %s), lowest after %s (%s claims on port %s)',
			  coalesce(before_max::text, 'none'), n_before, :old_port,
			  coalesce(after_min::text, 'none'), n_after, :new_port)
  FROM (SELECT max(fence) FILTER (WHERE port = :old_port) AS before_max,
			   count(*) FILTER (WHERE port = :old_port) AS n_before,
			   min(fence) FILTER (WHERE port = :new_port) AS after_min,
			   count(*) FILTER (WHERE port = :new_port) AS n_after
		  FROM claims) f;

-- 8. the failover happened in the middle: enqueues, claims and settles
-- on both servers
INSERT INTO result
SELECT 8, bool_and(n > 0),
	   format('work on both sides of the failover: %s',
			  string_agg(format('%s %s on port %s', n, what, port), ', ' ORDER BY what, port))
  FROM (SELECT 'claims' AS what, p.port, (SELECT count(*) FROM claims c WHERE c.port = p.port) AS n
		  FROM (VALUES (:old_port), (:new_port)) p(port)
		UNION ALL
		SELECT 'settles', p.port, (SELECT count(*) FROM settles s WHERE s.port = p.port AND s.result = 'ok')
		  FROM (VALUES (:old_port), (:new_port)) p(port)) x;

SELECT CASE WHEN ok THEN 'ok' ELSE 'not ok' END || ' ' || (n + :first - 1) || ' - ' || text
  FROM result ORDER BY n;

-- the figures for the summary, one "key value" line each
SELECT 'acked ' || count(*) FROM enq_ok;
SELECT 'queued ' || count(*) FROM fo_q;
SELECT 'complete ' || count(*) FROM fo_q WHERE status = 'complete';
SELECT 'errors ' || count(*) FROM fo_q WHERE status = 'error';
SELECT 'reaped ' || count(*) FROM fo_q WHERE attempts > 1;
SELECT 'units ' || count(*) FROM fo_audit;
SELECT 'settles_acked ' || count(*) FROM settles WHERE result = 'ok';
SELECT 'settles_lost ' || count(*) FROM settles WHERE result = 'lost';
SELECT 'abandoned ' || count(*) FROM settles WHERE result = 'abandoned';
SELECT 'fence_before ' || coalesce(max(fence)::text, 'none') FROM claims WHERE port = :old_port;
SELECT 'fence_after ' || coalesce(min(fence)::text, 'none') FROM claims WHERE port = :new_port;
SELECT 'failed_calls ' || count(*) FROM events WHERE outcome = 'down';
-- the outage as the clients saw it: from the start of the first call that
-- failed for want of a primary to the end of the first call served by the
-- new primary
SELECT 'outage ' || coalesce(round((ok.t1 - f.t0)::numeric, 3)::text, 'none')
  FROM (SELECT min(t0) AS t0 FROM events WHERE outcome = 'down') f
  LEFT JOIN LATERAL (SELECT t1 FROM events
					  WHERE outcome = 'ok' AND port = :new_port AND t0 >= f.t0
					  ORDER BY t1 LIMIT 1) ok ON true;
-- the longest one client waited between a failure and its next success
SELECT 'outage_client_max ' || coalesce(round(max(w)::numeric, 3)::text, 'none')
  FROM (SELECT client, min(t1) FILTER (WHERE outcome = 'ok' AND t0 > ft) - ft AS w
		  FROM (SELECT e.*, min(t0) FILTER (WHERE outcome = 'down') OVER (PARTITION BY client) AS ft
				  FROM events e) s
		 WHERE ft IS NOT NULL
		 GROUP BY client, ft) c;
SELECT 'failed_checks ' || count(*) FILTER (WHERE NOT ok) FROM result;
