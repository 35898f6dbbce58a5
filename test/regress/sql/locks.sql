-- Named locks: scopes, fences, unlock, refresh, and every error path
-- transaction scope: held until the transaction ends, nothing written
BEGIN;
SELECT dlsm_try_lock('jobs/nightly') AS t1 \gset
SELECT :t1 > 0 AS granted;
SELECT name, scope, fence = :t1 AS same_fence, lease_until, waiters, position
  FROM dlsm_locks;
SELECT count(*) AS rows_written FROM dlsm_leases;
-- granted again to the same transaction, with a higher fence
SELECT dlsm_try_lock('jobs/nightly') > :t1 AS regranted;
COMMIT;
SELECT count(*) AS held_after_commit FROM dlsm_locks;
-- our keys never collide with pg_advisory_* keys
BEGIN;
SELECT dlsm_try_lock('0') IS NOT NULL AS named;
SELECT pg_try_advisory_xact_lock(0) AS advisory_int8,
	   pg_try_advisory_xact_lock(0, 0) AS advisory_int4;
COMMIT;

-- lease scope: outlives the transaction and the session
SELECT dlsm_try_lock('reports/daily', lease => '1 hour') AS l1 \gset
SELECT name, scope, fence = :l1 AS same_fence,
	   lease_until > now() + interval '59 minutes' AS leased
  FROM dlsm_locks;
SELECT dlsm_try_lock('reports/daily') IS NULL AS not_granted_tx,
	   dlsm_try_lock('reports/daily', lease => '1 minute') IS NULL AS not_granted_lease;
SELECT dlsm_try_lock('reports/daily', wait => '50 ms') IS NULL AS not_granted_in_50ms;
-- refresh extends; unlock with a wrong fence changes nothing
SELECT dlsm_refresh_lock('reports/daily', :l1, '2 hours')
	   > now() + interval '119 minutes' AS refreshed;
SELECT dlsm_unlock('reports/daily', :l1 + 1000) AS wrong_fence;
SELECT count(*) AS still_held FROM dlsm_leases WHERE name = 'reports/daily';
SELECT dlsm_unlock('reports/daily', :l1) AS released;
SELECT dlsm_unlock('reports/daily', :l1) AS released_twice;
SELECT dlsm_try_lock('reports/daily') > :l1 AS free_again;

-- an expired lease is free for the next one at once, and fenced off
SELECT dlsm_try_lock('short', lease => '10 ms') AS s1 \gset
SELECT pg_sleep(0.05);
SELECT dlsm_try_lock('short', lease => '1 hour') AS s2 \gset
SELECT :s2 > :s1 AS newer_fence;
\set VERBOSITY sqlstate
SELECT dlsm_refresh_lock('short', :s1, '1 hour');
\set VERBOSITY default
SELECT dlsm_unlock('short', :s1) AS stale_unlock;
SELECT fence = :s2 AS held_by_new FROM dlsm_leases WHERE name = 'short';
SELECT dlsm_unlock('short', :s2);

-- a lease is released or refreshed only by its role (or a member of it, or
-- a superuser): knowing its name and fence is not enough
CREATE ROLE dlsm_holder;
CREATE ROLE dlsm_other;
SET ROLE dlsm_holder;
SELECT dlsm_try_lock('owned', lease => '1 hour') AS o1 \gset
RESET ROLE;
SELECT holder_role FROM dlsm_leases WHERE name = 'owned';
SET ROLE dlsm_other;
SELECT dlsm_unlock('owned', :o1);
SELECT dlsm_refresh_lock('owned', :o1, '1 hour');
RESET ROLE;
GRANT dlsm_holder TO dlsm_other;
SET ROLE dlsm_other;
SELECT dlsm_refresh_lock('owned', :o1, '1 hour') > now() AS member_refreshes;
RESET ROLE;
SELECT dlsm_unlock('owned', :o1) AS superuser_releases;
DROP ROLE dlsm_holder, dlsm_other;

-- a transaction-scope lock is released at any savepoint level
BEGIN;
SAVEPOINT a;
SELECT dlsm_try_lock('nested') AS n1 \gset
RELEASE SAVEPOINT a;
SAVEPOINT b;
SELECT dlsm_unlock('nested', :n1) AS released_deeper;
ROLLBACK TO SAVEPOINT b;
SELECT dlsm_unlock('nested', :n1) AS released_after_rollback_to;
SELECT count(*) AS held FROM dlsm_locks WHERE name = 'nested';
COMMIT;
-- a grant taken in a savepoint that rolls back is gone with it
BEGIN;
SAVEPOINT c;
SELECT dlsm_try_lock('rolled') AS r1 \gset
ROLLBACK TO SAVEPOINT c;
SELECT dlsm_unlock('rolled', :r1) AS released_rolled_back;
COMMIT;

-- fences rise across claims and lock grants alike
SELECT dlsm_create_queue('fq');
SELECT dlsm_enqueue('fq', 'x');
SELECT fence AS claim_fence FROM dlsm_claim('fq') \gset
SELECT dlsm_try_lock('after-claim') > :claim_fence AS lock_after_claim;

-- a long multibyte name: dlsm_locks shows it cut at a character boundary
BEGIN;
SELECT dlsm_try_lock(repeat('é', 100)) IS NOT NULL AS granted;
SELECT length(name) AS chars, octet_length(name) AS bytes
  FROM dlsm_locks WHERE name LIKE 'é%';
ROLLBACK;

-- errors
SELECT dlsm_try_lock(NULL);
SELECT dlsm_try_lock('');
SELECT dlsm_try_lock('x', wait => NULL);
SELECT dlsm_try_lock('x', wait => '-1 s');
SELECT dlsm_try_lock('x', lease => '0');
SELECT dlsm_try_lock('x', lease => '-1 hour');
SELECT dlsm_unlock(NULL, 1);
SELECT dlsm_unlock('x', NULL);
SELECT dlsm_refresh_lock('x', 1, NULL);
SELECT dlsm_refresh_lock('x', NULL, '1 s');
SELECT dlsm_refresh_lock('', 1, '1 s');
SELECT dlsm_refresh_lock('nobody holds this', 1, '1 s');
SELECT count(*) AS leases_left FROM dlsm_leases;

-- the wait diagnostic view is there (nobody waits now)
SELECT count(*) AS waits FROM dlsm_lock_waits WHERE blocked_pid = pg_backend_pid();

-- locks take their fences as the extension's owner: a role without USAGE
-- on the fence sequence still takes locks of either scope
REVOKE USAGE ON SEQUENCE dlsm_fence_seq FROM PUBLIC;
CREATE ROLE dlsm_no_seq;
SET ROLE dlsm_no_seq;
SELECT dlsm_try_lock('noseq') > 0 AS took;
SELECT dlsm_try_lock('noseq3', lease => '1 minute') > 0 AS took_lease;
RESET ROLE;
DELETE FROM dlsm_leases WHERE name LIKE 'noseq%';
GRANT USAGE ON SEQUENCE dlsm_fence_seq TO PUBLIC;
DROP ROLE dlsm_no_seq;
