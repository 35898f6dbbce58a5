-- The queue option updates_wait_for_create: an update of an entity that has
-- no create request waits for one to be enqueued (on), or is handed out at
-- once (off, the default)

-- the option and its bad input
SELECT dlsm_create_queue('w', updates_wait_for_create => true);
SELECT dlsm_create_queue('o');
SELECT queue, updates_wait_for_create FROM dlsm_queues
 WHERE queue IN ('w'::regclass, 'o'::regclass) ORDER BY queue::text;
-- NULL is refused, as for max_attempts; nothing is created
SELECT dlsm_create_queue('n', updates_wait_for_create => NULL);
SELECT to_regclass('n') IS NULL AS not_created;
-- altering: NULL leaves it as it is
SELECT dlsm_alter_queue('o', max_attempts => 4);
SELECT dlsm_alter_queue('o', updates_wait_for_create => NULL);
SELECT max_attempts, updates_wait_for_create FROM dlsm_queues
 WHERE queue = 'o'::regclass;

-- off: an update without a create is handed out at once (its create may
-- have been removed by retention)
SELECT dlsm_enqueue('o', 'a', 'update');
SELECT kind, entity, dlsm_settle('o', process_id) FROM dlsm_claim('o');
SELECT waiting_on_create, waiting_for_create_to_arrive
  FROM dlsm_queue_stats WHERE queue = 'o'::regclass;

-- settle every claim of w in progress as complete; returns the rows
CREATE FUNCTION w_complete_all() RETURNS bigint LANGUAGE sql
AS $$SELECT sum(dlsm_settle('w', p))::bigint
	  FROM (SELECT DISTINCT process_id AS p FROM w
			 WHERE status = 'in-progress') s$$;

-- on: the updates of 'a' wait; the entity's other requests wait behind
-- them; other entities go on
SELECT dlsm_enqueue('w', 'a', 'update'), dlsm_enqueue('w', 'a', 'update');
SELECT dlsm_enqueue('w', 'a', 'delete');
SELECT dlsm_enqueue('w', 'b', 'create'), dlsm_enqueue('w', 'b', 'update');
SELECT kind, entity FROM dlsm_claim('w', units => 10, lease => '1 hour')
 ORDER BY id;
SELECT kind, entity FROM dlsm_claim('w', units => 10, lease => '1 hour')
 ORDER BY id;
SELECT new, in_progress, waiting_on_create, waiting_for_create_to_arrive
  FROM dlsm_queue_stats WHERE queue = 'w'::regclass;
-- dlsm_group_updates: busy, nothing changes
SELECT dlsm_group_updates('w', 'a', '55555555-5555-5555-5555-555555555555');
SELECT count(*) AS still_new FROM w WHERE entity = 'a' AND status = 'new';
SELECT w_complete_all();
SELECT kind, entity FROM dlsm_claim('w', units => 10, lease => '1 hour')
 ORDER BY id;
SELECT w_complete_all();
SELECT count(*) FROM dlsm_claim('w', units => 10, lease => '1 hour');

-- the create arrives: it goes first, the updates as one unit after it, then
-- the delete
SELECT dlsm_enqueue('w', 'a', 'create');
SELECT waiting_on_create, waiting_for_create_to_arrive
  FROM dlsm_queue_stats WHERE queue = 'w'::regclass;
SELECT kind, entity, dlsm_settle('w', process_id)
  FROM dlsm_claim('w', units => 10) ORDER BY id;
SELECT kind, entity, count(*) OVER (PARTITION BY process_id) AS unit
  FROM dlsm_claim('w', units => 10, lease => '1 hour') ORDER BY id;
SELECT w_complete_all();
SELECT kind, entity, dlsm_settle('w', process_id)
  FROM dlsm_claim('w', units => 10) ORDER BY id;
SELECT kind, entity, status FROM w ORDER BY id;

-- the create arrives after 200 other rows: the walks' floor passes over
-- the waiting update, and comes back for it once its create completed
SELECT dlsm_enqueue('w', 'late', 'update') AS late_update \gset
SELECT count(dlsm_enqueue('w', 'other' || i, 'create'))
  FROM generate_series(1, 200) i;
SELECT count(*) AS claimed,
	   count(*) FILTER (WHERE entity = 'late') AS of_late
  FROM (SELECT entity, dlsm_settle('w', process_id)
		  FROM dlsm_claim('w', units => 50)) c;
SELECT count(*) AS claimed,
	   count(*) FILTER (WHERE entity = 'late') AS of_late
  FROM (SELECT entity, dlsm_settle('w', process_id)
		  FROM dlsm_claim('w', units => 500)) c;
SELECT count(dlsm_enqueue('w', 'more' || i, 'create'))
  FROM generate_series(1, 200) i;
SELECT count(*) AS claimed,
	   count(*) FILTER (WHERE entity = 'late') AS of_late
  FROM (SELECT entity, dlsm_settle('w', process_id)
		  FROM dlsm_claim('w', units => 500)) c;
SELECT count(*) AS claimed FROM dlsm_claim('w', units => 500, lease => '1 hour');
SELECT waiting_for_create_to_arrive
  FROM dlsm_queue_stats WHERE queue = 'w'::regclass;
SELECT dlsm_enqueue('w', 'late', 'create') > :late_update AS create_is_newer;
SELECT id = :late_update AS is_late_update, kind, entity
  FROM dlsm_claim('w', units => 500, lease => '1 hour');
SELECT w_complete_all();
SELECT id = :late_update AS is_late_update, kind, entity,
	   dlsm_settle('w', process_id)
  FROM dlsm_claim('w', units => 500);
SELECT count(*) FILTER (WHERE status <> 'complete') AS open FROM w;

-- turned off with an update waiting (and passed over by the floor): it is
-- handed out at once
SELECT dlsm_enqueue('w', 'c', 'update') AS c_update \gset
SELECT count(*) FROM dlsm_claim('w', units => 10, lease => '1 hour');
SELECT count(*) FROM dlsm_claim('w', units => 10, lease => '1 hour');
SELECT dlsm_alter_queue('w', updates_wait_for_create => false);
SELECT updates_wait_for_create FROM dlsm_queues WHERE queue = 'w'::regclass;
SELECT waiting_for_create_to_arrive
  FROM dlsm_queue_stats WHERE queue = 'w'::regclass;
SELECT id = :c_update AS is_c_update, kind, entity, dlsm_settle('w', process_id)
  FROM dlsm_claim('w');
-- and on again
SELECT dlsm_alter_queue('w', updates_wait_for_create => true);
SELECT dlsm_enqueue('w', 'd', 'update');
SELECT count(*) FROM dlsm_claim('w', units => 10, lease => '1 hour');

SELECT dlsm_drop_queue('w', drop_table => true);
DROP FUNCTION w_complete_all();
SELECT dlsm_drop_queue('o', drop_table => true);
