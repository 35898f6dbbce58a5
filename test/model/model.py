#!/usr/bin/python3
"""test/model/model.py: a model-based (stateful property) test of dlsm's
claim/settle contract (README: Concepts, Guarantees, dlsm_enqueue,
dlsm_claim, dlsm_group_updates, dlsm_settle, dlsm_settle_many,
dlsm_heartbeat, dlsm_reap, Fences).

Entities e0, e1 and e2 are in group ga, with at most 2 units in progress
(dlsm_set_limit); e3 is in no group.  Claims and dlsm_group_updates must
pass over (55P03 for the latter) a group at its limit as README "Groups
and limits" says, counting the slots open transactions hold.

Three client sessions and one superuser "admin" connection are driven
through random interleavings (hypothesis's RuleBasedStateMachine) of:
enqueues of creates, updates and another kind over a small pool of
entities, in any order (updates before their create too, duplicate creates:
23505), due (run_at left out, NULL or in the past) or delayed (run_at an
hour ahead); transactional claims (BEGIN; dlsm_claim, again inside the same
transaction; COMMIT or ROLLBACK later); leased claims committed at once;
dlsm_group_updates of an entity under a fresh process id, its holder's or
any seen, in a transaction (before or after claims of its own) or on its
own; dlsm_settle of every outcome (complete, error, retry with retry_after
=> '0' or '1 hour': a delayed request again); dlsm_settle_many;
dlsm_heartbeat; late settles and heartbeats of lost, settled, rolled-back,
other sessions' uncommitted and never-claimed process ids (55000); lease
expiry (the admin sets lease_until of a committed in-progress unit into the
past: no real sleeping), delayed requests coming due (the admin sets their
run_at into the past) and dlsm_reap; dead letters: dlsm_requeue of
requests in error (failed creates and the updates that failed with them
included) and dlsm_cancel of new ones (in progress ones, this
transaction's own unwritten claims included: 55000, nothing changed), in a
transaction or on their own, naming requests of every state and ids the
queue does not hold.  Every step is compared with a small Python model of
the README contract:

- which rows and units each claim returns: FIFO by id; delayed requests
  not before their run_at; entities in progress (in the claimer's view) or
  claimed by another open transaction passed over; an update waits while
  its entity's create is new or in progress; the updates of an entity
  whose create failed are never handed out (and are settled error, with
  the README's detail); all ready updates of an entity up to its next new
  request that is not a due update form one unit (one process id, one
  fence); requests never overtake an older open request of their entity,
  delayed or not, but a create goes first when its entity's oldest open
  request is an update (see AMBIGUITIES below);
- dlsm_group_updates(entity, process_id): its count, the rows it moves to
  in-progress (the entity's new due updates up to its next new request
  that is not a due update, and those already in progress under
  process_id; one new fence; attempts + 1 for the new ones); 55P03 and
  nothing changed when another transaction is claiming the entity
  (message "is busy", detail "Another transaction is claiming ..."),
  another process id holds it in progress ("... in progress under another
  process id.", the transaction's own claims not yet written included),
  its create is not complete ("The create request ... is not complete."),
  or one of the rows it would move is locked by another transaction
  ("could not obtain lock on row"); in a transaction, it writes that
  transaction's claims first (they read in-progress from then on) and
  holds the entity until the transaction ends, as a claim does;
- the rows each session sees (its own uncommitted changes, nobody else's;
  its claims read as before until a settle, heartbeat, dlsm_group_updates
  or the commit writes them) and the committed rows (admin) after every
  step: status, process id, fence, attempts, detail, and for new rows
  whether they are due;
- what COMMIT and ROLLBACK leave; settle counts, settle_many rows (0 for a
  lost id, a duplicated id counted twice), 55000 for lost claims, 23505 for
  a second create; attempts and max_attempts (3: retry and reap turn into
  error); no entity in two units in any session's view; fences strictly
  rising across claims and groupings, one per unit; a fresh process id per
  unit;
- the queue option updates_wait_for_create, turned on and off by the
  admin between transactions (dlsm_alter_queue): when on, an update of an
  entity with no create request in the claimer's view is not handed out
  (its entity's later requests wait behind it, its create goes first when
  it comes), dlsm_group_updates raises 55P03 ("... has not been
  enqueued."), and dlsm_queue_stats' waiting_for_create_to_arrive counts
  the committed ones; turned off, they are handed out at once;
- dlsm_requeue and dlsm_cancel: their counts, the rows they move (requeued:
  new, attempts 0, no process id or fence, due, detail "requeued by role
  ... after N attempts" and the old detail; cancelled: error, "cancelled by
  role ..."), 55000 from a cancel naming a request in progress, and the
  claims after them (a requeued create before its updates, which wait for
  it again; updates requeued while their create is in error fail again);
  the ids they name are never locked by another open transaction (the
  call would wait for it); in the scenarios, dedup keys: dlsm_enqueue's
  dedup_key returns the live request of its key, and a requeue whose
  request's key a live request holds, or of two requests of one key, fails
  with 55000 and moves nothing (one live request per key);
- at the end of each example: every open transaction rolled back, then
  (with updates_wait_for_create on) the missing creates enqueued or the
  option turned off, by turns, then delayed requests made due, expire +
  reap + leased claims + settles until nothing moves: every request must
  be terminal (nothing left stuck) and the model must agree on each claim
  on the way.

AMBIGUITIES resolved here (README/DESIGN do not say):
- "never jumping ahead of an earlier request of another kind": a request
  other than a create is not handed out while an older request of its
  entity is new (updates waiting for their create and delayed requests
  included), except older updates whose create failed once a claim
  settled them (below); a create is handed out when the older requests of
  its entity wait for it, that is when the entity's oldest open request is
  an update (the others wait behind it), delayed or not: otherwise an
  update enqueued before its create and followed by another kind would
  wait forever, or until its run_at.  A create behind an older request of
  another kind (a delete not yet due) waits for it like any request (as
  src/querytext.c BLOCKS has it).
- A group of updates ends at the entity's next *new* request that is not a
  due update: another kind, or an update not yet due (later updates never
  overtake it); settled ones (e.g. the create it waited for) do not split
  it.  dlsm_group_updates ends its group there too.
- Updates of a failed create may still read 'new' until some claim passes
  over them; the model accepts 'new' or 'error' with the README's detail
  until then, and requires 'error' after the final drain.  A claim settles
  them (all, delayed ones too) when it meets the first of them due at the
  head of its entity (no older new request); until then they hold the
  entity's later requests back like any older request.
- Process ids: the README wants one new for every claim.  The model's
  dlsm_group_updates reuses them freely (its holder's, a settled or lost
  one, another session's committed one) but never the process id of
  another transaction's claim not yet written, which nobody else can know
  (were it given, that transaction's settle would settle only its claim's
  rows, not those grouped under the same id meanwhile: pending.c takes a
  fresh process id to hold nothing else).
- dlsm_group_updates on its own (autocommit) is allowed: it moves the rows
  and commits at once, holding nothing after.  Its 55P03 inside a
  transaction is taken in a savepoint (rolled back: the transaction's
  claims read as not written again).
- A delayed request is due when run_at <= the claim's clock; the admin
  makes one due by setting its run_at a minute into the past, a change
  "behind dlsm's back" that the claim sees at once (the queue's floor never
  passes a delayed request).
- Fences: strictly greater than every fence handed out by an earlier claim
  or dlsm_group_updates call; the units of one call have distinct fences,
  in no particular order.

Before the random run, fixed scenarios (one TAP line each) replay through
the same model the shortest reproduction of each disagreement found so far
and a few basic cases.

Output: TAP on stdout (the scenarios, then the random run), a summary line
"model: ...", and on a disagreement hypothesis's shrunk counterexample with
the SQL transcript of the sessions.  Environment: PGHOST/PGPORT (the
cluster), MODEL_EXAMPLES (400), MODEL_STEPS (50 per example), MODEL_SEED
(unset: derandomized, the same examples every run; "random"; or a number),
MODEL_BUDGET (90 s: the random run stops generating, or shrinking, then),
MODEL_SCENARIOS=0 to skip the scenarios; to explore past a known defect
in the random run (the model and the scenarios are unchanged): MODEL_UPDATE_BEFORE_CREATE=0 (no update enqueued
before its entity's create), MODEL_KINDS=create,update (no other kinds),
MODEL_DELAYED_BEFORE_CREATE=0 (no update delayed while its entity's create
may come after it).
"""
import os
import re
import sys
import time
import traceback
import uuid

import psycopg2
import psycopg2.extensions
import hypothesis.core
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine as hengine
from hypothesis.reporting import with_reporter
from hypothesis.stateful import (RuleBasedStateMachine, precondition, rule,
                                 run_state_machine_as_test)

NSESS = 3
ADMIN = NSESS                     # index of the admin connection
ENTITIES = ('e0', 'e1', 'e2', 'e3')
# the kinds enqueued, with their weights; MODEL_KINDS=create,update to
# leave out other kinds (exploration)
KINDS = tuple(os.environ.get('MODEL_KINDS', 'create,update,update,update,delete').split(','))
MAX_ATTEMPTS = 3
TERMINAL = ('complete', 'error')
# groups: e0, e1 and e2 are in group ga, at most GROUP_LIMIT units of it in
# progress at once (dlsm_set_limit); e3 is in no group
GROUP_OF = {'e0': 'ga', 'e1': 'ga', 'e2': 'ga', 'e3': None}
GROUP_LIMIT = {'ga': 2}
# MODEL_UPDATE_BEFORE_CREATE=0: enqueue a create instead of an update whose
# entity has no create in the session's view (to look past that defect;
# the model itself is unchanged)
UPDATE_BEFORE_CREATE = os.environ.get('MODEL_UPDATE_BEFORE_CREATE', '1') != '0'
# run_at of a random enqueue (DlsmMachine.RUN_AT_SQL): mostly the default, an
# hour ahead (delayed), sometimes NULL or in the past
RUN_AT = st.sampled_from((None, None, None, None, 'later', 'later', 'past', 'null'))
# MODEL_DELAYED_BEFORE_CREATE=0: no update is enqueued an hour ahead while
# its entity has no create in the session's view, nor retried an hour ahead
# while that create is not complete (to look past that defect; the model
# itself is unchanged)
DELAYED_BEFORE_CREATE = os.environ.get('MODEL_DELAYED_BEFORE_CREATE', '1') != '0'


class Disagreement(AssertionError):
    pass


class BudgetSpent(KeyboardInterrupt):
    """The time budget ran out before any failure: hypothesis lets an
    interrupt through, ending the run, without recording the example."""


# ---------------------------------------------------------------- the model

class Row:
    __slots__ = ('id', 'kind', 'entity', 'status', 'pid', 'fence', 'attempts',
                 'expired', 'detail', 'due', 'key')

    def __init__(self, id, kind, entity, due=True):
        self.id, self.kind, self.entity = id, kind, entity
        self.status, self.pid, self.fence, self.attempts = 'new', None, None, 0
        self.expired = False
        self.detail = None      # None, an exact string, or a compiled regex
        self.due = due          # run_at has come (an hour ahead: not due)
        self.key = None         # the dedup key (scenarios only), or None

    def copy(self):
        r = Row(self.id, self.kind, self.entity)
        for a in Row.__slots__[3:]:
            setattr(r, a, getattr(self, a))
        return r

    def __repr__(self):
        return '%d:%s/%s:%s%s%s' % (self.id, self.kind, self.entity, self.status,
                                    '@' + self.pid[:8] if self.pid and
                                    self.status == 'in-progress' else '',
                                    '' if self.due or self.status != 'new'
                                    else '(later)')


class Tx:
    def __init__(self):
        self.overlay = {}       # id -> Row written (or inserted) by this transaction
        self.locks = set()      # entities claimed in this transaction
        # id -> the row as it was before this transaction claimed it: a
        # claim is written at its settle, heartbeat or commit, and reads
        # as before until then, to its own transaction too
        self.pending = {}
        # updates of failed creates this transaction's claims may have
        # settled error (uncommitted: they still read new to others)
        self.may_fail = set()
        # group -> slots this transaction holds: one per unit of a limited
        # group it claimed, released when it ends or when it settles that
        # unit; unit_slots: process id -> its group
        self.slots = {}
        self.unit_slots = {}


class Model:
    """The README contract over committed rows plus each open transaction's
    own changes."""

    def __init__(self):
        self.committed = {}
        self.tx = [None] * NSESS
        self.wait_create = False    # the queue's updates_wait_for_create

    def view(self, s):
        if s is None or s == ADMIN or self.tx[s] is None:
            return self.committed
        v = dict(self.committed)
        v.update(self.tx[s].overlay)
        return v

    def visible(self, s):
        """The rows session s reads: its view, its claims not yet written
        as they were before."""
        v = self.view(s)
        if s is None or s == ADMIN or self.tx[s] is None or not self.tx[s].pending:
            return v
        v = dict(v)
        v.update(self.tx[s].pending)
        return v

    def write(self, s, row, claim=False):
        """Row as s changed it; a claim (claim) is pending until written."""
        if s is not None and s != ADMIN and self.tx[s] is not None:
            t = self.tx[s]
            if claim:
                t.pending.setdefault(row.id, t.overlay.get(row.id, self.committed.get(row.id)))
            else:
                t.pending.pop(row.id, None)
            t.overlay[row.id] = row
        else:
            self.committed[row.id] = row

    def holders(self, rid, but=None):
        """Open transactions other than `but` that wrote (locked) row rid."""
        return [i for i, t in enumerate(self.tx)
                if t is not None and i != but and rid in t.overlay]

    @staticmethod
    def creates(v):
        return {r.entity: r for r in v.values() if r.kind == 'create'}

    @staticmethod
    def doomed(v, r, creates=None):
        """An update whose entity's create ended in error (never handed out)."""
        c = (creates if creates is not None else Model.creates(v)).get(r.entity)
        return r.kind == 'update' and c is not None and c.status == 'error'

    def held(self, v, pid):
        return sorted((r for r in v.values()
                       if r.pid == pid and r.status == 'in-progress'),
                      key=lambda r: r.id)

    def would_block(self, s, pid):
        """An UPDATE by s of pid's in-progress rows would wait for another
        open transaction holding one of them."""
        return any(self.holders(r.id, but=s) for r in self.held(self.view(s), pid))

    def maybe_failing(self, s):
        """Updates of failed creates that another open transaction may have
        settled error: uncommitted, they still hold later requests back."""
        return frozenset().union(*[t.may_fail for i, t in enumerate(self.tx)
                                   if t is not None and i != s])

    def load(self, s, g, written=False):
        """The units of group g in progress as a claim by s counts them:
        those in progress in the queue as s reads it (its claims not yet
        written read new, unless written), and one per slot an open
        transaction holds (s's own included: a claim of s written
        already counts twice, see README "Groups and limits")."""
        v = self.view(s) if written else self.visible(s)
        pids = {(r.pid, r.entity) for r in v.values()
                if r.status == 'in-progress' and GROUP_OF[r.entity] == g}
        return len(pids) + sum(t.slots.get(g, 0) for t in self.tx if t is not None)

    def expected_claim(self, s, units, blocking=frozenset()):
        """The units (lists of ids) a claim by session s should return;
        the updates of failed creates in blocking hold later requests back."""
        v = self.view(s)
        busy = {r.entity for r in v.values() if r.status == 'in-progress'}
        for i, t in enumerate(self.tx):
            if t is not None and i != s:
                busy |= t.locks
        creates = self.creates(v)
        new = sorted((r for r in v.values() if r.status == 'new'),
                     key=lambda r: r.id)
        first = {}                      # each entity's oldest new request
        for r in new:
            first.setdefault(r.entity, r)
        out, taken = [], set()
        added, full = {}, set()         # this claim's slots; groups refused
        for r in new:
            if len(out) >= units:
                break
            if not r.due:
                continue                # its turn has not come
            e = r.entity
            if e in busy or e in taken or self.holders(r.id, but=s):
                continue
            if r.kind == 'update':
                c = creates.get(e)
                if c is not None and c.status != 'complete':
                    continue            # waits for its create, or doomed
                if c is None and self.wait_create:
                    continue            # waits for its create to arrive
            # the updates of a failed create are settled error by the claim
            # that meets the first of them due at its entity's head; until
            # then they hold later requests back
            cleared = first[e].due and self.doomed(v, first[e], creates)
            older = any(o.entity == e and o.id < r.id and
                        (o.id in blocking or not cleared or
                         not self.doomed(v, o, creates))
                        for o in new)
            if older and (r.kind != 'create' or first[e].kind != 'update'):
                # never overtakes an older request; a create goes first
                # when its entity's oldest open request is an update
                continue
            g = GROUP_OF[e]
            if g in GROUP_LIMIT:
                # passed over when its group is at its limit, and the
                # group too for the rest of the claim
                if g in full or self.load(s, g) + added.get(g, 0) + 1 > GROUP_LIMIT[g]:
                    full.add(g)
                    continue
                added[g] = added.get(g, 0) + 1
            if r.kind == 'update':
                group = []
                for o in new:
                    if o.entity != e or o.id < r.id:
                        continue
                    if o.kind != 'update' or not o.due:
                        break
                    if self.holders(o.id, but=s):
                        continue        # locked by another transaction (a
                        # cancel or requeue in progress): passed over
                    group.append(o.id)
                out.append(group)
            else:
                out.append([r.id])
            taken.add(e)
        return out

    def expected_group(self, s, entity, pid):
        """What dlsm_group_updates(entity, pid) by session s should do, its
        own claims written first: (why it is busy (55P03), None) or (None,
        the ids it moves to pid)."""
        if any(t is not None and i != s and entity in t.locks
               for i, t in enumerate(self.tx)):
            return 'claiming', None
        v = self.view(s)
        rows = sorted((r for r in v.values() if r.entity == entity),
                      key=lambda r: r.id)
        if any(r.status == 'in-progress' and r.pid != pid for r in rows):
            return 'held', None
        if any(r.kind == 'create' and r.status != 'complete' for r in rows):
            return 'create', None
        if self.wait_create and not any(r.kind == 'create' for r in rows):
            return 'nocreate', None
        g = GROUP_OF[entity]
        if (g in GROUP_LIMIT and any(r.kind == 'update' and r.status == 'new' for r in rows)
                and not any(r.status == 'in-progress' and r.pid == pid for r in rows)
                and self.load(s, g, written=True) + 1 > GROUP_LIMIT[g]):
            return 'limit', None
        stop = min([r.id for r in rows if r.status == 'new' and
                    (r.kind != 'update' or not r.due)] + [2**63])
        ids = [r.id for r in rows if r.kind == 'update' and r.id < stop and
               ((r.status == 'new' and r.due) or
                (r.status == 'in-progress' and r.pid == pid))]
        if any(self.holders(i, but=s) for i in ids):
            return 'row', None
        return None, ids

    def waiting_for_create_to_arrive(self):
        """Committed new updates whose entity has no create: they wait,
        when the option is on (dlsm_queue_stats)."""
        if not self.wait_create:
            return 0
        creates = self.creates(self.committed)
        return sum(1 for r in self.committed.values() if r.kind == 'update'
                   and r.status == 'new' and r.entity not in creates)


# ------------------------------------------------------------ the harness

CONNS = []
STATS = dict(examples=0, steps=0, claims=0, claimed_rows=0, units=0, groups=0,
             settles=0, settles_in_savepoint=0, settle_many=0, heartbeats=0, lost_55000=0, dup_23505=0,
             expires=0, reaps=0, reaped_rows=0, commits=0, rollbacks=0,
             view_checks=0, drains=0, delayed=0, made_due=0, group_calls=0,
             grouped_rows=0, group_busy=0, busy_claiming=0, busy_held=0,
             busy_create=0, busy_row=0, busy_nocreate=0, busy_limit=0, wait_toggles=0,
             late_creates=0, stats_checks=0,
             requeues=0, requeued_rows=0, cancels=0,
             cancelled_rows=0, cancel_55000=0, deduplicated=0,
             requeue_dedup_55000=0)
LAST = [None]                       # the machine of the last example run
RUN_START = [None]                  # when the random run started
FAILED = [False]                    # some example of the run failed
SHRINK_CUT = [False]                # shrinking was cut short by the budget
BUDGET = float(os.environ.get('MODEL_BUDGET', '90'))


def shrink_deadline():
    """Make hypothesis stop shrinking at the time budget rather than after
    its own five minutes: it checks ConjectureRunner.finish_shrinking_deadline
    (a time.perf_counter() value) after each test call (hypothesis 6.67, as
    in Debian bookworm; without that attribute, its default stands)."""
    runner = hengine.ConjectureRunner
    original = runner.test_function

    def test_function(self, data):
        if (getattr(self, 'finish_shrinking_deadline', None) is not None
                and RUN_START[0] is not None):
            ours = time.perf_counter() + BUDGET - (time.time() - RUN_START[0])
            if ours < self.finish_shrinking_deadline:
                self.finish_shrinking_deadline = ours
                SHRINK_CUT[0] = True
        return original(self, data)
    runner.test_function = test_function
QUEUE_SEQ = [0]


def connect():
    if CONNS:
        return
    for i in range(NSESS + 1):
        c = psycopg2.connect(dbname=os.environ.get('PGDATABASE', 'postgres'),
                             user=os.environ.get('PGUSER', 'postgres'),
                             application_name='dlsm-model-%s' % ('admin' if i == ADMIN else 'S%d' % i))
        c.autocommit = True
        with c.cursor() as cur:
            cur.execute("SET statement_timeout = '30s'")
            cur.execute("SET lock_timeout = '5s'")
            cur.execute("SET dlsm.default_lease = '1h'")
        CONNS.append(c)


def who_name(who):
    return 'A' if who == ADMIN else 'S%d' % who


def show_detail(d):
    if d is None:
        return 'NULL'
    if isinstance(d, str):
        return repr(d)
    return '/%s/' % d.pattern


class DlsmMachine(RuleBasedStateMachine):
    """Sessions 0..NSESS-1 and the admin against one fresh queue."""

    def __init__(self):
        super().__init__()
        connect()
        # past the time budget with no failure found: end the run here
        # (with a failure, shrinking ends at the budget: see shrink_deadline)
        if (RUN_START[0] is not None and time.time() - RUN_START[0] > BUDGET
                and not FAILED[0]):
            raise BudgetSpent()
        self.m = Model()
        self.pids = []
        QUEUE_SEQ[0] += 1
        self.q = 'mq_%d' % QUEUE_SEQ[0]
        self.max_fence = 0
        self.last_id = 0
        self.transcript = []
        self.broken = False
        self.nsteps = 0
        LAST[0] = self
        STATS['examples'] += 1
        with CONNS[ADMIN].cursor() as cur:
            cur.execute("SELECT dlsm_create_queue(%s, max_attempts => %s)",
                        (self.q, MAX_ATTEMPTS))
            for g, n in GROUP_LIMIT.items():
                cur.execute("SELECT dlsm_set_limit(%s, %s, concurrency => %s)",
                            (self.q, g, n))
        self.log(ADMIN, "SELECT dlsm_create_queue('q', max_attempts => %d)" % MAX_ATTEMPTS)
        for g, n in GROUP_LIMIT.items():
            self.log(ADMIN, "SELECT dlsm_set_limit('q', '%s', concurrency => %d)" % (g, n))

    # ------------------------------------------------------------ plumbing

    def log(self, who, text, result=None):
        line = '%s: %s' % (who_name(who), text.replace(self.q, 'q'))
        if result is not None:
            line += '  -> %s' % (result,)
        self.transcript.append(line)

    def sql(self, who, query, args=None, log=True):
        with CONNS[who].cursor() as cur:
            try:
                cur.execute(query, args)
            except psycopg2.Error as e:
                if log:
                    self.log(who, cur.query.decode() if cur.query else query,
                             'ERROR %s %s' % (e.pgcode, (e.pgerror or '').strip().split('\n')[0]))
                raise
            res = cur.fetchall() if cur.description else cur.rowcount
            if log:
                self.log(who, cur.query.decode(), res)
            return res

    def sql_error(self, who, query, args, code):
        """Run a statement that must fail with SQLSTATE code, inside a
        savepoint when the session is in a transaction."""
        in_tx = who != ADMIN and self.m.tx[who] is not None
        if in_tx:
            self.sql(who, 'SAVEPOINT model_expect_error', log=False)
        try:
            res = self.sql(who, query, args)
        except psycopg2.Error as e:
            if e.pgcode != code:
                raise Disagreement('%s: expected SQLSTATE %s, got %s: %s'
                                   % (who_name(who), code, e.pgcode, e.pgerror))
            return e
        else:
            raise Disagreement('%s: expected SQLSTATE %s, got the result %r'
                               % (who_name(who), code, res))
        finally:
            if in_tx:
                self.sql(who, 'ROLLBACK TO SAVEPOINT model_expect_error', log=False)
                self.sql(who, 'RELEASE SAVEPOINT model_expect_error', log=False)

    def fail(self, msg, s=None):
        v = self.m.visible(s)
        raise Disagreement('%s\n  model view of %s: %s' % (
            msg, 'committed' if s is None or s == ADMIN else who_name(s),
            sorted(v.values(), key=lambda r: r.id)))

    def step(self):
        self.nsteps += 1
        STATS['steps'] += 1

    # ------------------------------------------------------------- actions

    def act_begin(self, s):
        if self.m.tx[s] is None:
            self.sql(s, 'BEGIN')
            self.m.tx[s] = Tx()

    def act_commit(self, s):
        self.sql(s, 'COMMIT')
        self.m.committed.update(self.m.tx[s].overlay)
        self.m.tx[s] = None
        STATS['commits'] += 1

    def act_rollback(self, s):
        self.sql(s, 'ROLLBACK')
        self.m.tx[s] = None
        STATS['rollbacks'] += 1

    # run_at of an enqueue: default, NULL, in the past, an hour ahead
    RUN_AT_SQL = {None: '', 'null': ', run_at => NULL',
              'past': ", run_at => clock_timestamp() - interval '1 minute'",
              'later': ", run_at => clock_timestamp() + interval '1 hour'"}

    def act_enqueue(self, s, entity, kind, run_at=None):
        m = self.m
        if (run_at == 'later' and kind == 'update' and not DELAYED_BEFORE_CREATE
                and RUN_START[0] is not None
                and entity not in m.creates(m.view(s))):
            run_at = None       # exploration knob
        q = ('SELECT dlsm_enqueue(%s, %s, %s' + self.RUN_AT_SQL[run_at]
             + ', group_key => ' + ("'%s'" % GROUP_OF[entity] if GROUP_OF[entity] else 'NULL')
             + ')')
        if (kind == 'update' and not UPDATE_BEFORE_CREATE and RUN_START[0] is not None
                and entity not in m.creates(m.view(s))):
            kind = 'create'     # exploration knob: creates come first
        if kind == 'create':
            other = any(r.kind == 'create' and r.entity == entity
                        for i, t in enumerate(m.tx) if t is not None and i != s
                        for r in t.overlay.values())
            if other:
                # another open transaction inserted or changed the entity's
                # create: a second create would wait for it in the unique
                # index: enqueue an update instead
                kind = 'update'
            elif entity in m.creates(m.view(s)):
                self.sql_error(s, q, (self.q, entity, kind), '23505')
                STATS['dup_23505'] += 1
                return
        (rid,), = self.sql(s, q, (self.q, entity, kind))
        if rid <= self.last_id:
            raise Disagreement('enqueue returned id %d, not above the last id %d'
                               % (rid, self.last_id))
        self.last_id = rid
        m.write(s, Row(rid, kind, entity, due=run_at != 'later'))
        STATS['delayed'] += run_at == 'later'
        return rid

    def act_enqueue_keyed(self, s, entity, kind, key):
        """dlsm_enqueue with dedup key `key` (scenarios: no other open
        transaction holds the key): the newest live (new or in-progress)
        request of the key in s's view is returned and nothing is added;
        otherwise a row holding the key."""
        m = self.m
        live = [r.id for r in m.view(s).values()
                if r.key == key and r.status in ('new', 'in-progress')]
        (rid, dedup), = self.sql(s, 'SELECT dlsm_enqueue(%s, %s, %s, dedup_key => %s),'
                                 ' dlsm_enqueue_deduplicated()', (self.q, entity, kind, key))
        if live:
            if not dedup or rid != max(live):
                self.fail('%s: dlsm_enqueue(dedup_key => %s) returned %d (deduplicated: %s), '
                          'the contract says request %d holds the key'
                          % (who_name(s), key, rid, dedup, max(live)), s)
            STATS['deduplicated'] += 1
            return rid
        if dedup or rid <= self.last_id:
            self.fail('%s: dlsm_enqueue(dedup_key => %s) returned %d (deduplicated: %s), '
                      'the contract says a new request (no live one holds the key)'
                      % (who_name(s), key, rid, dedup), s)
        self.last_id = rid
        row = Row(rid, kind, entity)
        row.key = key
        m.write(s, row)
        return rid

    def act_claim(self, s, units, leased):
        m = self.m
        if not leased:
            self.act_begin(s)
        expected = m.expected_claim(s, units)
        maybe = m.maybe_failing(s)
        alternative = m.expected_claim(s, units, maybe) if maybe else expected
        v = m.view(s)
        rows = self.sql(
            s, 'SELECT id, kind, entity, process_id::text, fence FROM dlsm_claim(%s'
            + (", lease => '1 hour'" if leased else '') + ', units => %s)', (self.q, units))
        STATS['claims'] += 1
        byunit = {}
        for rid, kind, entity, pid, fence in rows:
            byunit.setdefault(pid, []).append((rid, kind, entity, fence))
        got = sorted(tuple(sorted(r[0] for r in u)) for u in byunit.values())
        want = sorted(tuple(u) for u in expected)
        if got != want and got == sorted(tuple(u) for u in alternative):
            expected, want = alternative, got
        if got != want:
            self.fail('%s: dlsm_claim(units => %d%s) returned units %s, the contract '
                      'says %s' % (who_name(s), units, ', leased' if leased else '',
                                   got or 'none', want or 'none'), s)
        fences = []
        for pid, unit in byunit.items():
            if pid in self.pids:
                raise Disagreement('claim reused process id %s' % pid)
            ufences = {r[3] for r in unit}
            if len(ufences) != 1:
                raise Disagreement('unit %s has fences %s' % (pid, sorted(ufences)))
            fence = ufences.pop()
            if fence is None or fence <= self.max_fence:
                raise Disagreement('fence %s of unit %s not above the last fence %d'
                                   % (fence, pid, self.max_fence))
            fences.append(fence)
            for rid, kind, entity, _ in unit:
                if (kind, entity) != (v[rid].kind, v[rid].entity):
                    raise Disagreement('claimed row %d is %s/%s, the model has %s/%s'
                                       % (rid, kind, entity, v[rid].kind, v[rid].entity))
        if len(set(fences)) != len(fences):
            raise Disagreement('units of one claim share a fence: %s' % fences)
        for pid, unit in sorted(byunit.items(), key=lambda kv: min(r[0] for r in kv[1])):
            self.pids.append(pid)
            for rid, _, entity, fence in unit:
                r = v[rid].copy()
                r.status, r.pid, r.fence = 'in-progress', pid, fence
                r.attempts += 1
                r.expired, r.detail = False, None
                m.write(s, r, claim=True)
                if not leased:
                    m.tx[s].locks.add(entity)
            g = GROUP_OF[unit[0][2]]
            if not leased and g in GROUP_LIMIT:
                m.tx[s].slots[g] = m.tx[s].slots.get(g, 0) + 1
                m.tx[s].unit_slots[pid] = g
            STATS['units'] += 1
            STATS['groups'] += len(unit) > 1
        STATS['claimed_rows'] += len(rows)
        if m.tx[s] is not None:
            m.tx[s].may_fail |= {r.id for r in v.values()
                                 if r.status == 'new' and m.doomed(v, r)}
        self.max_fence = max([self.max_fence] + fences)
        return rows

    def apply_settle(self, s, rows, outcome, detail, later=False):
        t = self.m.tx[s] if s != ADMIN else None
        if t is not None and rows and rows[0].pid in t.unit_slots:
            # a unit settled by the transaction that claimed it: its slot
            # is free at once
            t.slots[t.unit_slots.pop(rows[0].pid)] -= 1
        for r in rows:
            n = r.copy()
            n.due = not later
            if outcome in TERMINAL:
                n.status, n.detail = outcome, detail
            elif n.attempts >= MAX_ATTEMPTS:
                n.status = 'error'
                n.detail = 'retries exhausted after %d attempts: %s' % (n.attempts, detail or '')
            else:
                n.status, n.detail = 'new', detail
            self.m.write(s, n)

    @staticmethod
    def settle_args(outcome, later=False):
        if outcome != 'retry':
            return 'NULL'
        return "'1 hour'" if later else "'0'"

    def act_settle(self, s, pid, outcome, detail, later=False, savepoint=None):
        """dlsm_settle; later: a retry an hour ahead (not due); savepoint
        (in a transaction): the settle runs in a savepoint, then released
        (the settle is the transaction's, as without one: its group's slot
        is free to the transaction's next claim) or rolled back to (the
        unit is in progress again, its slot held)."""
        rows = self.m.held(self.m.view(s), pid)
        creates = self.m.creates(self.m.view(s))
        if (later and not DELAYED_BEFORE_CREATE and RUN_START[0] is not None and
                any(r.kind == 'update' and (r.entity not in creates or
                                            creates[r.entity].status != 'complete')
                    for r in rows)):
            later = False       # exploration knob
        q = ('SELECT dlsm_settle(%s, %s::uuid, %s, %s, ' + self.settle_args(outcome, later)
             + '::interval)')
        args = (self.q, pid, outcome, detail)
        STATS['settles'] += 1
        if not rows:
            self.sql_error(s, q, args, '55000')
            STATS['lost_55000'] += 1
            return
        if savepoint is not None:
            self.sql(s, 'SAVEPOINT model_settle')
            STATS['settles_in_savepoint'] += 1
        (n,), = self.sql(s, q, args)
        if n != len(rows):
            self.fail('%s: dlsm_settle(%s, %s) settled %d rows, the contract says %d %s'
                      % (who_name(s), pid, outcome, n, len(rows), rows), s)
        if savepoint == 'rollback':
            self.sql(s, 'ROLLBACK TO SAVEPOINT model_settle')
            self.sql(s, 'RELEASE SAVEPOINT model_settle')
            return
        if savepoint == 'release':
            self.sql(s, 'RELEASE SAVEPOINT model_settle')
        self.apply_settle(s, rows, outcome, detail, later)

    def act_settle_many(self, s, pids, outcome):
        v = self.m.view(s)
        want = [(p, len(self.m.held(v, p))) for p in pids]
        got = self.sql(s, 'SELECT process_id::text, settled FROM dlsm_settle_many(%s, %s::uuid[], %s, NULL, '
                       + self.settle_args(outcome) + '::interval)', (self.q, list(pids), outcome))
        STATS['settle_many'] += 1
        if [(p, int(n)) for p, n in got] != want:
            self.fail('%s: dlsm_settle_many(%s) returned %s, the contract says %s'
                      % (who_name(s), outcome, got, want), s)
        seen = set()
        for p in pids:
            if p not in seen:
                seen.add(p)
                self.apply_settle(s, self.m.held(v, p), outcome, None)

    def act_heartbeat(self, s, pid):
        rows = self.m.held(self.m.view(s), pid)
        q = "SELECT dlsm_heartbeat(%s, %s::uuid, '1 hour')"
        STATS['heartbeats'] += 1
        if not rows:
            self.sql_error(s, q, (self.q, pid), '55000')
            STATS['lost_55000'] += 1
            return
        (until,), = self.sql(s, q, (self.q, pid))
        if until is None:
            raise Disagreement('dlsm_heartbeat returned NULL')
        for r in rows:
            n = r.copy()
            n.expired = False
            self.m.write(s, n)

    def act_expire(self, pid):
        rows = self.m.held(self.m.committed, pid)
        n = self.sql(ADMIN, "UPDATE " + self.q + " SET lease_until = clock_timestamp()"
                     " - interval '1 minute' WHERE process_id = %s AND status = 'in-progress'",
                     (pid,))
        if n != len(rows):
            self.fail('expiring %s touched %d rows, the model has %d in progress'
                      % (pid, n, len(rows)))
        for r in rows:
            r = r.copy()
            r.expired = True
            self.m.committed[r.id] = r
        STATS['expires'] += 1

    def act_reap(self):
        m = self.m
        units = {}
        for r in m.committed.values():
            if r.status == 'in-progress':
                units.setdefault(r.pid, []).append(r)
        moved = []
        for pid, rows in units.items():
            if all(r.expired for r in rows) and not any(m.holders(r.id) for r in rows):
                moved += rows
        (n,), = self.sql(ADMIN, 'SELECT dlsm_reap(%s)', (self.q,))
        STATS['reaps'] += 1
        if n != len(moved):
            self.fail('dlsm_reap moved %d rows, the contract says %d: %s'
                      % (n, len(moved), sorted(moved, key=lambda r: r.id)))
        for r in moved:
            r = r.copy()
            pat = r'lease of process %s expired at .+' % re.escape(r.pid)
            if r.attempts >= MAX_ATTEMPTS:
                r.status = 'error'
            else:
                r.status = 'new'
                pat += r' after %d attempt%s' % (r.attempts, '' if r.attempts == 1 else 's')
            r.detail = re.compile('^' + pat + '$')
            m.committed[r.id] = r
        STATS['reaped_rows'] += n

    def delayed(self):
        """Committed requests not yet due that the admin may make due
        without waiting for a lock."""
        m = self.m
        maybe = m.maybe_failing(None)
        return sorted(r.id for r in m.committed.values()
                      if r.status == 'new' and not r.due and not m.holders(r.id)
                      and r.id not in maybe)

    def act_make_due(self, ids):
        """The admin sets run_at of committed delayed requests into the
        past: they come due (no real sleeping)."""
        n = self.sql(ADMIN, 'UPDATE ' + self.q + " SET run_at = clock_timestamp()"
                     " - interval '1 minute' WHERE id = ANY (%s) AND status = 'new'",
                     (list(ids),))
        if n != len(ids):
            self.fail('making %s due touched %d rows, the model has them new' % (ids, n))
        for rid in ids:
            r = self.m.committed[rid].copy()
            r.due = True
            self.m.committed[rid] = r
        STATS['made_due'] += len(ids)

    def act_set_wait_create(self, on):
        """The admin turns updates_wait_for_create on or off (between
        transactions: a change applies to the statements that follow)."""
        self.sql(ADMIN, 'SELECT dlsm_alter_queue(%s, updates_wait_for_create => %s)',
                 (self.q, on))
        self.m.wait_create = on
        STATS['wait_toggles'] += 1

    def act_group(self, s, entity, pid, begin=True):
        """dlsm_group_updates(entity, pid) by s, in a transaction (begun
        when begin) or on its own."""
        m = self.m
        if begin:
            self.act_begin(s)
        why, ids = m.expected_group(s, entity, pid)
        q = 'SELECT dlsm_group_updates(%s, %s, %s::uuid)'
        args = (self.q, entity, pid)
        STATS['group_calls'] += 1
        if why is not None:
            e = self.sql_error(s, q, args, '55P03')
            msg = e.diag.message_primary or ''
            detail = e.diag.message_detail or ''
            want = {'claiming': 'Another transaction is claiming',
                    'held': 'in progress under another process id',
                    'create': 'create request of this entity is not complete',
                    'limit': 'Group "%s" of the entity is at its limit.' % GROUP_OF[entity],
                    'nocreate': 'create request of this entity has not been enqueued'}
            if why == 'row':
                ok = msg.startswith('could not obtain lock on row')
            else:
                ok = msg == 'entity "%s" of queue "%s" is busy' % (entity, self.q) \
                    and want[why] in detail
            if not ok:
                self.fail('%s: dlsm_group_updates(%s, %s) raised 55P03 %r (%r), the '
                          'contract says busy: %s' % (who_name(s), entity, pid, msg,
                                                      detail, why), s)
            STATS['group_busy'] += 1
            STATS['busy_' + why] += 1
            return
        (n,), = self.sql(s, q, args)
        if n != len(ids):
            self.fail('%s: dlsm_group_updates(%s, %s) moved %d rows, the contract says '
                      '%d: %s' % (who_name(s), entity, pid, n, len(ids), ids), s)
        t = m.tx[s]
        g = GROUP_OF[entity]
        if (t is not None and ids and g in GROUP_LIMIT
                and not any(r.status == 'in-progress' and r.pid == pid
                            for r in m.view(s).values() if r.entity == entity)):
            t.slots[g] = t.slots.get(g, 0) + 1      # a new unit of its group
            t.unit_slots[pid] = g
        if t is not None:
            t.pending.clear()           # its claims were written first
            t.locks.add(entity)
        if not ids:
            return
        fences = self.sql(s, 'SELECT DISTINCT fence FROM ' + self.q + ' WHERE id = ANY (%s)',
                          (ids,), log=False)
        if len(fences) != 1 or fences[0][0] is None or fences[0][0] <= self.max_fence:
            raise Disagreement('dlsm_group_updates gave fences %s, not one above the '
                               'last fence %d' % (fences, self.max_fence))
        fence = fences[0][0]
        self.max_fence = fence
        v = m.view(s)
        for rid in ids:
            r = v[rid].copy()
            if r.status == 'new':
                r.attempts += 1
            r.status, r.pid, r.fence = 'in-progress', pid, fence
            r.expired, r.detail = False, None
            m.write(s, r)
        if pid not in self.pids:
            self.pids.append(pid)
        STATS['grouped_rows'] += n

    # -------------------------------------------------------- dead letters

    def role(self, s):
        if not hasattr(self, '_roles'):
            self._roles = {}
        if s not in self._roles:
            (self._roles[s],), = self.sql(s, 'SELECT current_user::text', log=False)
        return self._roles[s]

    def dead_choices(self, s):
        """Ids session s may name in a requeue or cancel without waiting
        for another open transaction's row lock."""
        m = self.m
        v = m.view(s)
        maybe = m.maybe_failing(s)
        # nor the create of an entity whose updates a claim not committed
        # may have settled error (its own too): requeued, the create would
        # make those updates wait again in the model while they stay error
        failing = frozenset().union(*[t.may_fail for t in m.tx if t is not None])
        held = {v[i].entity for i in failing if i in v}
        return sorted(i for i in v if not m.holders(i, but=s) and i not in maybe
                      and not (v[i].kind == 'create' and v[i].entity in held))

    def db_status(self, s, ids):
        return dict(self.sql(s, 'SELECT id, status FROM ' + self.q + ' WHERE id = ANY (%s)',
                             (list(ids),), log=False))

    def old_detail(self, v, r, db_error):
        """The detail row r has in the table: an update the DB settled error
        with its failed create has the README's detail."""
        if db_error and r.status == 'new':
            c = self.m.creates(v)[r.entity]
            return 'create request %d of entity "%s" ended in error' % (c.id, r.entity)
        return r.detail

    def act_requeue(self, s, ids):
        m = self.m
        v = m.view(s)
        db = self.db_status(s, ids)
        moved = []
        for i in sorted(set(ids)):
            r = v.get(i)
            if r is None:
                continue
            if r.status == 'error' or (r.status == 'new' and m.doomed(v, r)
                                       and db.get(i) == 'error'):
                moved.append(r)
        # one live request per dedup key: a requeued row whose key a live
        # request holds, or two requeued rows of one key, fail the call
        # with 55000, and nothing is requeued
        keys = [r.key for r in moved if r.key is not None]
        held = {r.key for r in v.values() if r.key is not None
                and r.status in ('new', 'in-progress') and r not in moved}
        if len(set(keys)) < len(keys) or held.intersection(keys):
            self.sql_error(s, 'SELECT dlsm_requeue(%s, %s::bigint[])',
                           (self.q, list(ids)), '55000')
            STATS['requeue_dedup_55000'] += 1
            return
        (n,), = self.sql(s, 'SELECT dlsm_requeue(%s, %s::bigint[])', (self.q, list(ids)))
        STATS['requeues'] += 1
        if n != len(moved):
            self.fail('%s: dlsm_requeue(%s) moved %d rows, the contract says %d: %s'
                      % (who_name(s), ids, n, len(moved), moved), s)
        for r in moved:
            old = self.old_detail(v, r, db.get(r.id) == 'error')
            head = 'requeued by role "%s" after %d attempt%s' % (
                self.role(s), r.attempts, '' if r.attempts == 1 else 's')
            n_ = r.copy()
            n_.status, n_.pid, n_.fence, n_.attempts = 'new', None, None, 0
            n_.expired, n_.due = False, True
            if old is None:
                n_.detail = head
            elif isinstance(old, str):
                n_.detail = head + ': ' + old
            else:
                n_.detail = re.compile('^' + re.escape(head + ': ') + old.pattern.lstrip('^'))
            m.write(s, n_)
        STATS['requeued_rows'] += n

    def act_cancel(self, s, ids):
        m = self.m
        v = m.view(s)
        db = self.db_status(s, ids)
        q = 'SELECT dlsm_cancel(%s, %s::bigint[])'
        STATS['cancels'] += 1
        rows = [v[i] for i in sorted(set(ids)) if i in v]
        if any(r.status == 'in-progress' for r in rows):
            e = self.sql_error(s, q, (self.q, list(ids)), '55000')
            first = min(r.id for r in rows if r.status == 'in-progress')
            want = 'cannot cancel request %d of queue "%s"' % (first, self.q)
            if e.diag.message_primary != want:
                self.fail('%s: dlsm_cancel(%s) raised %r, the contract says %r'
                          % (who_name(s), ids, e.diag.message_primary, want), s)
            STATS['cancel_55000'] += 1
            return
        moved = [r for r in rows if r.status == 'new' and db.get(r.id) == 'new']
        (n,), = self.sql(s, q, (self.q, list(ids)))
        if n != len(moved):
            self.fail('%s: dlsm_cancel(%s) moved %d rows, the contract says %d: %s'
                      % (who_name(s), ids, n, len(moved), moved), s)
        for r in moved:
            n_ = r.copy()
            n_.status = 'error'
            n_.detail = 'cancelled by role "%s"' % self.role(s)
            m.write(s, n_)
        STATS['cancelled_rows'] += n

    # -------------------------------------------------------------- checks

    def read(self, who):
        return self.sql(who, 'SELECT id, status, kind, entity, process_id::text, fence, '
                        'attempts, detail, run_at <= clock_timestamp() FROM ' + self.q
                        + ' ORDER BY id', log=False)

    def compare(self, s, actual):
        """The rows session s (or the admin: committed) sees against the model."""
        m = self.m
        v = m.visible(s)
        label = 'committed rows' if s == ADMIN else 'rows %s sees' % who_name(s)
        creates = m.creates(v)
        if [a[0] for a in actual] != sorted(v):
            self.fail('%s: ids %s, the model has %s' % (label, [a[0] for a in actual],
                                                        sorted(v)), s)
        inprog = {}
        for rid, status, kind, entity, pid, fence, attempts, detail, due in actual:
            r = v[rid]
            if status == 'in-progress':
                inprog.setdefault(entity, set()).add(pid)
            if (kind, entity, pid, fence, attempts) != (r.kind, r.entity, r.pid, r.fence, r.attempts):
                self.fail('%s: row %d is %s' % (label, rid, (kind, entity, pid, fence, attempts))
                          + ', the model has %s' % ((r.kind, r.entity, r.pid, r.fence, r.attempts),), s)
            if r.status == 'new' and status == 'error' and m.doomed(v, r, creates):
                want = 'create request %d of entity "%s" ended in error' % (
                    creates[entity].id, entity)
                if detail != want:
                    self.fail('%s: row %d failed with its create has detail %r, '
                              'not %r' % (label, rid, detail, want), s)
                if s == ADMIN:          # settled error now, for good
                    r = r.copy()
                    r.status, r.detail = 'error', want
                    m.committed[rid] = r
                continue
            if status != r.status:
                self.fail('%s: row %d is %s, the contract says %s'
                          % (label, rid, status, r.status), s)
            if status == 'new' and due != r.due:
                self.fail('%s: row %d is %sdue, the contract says %sdue'
                          % (label, rid, '' if due else 'not ', '' if r.due else 'not '), s)
            ok = (detail == r.detail if not isinstance(r.detail, re.Pattern)
                  else detail is not None and r.detail.match(detail))
            if not ok:
                self.fail('%s: row %d has detail %r, the contract says %s'
                          % (label, rid, detail, show_detail(r.detail)), s)
        for entity, pids in inprog.items():
            if len(pids) > 1:
                self.fail('%s: entity %s is in progress in %d units at once: %s'
                          % (label, entity, len(pids), sorted(pids)), s)
        STATS['view_checks'] += 1

    def check_stats(self):
        (n,), = self.sql(ADMIN, 'SELECT waiting_for_create_to_arrive FROM dlsm_queue_stats'
                         ' WHERE queue = %s::regclass', (self.q,), log=False)
        want = self.m.waiting_for_create_to_arrive()
        if n != want:
            self.fail('dlsm_queue_stats: waiting_for_create_to_arrive is %d, the model '
                      'has %d' % (n, want))
        STATS['stats_checks'] += 1

    def check_all(self):
        self.compare(ADMIN, self.read(ADMIN))
        self.check_stats()
        for s in range(NSESS):
            if self.m.tx[s] is not None:
                self.compare(s, self.read(s))

    # ------------------------------------------------------------- the end

    def drain(self):
        """Roll back what is open, then expire, reap, claim and settle until
        nothing moves: every request must end terminal."""
        m = self.m
        for s in range(NSESS):
            if m.tx[s] is not None:
                self.act_rollback(s)
        self.check_all()
        for _ in range(200):
            if self.delayed():
                self.act_make_due(self.delayed())
            for pid in sorted({r.pid for r in m.committed.values() if r.status == 'in-progress'}):
                self.act_expire(pid)
            self.act_reap()
            self.drain_waiting_for_create()
            rows = self.act_claim(0, 100, leased=True)
            if rows:
                pids = sorted({r[3] for r in rows})
                self.act_settle_many(0, pids, 'complete')
            self.check_all()
            if not rows and not any(r.status == 'in-progress' for r in m.committed.values()):
                break
        left = [a for a in self.read(ADMIN) if a[1] not in TERMINAL]
        if left:
            raise Disagreement('left stuck after the drain (no claim hands them out): %s'
                               % [(a[0], a[2], a[3], a[1]) for a in left])
        bad = [r for r in m.committed.values()
               if r.status not in TERMINAL and not m.doomed(m.committed, r)]
        if bad:
            raise Disagreement('the model itself left requests open: %s' % bad)
        STATS['drains'] += 1

    def drain_waiting_for_create(self):
        """Updates waiting for a create that never came (the option on):
        by turns of the examples, the creates arrive late, or the option is
        turned off."""
        m = self.m
        creates = m.creates(m.committed)
        missing = sorted({r.entity for r in m.committed.values()
                          if r.kind == 'update' and r.status == 'new'
                          and r.entity not in creates})
        if not m.wait_create or not missing:
            return
        if STATS['examples'] % 2:
            for e in missing:
                self.act_enqueue(0, e, 'create')
                STATS['late_creates'] += 1
        else:
            self.act_set_wait_create(False)
        self.check_all()

    def teardown(self):
        try:
            if not self.broken:
                self.drain()
        except BaseException:
            FAILED[0] = True
            raise
        finally:
            for i, c in enumerate(CONNS):
                try:
                    if c.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                        with c.cursor() as cur:
                            cur.execute('ROLLBACK')
                except psycopg2.Error:
                    pass
            with CONNS[ADMIN].cursor() as cur:
                cur.execute('SELECT dlsm_drop_queue(%s, drop_table => true)', (self.q,))

    # ------------------------------------------------------ random choices

    def run_step(self, fn, *args):
        self.step()
        try:
            fn(*args)
            self.check_all()
        except BaseException:
            self.broken = True
            FAILED[0] = True
            raise

    def pid_choices(self, s):
        """Process ids session s may name without waiting for a lock: its
        live ones first, then any this example has seen."""
        m = self.m
        v = m.view(s)
        ok = [p for p in self.pids if not m.would_block(s, p)]
        live = [p for p in ok if m.held(v, p)]
        return live, ok

    def draw_pid(self, data, s):
        live, ok = self.pid_choices(s)
        kind = data.draw(st.sampled_from(('live', 'live', 'live', 'any', 'never')), label='which pid')
        if kind == 'live' and live:
            return data.draw(st.sampled_from(live), label='live pid')
        if kind != 'never' and ok:
            return data.draw(st.sampled_from(ok), label='pid')
        return str(uuid.UUID(int=data.draw(st.integers(1, 2**32), label='never claimed')))

    @rule(s=st.integers(0, NSESS - 1),
          items=st.lists(st.tuples(st.sampled_from(ENTITIES), st.sampled_from(KINDS),
                                   RUN_AT),
                         min_size=1, max_size=4))
    def enqueue(self, s, items):
        def go():
            for entity, kind, run_at in items:
                self.act_enqueue(s, entity, kind, run_at)
        self.run_step(go)

    @rule(s=st.integers(0, NSESS - 1), entity=st.sampled_from(ENTITIES),
          run_ats=st.lists(RUN_AT, min_size=2, max_size=3))
    def enqueue_updates(self, s, entity, run_ats):
        def go():
            for run_at in run_ats:
                self.act_enqueue(s, entity, 'update', run_at)
        self.run_step(go)

    @precondition(lambda self: self.delayed())
    @rule(data=st.data())
    def make_due(self, data):
        ids = data.draw(st.lists(st.sampled_from(self.delayed()), min_size=1,
                                 max_size=2, unique=True), label='ids')
        self.run_step(self.act_make_due, sorted(ids))

    @rule(data=st.data(), s=st.integers(0, NSESS - 1), entity=st.sampled_from(ENTITIES),
          begin=st.sampled_from((True, True, True, False)))
    def group_updates(self, data, s, entity, begin):
        m = self.m
        v = m.view(s)
        own = sorted({r.pid for r in v.values() if r.entity == entity
                      and r.status == 'in-progress'}, key=self.pids.index)
        # never the process id of another transaction's claim not yet
        # written: the README has a process id new for every claim, and
        # nobody else can know it (see AMBIGUITIES)
        unwritten = {t.overlay[i].pid for j, t in enumerate(m.tx)
                     if t is not None and j != s for i in t.pending}
        seen = [p for p in self.pids if p not in unwritten]
        kind = data.draw(st.sampled_from(('fresh', 'fresh', 'holder', 'holder', 'any')),
                         label='which pid')
        if kind == 'holder' and own:
            pid = data.draw(st.sampled_from(own), label='holder pid')
        elif kind == 'any' and seen:
            pid = data.draw(st.sampled_from(seen), label='pid')
        else:
            pid = str(uuid.UUID(int=data.draw(st.integers(1, 2**32), label='fresh pid')))
        self.run_step(self.act_group, s, entity, pid, begin)

    @precondition(lambda self: all(t is None for t in self.m.tx))
    @rule(on=st.booleans())
    def set_wait_create(self, on):
        self.run_step(self.act_set_wait_create, on)

    @rule(s=st.integers(0, NSESS - 1))
    def begin(self, s):
        self.run_step(self.act_begin, s)

    @rule(s=st.integers(0, NSESS - 1), units=st.sampled_from((1, 1, 1, 2, 3)))
    def claim_in_transaction(self, s, units):
        self.run_step(self.act_claim, s, units, False)

    @precondition(lambda self: any(t is None for t in self.m.tx))
    @rule(data=st.data(), units=st.sampled_from((1, 1, 2)))
    def claim_leased(self, data, units):
        s = data.draw(st.sampled_from([i for i in range(NSESS) if self.m.tx[i] is None]),
                      label='session')
        self.run_step(self.act_claim, s, units, True)

    @rule(data=st.data(), s=st.integers(0, NSESS - 1),
          outcome=st.sampled_from(('complete', 'complete', 'error', 'retry', 'retry',
                                   'retry later')),
          detail=st.sampled_from((None, 'why')),
          savepoint=st.sampled_from((None, None, None, 'release', 'rollback')))
    def settle(self, data, s, outcome, detail, savepoint):
        pid = self.draw_pid(data, s)
        later = outcome == 'retry later'
        if self.m.tx[s] is None:
            savepoint = None
        self.run_step(self.act_settle, s, pid, 'retry' if later else outcome, detail, later,
                      savepoint)

    @rule(data=st.data(), s=st.integers(0, NSESS - 1),
          outcome=st.sampled_from(('complete', 'error', 'retry')))
    def settle_many(self, data, s, outcome):
        n = data.draw(st.integers(1, 3), label='how many')
        pids = [self.draw_pid(data, s) for _ in range(n)]
        self.run_step(self.act_settle_many, s, pids, outcome)

    @rule(data=st.data(), s=st.integers(0, NSESS - 1))
    def heartbeat(self, data, s):
        pid = self.draw_pid(data, s)
        self.run_step(self.act_heartbeat, s, pid)

    @precondition(lambda self: any(t is not None for t in self.m.tx))
    @rule(data=st.data())
    def commit(self, data):
        s = data.draw(st.sampled_from([i for i in range(NSESS) if self.m.tx[i] is not None]),
                      label='session')
        self.run_step(self.act_commit, s)

    @precondition(lambda self: any(t is not None for t in self.m.tx))
    @rule(data=st.data())
    def rollback(self, data):
        s = data.draw(st.sampled_from([i for i in range(NSESS) if self.m.tx[i] is not None]),
                      label='session')
        self.run_step(self.act_rollback, s)

    def expirable(self):
        m = self.m
        return sorted({r.pid for r in m.committed.values()
                       if r.status == 'in-progress' and not r.expired
                       and not m.would_block(ADMIN, r.pid)}, key=self.pids.index)

    @precondition(lambda self: self.expirable())
    @rule(data=st.data())
    def expire_lease(self, data):
        pid = data.draw(st.sampled_from(self.expirable()), label='unit')
        self.run_step(self.act_expire, pid)

    @rule()
    def reap(self):
        self.run_step(self.act_reap)

    def draw_dead_ids(self, data, s, want):
        """1 to 3 ids for a requeue or cancel by s: mostly of rows whose
        status is want in s's view, any other row, or one the queue does
        not hold."""
        ok = self.dead_choices(s)
        v = self.m.view(s)
        liked = [i for i in ok if v[i].status in want]
        ids = []
        for _ in range(data.draw(st.integers(1, 3), label='how many')):
            kind = data.draw(st.sampled_from(('liked', 'liked', 'liked', 'any', 'none')),
                             label='which id')
            if kind == 'liked' and liked:
                ids.append(data.draw(st.sampled_from(liked), label='id'))
            elif kind != 'none' and ok:
                ids.append(data.draw(st.sampled_from(ok), label='id'))
            else:
                ids.append(self.last_id + 1000)
        return ids

    @rule(data=st.data(), s=st.integers(0, NSESS - 1))
    def requeue(self, data, s):
        ids = self.draw_dead_ids(data, s, ('error',))
        self.run_step(self.act_requeue, s, ids)

    @rule(data=st.data(), s=st.integers(0, NSESS - 1))
    def cancel(self, data, s):
        ids = self.draw_dead_ids(data, s, ('new',))
        self.run_step(self.act_cancel, s, ids)


# ------------------------------------------------------------- scenarios

def scenario_update_before_create(t):
    """defect (a): an update enqueued before its entity's create must not
    hold the create back."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(1, 1, leased=True)          # the create


def scenario_reclaim_in_transaction(t):
    """defect (b): a second claim in the same transaction must go on past
    an entity the transaction holds to the next ready request."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_claim(0, 1, leased=False)         # both updates, one unit
    t.act_enqueue(1, 'e0', 'create')
    t.act_enqueue(1, 'e1', 'create')
    t.act_claim(0, 1, leased=False)         # create e1


def scenario_busy_head(t):
    """defect (b) without a transaction: a request of an entity in progress
    at the head of the queue must not stop a claim from going on."""
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(0, 1, leased=True)          # create e0, in progress
    t.act_enqueue(0, 'e0', 'delete')
    t.act_enqueue(0, 'e1', 'create')
    t.act_claim(1, 1, leased=True)          # create e1


def scenario_failed_create_then_other(t):
    """the claim that settles a failed create's updates goes on to the
    entity's next request of another kind."""
    t.act_enqueue(0, 'e0', 'create')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'delete')
    t.act_claim(0, 1, leased=True)          # the create
    t.act_settle(0, t.pids[0], 'error', 'no quota')
    t.act_claim(0, 1, leased=True)          # the delete (the update: error)


def scenario_update_other_create(t):
    """an update, another kind, then the create of one entity: the create
    goes first (nothing waits forever)."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'delete')
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(0, 1, leased=True)          # the create
    t.act_settle(0, t.pids[0], 'complete', None)
    t.act_claim(0, 1, leased=True)          # the update
    t.act_settle(0, t.pids[1], 'complete', None)
    t.act_claim(0, 1, leased=True)          # the delete


def scenario_parked_create(t):
    """a claim that starts at the queue's floor, above an entity's updates
    waiting for their create (parked), still hands out the create after an
    earlier claim of it rolled back, past the entity's other requests."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_claim(2, 1, leased=True)          # the updates (no create yet)
    t.act_expire(t.pids[0])
    t.act_reap()                            # new again: the floor goes down
    t.act_enqueue(0, 'e0', 'delete')
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(0, 1, leased=False)         # the create; the floor parks e0
    t.act_rollback(0)
    t.act_reap()
    t.act_claim(0, 100, leased=True)        # the create again


def scenario_own_claim_in_group(t):
    """a transaction that holds an update of an entity (claimed, not yet
    written) does not claim it again in a group of the entity's older
    updates committed meanwhile."""
    t.act_begin(0)
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(1, 'e0', 'update')
    t.act_claim(2, 1, leased=False)         # the third update
    t.act_commit(0)
    t.act_claim(2, 1, leased=False)         # nothing: e0 is held


def scenario_article(t):
    """the article "Implementing a Distributed Lock State Machine": a
    create, then its updates as one unit, settled in the claiming
    transaction; another session meanwhile sees nothing of it."""
    t.act_enqueue(0, 'e0', 'create')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e1', 'create')
    t.act_claim(1, 1, leased=False)         # create e0
    t.act_claim(2, 1, leased=False)         # create e1 (e0 is held)
    t.act_settle(1, t.pids[0], 'complete', None)
    t.act_claim(1, 1, leased=False)         # the two updates, same transaction
    t.act_settle(1, t.pids[2], 'complete', None)
    t.act_commit(1)
    t.act_rollback(2)


def scenario_failed_create(t):
    """a create settled error: its updates are settled error, never handed out."""
    t.act_enqueue(0, 'e0', 'create')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_claim(1, 1, leased=True)
    t.act_settle(2, t.pids[0], 'error', 'no quota')
    t.act_claim(1, 1, leased=True)          # nothing


def scenario_lease_reap_late_settle(t):
    """a leased claim outlives its lease: reaped, claimed again, the late
    settle and heartbeat raise 55000; retries run out after 3 attempts."""
    t.act_enqueue(0, 'e0', 'delete')
    t.act_claim(0, 1, leased=True)
    t.act_heartbeat(1, t.pids[0])
    t.act_expire(t.pids[0])
    t.act_reap()
    t.act_claim(1, 1, leased=True)
    t.act_settle(0, t.pids[0], 'complete', None)
    t.act_heartbeat(0, t.pids[0])
    t.act_settle(1, t.pids[1], 'retry', None)
    t.act_claim(2, 1, leased=True)
    t.act_expire(t.pids[2])
    t.act_begin(0)
    t.act_heartbeat(0, t.pids[2])           # a live transaction holds it
    t.act_reap()                            # left alone
    t.act_rollback(0)
    t.act_reap()                            # third attempt: error


def scenario_settle_many(t):
    """dlsm_settle_many: counts per id in order, 0 for a lost one, twice
    for one given twice; uncommitted claims of others are lost to it."""
    for e in ('e0', 'e1', 'e3'):
        t.act_enqueue(0, e, 'create')
    t.act_claim(0, 2, leased=True)
    t.act_claim(1, 1, leased=False)
    t.act_settle_many(2, [t.pids[0], t.pids[2], t.pids[0]], 'retry')
    t.act_settle_many(1, [t.pids[1], t.pids[2]], 'complete')
    t.act_commit(1)


def scenario_group_limit(t):
    """group ga at most 2 units: a claim of three gets two and passes over
    the third; another session's claim gets nothing of ga but e3; a unit
    settled in its transaction frees its slot at once, a rollback too, a
    leased unit only when settled; dlsm_group_updates refuses ga while full."""
    for e in ('e0', 'e1', 'e2', 'e3'):
        t.act_enqueue(0, e, 'create')
    t.act_enqueue(0, 'e0', 'update')
    t.act_claim(0, 3, leased=False)             # e0, e1 (e2 passed over), e3
    t.act_claim(1, 3, leased=False)             # nothing
    t.act_settle(0, t.pids[0], 'complete', None)
    t.act_claim(1, 3, leased=False)             # e2: e0's slot is free
    t.act_rollback(1)
    t.act_claim(2, 1, leased=True)              # e2, leased
    t.act_group(1, 'e0', str(uuid.UUID(int=7))) # 55P03: ga is full
    t.act_commit(0)
    t.act_settle(2, t.pids[-1], 'complete', None)
    t.act_group(1, 'e0', str(uuid.UUID(int=7))) # the update
    t.act_commit(1)


def scenario_group_not_due(t):
    """issue 21 #7, the review's repro: dlsm_group_updates moves only the
    due update, not the one an hour ahead (it moved both)."""
    t.act_enqueue(0, 'e1', 'update')
    t.act_enqueue(0, 'e1', 'update', 'later')
    t.act_group(0, 'e1', str(uuid.uuid4()))     # BEGIN; ... -> 1


def scenario_delayed(t):
    """delayed requests: not claimable before their run_at; an older one
    holds its entity's later requests back (a create too, behind another
    kind); a claim's group stops at a delayed update."""
    t.act_enqueue(0, 'e0', 'update')
    a2 = t.act_enqueue(0, 'e0', 'update', 'later')
    a3 = t.act_enqueue(0, 'e0', 'update', 'past')
    a4 = t.act_enqueue(0, 'e1', 'delete', 'later')
    t.act_enqueue(0, 'e1', 'create', 'null')
    a6 = t.act_enqueue(0, 'e2', 'update', 'later')
    t.act_enqueue(0, 'e2', 'create')
    t.act_claim(1, 10, leased=True)         # e0's first update, e2's create
    t.act_settle(1, t.pids[0], 'complete', None)
    t.act_settle(1, t.pids[1], 'complete', None)
    t.act_claim(1, 10, leased=True)         # nothing: all behind delayed ones
    t.act_make_due([a2, a4])
    t.act_claim(1, 10, leased=True)         # e0's two updates, e1's delete
    t.act_settle(1, t.pids[2], 'retry', None, later=True)
    t.act_settle(1, t.pids[3], 'complete', None)
    t.act_claim(1, 10, leased=True)         # e1's create
    t.act_make_due([a2, a3, a6])
    t.act_claim(1, 10, leased=True)         # e0's updates again, e2's update


def scenario_group_pending(t):
    """dlsm_group_updates in a transaction holding a claim not yet
    written: it writes the claim first, so only the claim's process id may
    group the entity's later updates; other sessions meanwhile find the
    entity busy; a row locked elsewhere makes it busy too."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e1', 'delete')
    t.act_claim(0, 2, leased=False)         # e0's updates, e1's delete: pending
    t.act_enqueue(1, 'e0', 'update')
    later = t.act_enqueue(1, 'e0', 'update', 'later')
    t.act_enqueue(1, 'e0', 'update')
    t.act_group(0, 'e0', str(uuid.uuid4()))  # 55P03: held by the claim
    t.act_group(0, 'e0', t.pids[0])         # the claim's two and one more
    t.act_group(1, 'e0', t.pids[0])         # 55P03: being claimed
    t.act_rollback(1)
    t.act_claim(2, 1, leased=True)          # nothing
    t.act_commit(0)
    t.act_begin(2)
    t.act_heartbeat(2, t.pids[0])           # locks its rows
    t.act_group(1, 'e0', t.pids[0], begin=False)    # 55P03: a row is locked
    t.act_rollback(2)
    t.act_make_due([later])
    t.act_group(1, 'e0', t.pids[0], begin=False)    # all five, at once


def scenario_delayed_update_before_create(t):
    """an entity's oldest request is an update not yet due, enqueued
    before its create, with a request of another kind in between: the
    create goes first, as when that update is due (it waited an hour)."""
    t.act_enqueue(0, 'e0', 'update', 'later')
    t.act_enqueue(0, 'e0', 'delete')
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(1, 1, leased=True)          # the create


def scenario_wait_for_late_create(t):
    """updates_wait_for_create: updates of an entity with no create wait,
    and hold its other requests back; dlsm_group_updates is busy; the late
    create goes first, then the updates as one unit, then the rest."""
    t.act_set_wait_create(True)
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'delete')
    t.act_enqueue(0, 'e1', 'create')
    t.act_claim(1, 10, leased=True)         # e1's create only
    t.act_group(2, 'e0', str(uuid.uuid4()))     # 55P03: no create
    t.act_rollback(2)
    t.act_begin(0)
    t.act_enqueue(0, 'e0', 'create')
    t.act_claim(1, 10, leased=True)         # nothing: not committed
    t.act_commit(0)
    t.act_claim(1, 10, leased=True)         # e0's create
    t.act_settle(1, t.pids[-1], 'complete', None)
    t.act_claim(1, 10, leased=True)         # e0's two updates


def scenario_wait_turned_off(t):
    """updates_wait_for_create turned off with updates waiting (passed
    over by the queue's floor): they are handed out at once; turned on
    again, a new entity's update waits."""
    t.act_set_wait_create(True)
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e1', 'delete')
    t.act_claim(1, 10, leased=True)         # e1's delete
    t.act_claim(1, 10, leased=True)         # nothing
    t.act_set_wait_create(False)
    t.act_claim(1, 10, leased=True)         # e0's update
    t.act_set_wait_create(True)
    t.act_enqueue(0, 'e2', 'update')
    t.act_claim(1, 10, leased=True)         # nothing


def scenario_parked_older_commits(t):
    """an entity parked by the queue's floor (its update waits for a
    create to come) waits from that update up: an older request of it,
    whose insert commits after the parking, is handed out at once (the
    random run's counterexample, shortened)."""
    t.act_claim(0, 1, leased=True)          # nothing; the floor exists
    t.act_set_wait_create(True)
    t.act_begin(2)
    t.act_enqueue(2, 'e2', 'delete')
    t.act_enqueue(0, 'e2', 'update')
    t.act_claim(0, 1, leased=True)          # nothing: parks e2
    t.act_claim(0, 1, leased=True)
    t.act_commit(2)
    t.act_claim(0, 100, leased=True)        # the delete
def claimed_ids(rows, want):
    """The ids a claim of a scenario returned must be want."""
    got = sorted(r[0] for r in rows)
    if got != want:
        raise Disagreement('the scenario claimed %s, it expects %s' % (got, want))


def scenario_requeue_failed_create(t):
    """a failed create and its failed updates requeued: the create goes
    first, the updates wait for it and come as one unit; requeued alone,
    the updates fail again."""
    t.act_enqueue(0, 'e0', 'update')
    t.act_enqueue(0, 'e0', 'create')
    t.act_enqueue(0, 'e0', 'update')
    claimed_ids(t.act_claim(1, 1, leased=True), [2])    # the create first
    t.act_settle(2, t.pids[0], 'error', 'no quota')
    claimed_ids(t.act_claim(1, 1, leased=True), [])     # the updates fail
    t.check_all()
    t.act_requeue(2, [1, 3])                # the updates alone
    claimed_ids(t.act_claim(1, 1, leased=True), [])     # they fail again
    t.check_all()
    t.act_requeue(2, [3, 2, 1, 99])
    claimed_ids(t.act_claim(1, 2, leased=True), [2])    # the create only
    claimed_ids(t.act_claim(0, 1, leased=True), [])     # the updates wait
    t.act_settle(2, t.pids[-1], 'complete', None)
    rows = t.act_claim(0, 2, leased=True)
    claimed_ids(rows, [1, 3])               # both updates...
    if len({r[3] for r in rows}) != 1:
        raise Disagreement('the requeued updates came as %s, not one unit' % rows)


def scenario_requeue_dedup_key(t):
    """dedup keys through a requeue (issue 32 #5): a failed request whose
    key a newer request holds (new, then in progress) is not requeued
    (55000); two failed requests of one key are not requeued together; one
    requeued alone holds the key again, and an enqueue of the key gets it."""
    r1 = t.act_enqueue_keyed(0, 'e0', 'delete', 'K')
    claimed_ids(t.act_claim(1, 1, leased=True), [r1])
    t.act_settle(1, t.pids[-1], 'error', 'boom')
    r2 = t.act_enqueue_keyed(0, 'e1', 'delete', 'K')
    t.act_requeue(2, [r1])                  # 55000: r2 holds K
    t.check_all()
    if t.act_enqueue_keyed(0, 'e2', 'delete', 'K') != r2:
        raise Disagreement('K is not held by request %d' % r2)
    claimed_ids(t.act_claim(1, 1, leased=True), [r2])
    t.act_requeue(2, [r1])                  # 55000: r2 in progress
    t.act_settle(1, t.pids[-1], 'error', 'boom again')
    t.act_requeue(2, [r2, r1])              # 55000: both hold K
    t.check_all()
    if STATS['requeue_dedup_55000'] < 3:
        raise Disagreement('the requeues of a held key were not refused')
    t.act_requeue(2, [r1])                  # requeued: nobody holds K
    if t.act_enqueue_keyed(0, 'e3', 'delete', 'K') != r1:
        raise Disagreement('the requeued request %d does not hold K' % r1)
    claimed_ids(t.act_claim(1, 2, leased=True), [r1])


def scenario_cancel(t):
    """cancel: new requests to error, never handed out; one in progress
    (this transaction's own claim, unwritten, included) refused with 55000."""
    t.act_enqueue(0, 'e0', 'create')
    t.act_enqueue(0, 'e1', 'create')
    t.act_enqueue(0, 'e3', 'create')        # e3: in no group
    claimed_ids(t.act_claim(1, 1, False), [1])          # in a transaction
    t.act_cancel(1, [1, 2])                 # 55000: its own claim
    t.act_cancel(2, [2, 99])
    claimed_ids(t.act_claim(1, 2, False), [3])          # e1 cancelled
    t.act_commit(1)
    t.act_cancel(0, [3])                    # 55000: in progress
    if STATS['cancel_55000'] < 2:
        raise Disagreement('the cancels of requests in progress were not refused')
    t.act_requeue(0, [2])
    claimed_ids(t.act_claim(0, 1, leased=True), [2])    # e1 again


def scenario_in_flight_rolled_back(t):
    """a claim in flight is passed over by another's walk, which moves the
    floor above it; rolled back, its row is the next claimed, before the
    newer ones (e0 to e2 are in group ga, at most 2 at once; e3 in none)."""
    for e in ('e0', 'e1', 'e2', 'e3'):
        t.act_enqueue(0, e, 'create')
    claimed_ids(t.act_claim(1, 1, False), [1])          # in flight
    claimed_ids(t.act_claim(0, 1, leased=True), [2])    # passes over 1
    t.act_rollback(1)
    claimed_ids(t.act_claim(0, 1, leased=True), [1])    # 1 before 3 and 4
    claimed_ids(t.act_claim(0, 1, leased=True), [4])    # ga is full


SCENARIOS = [
    ('an update enqueued before its create does not hold the create back',
     scenario_update_before_create),
    ('a second claim in one transaction passes over the entity it holds',
     scenario_reclaim_in_transaction),
    ('a claim passes over a busy entity at the head of the queue and goes on',
     scenario_busy_head),
    ("a claim failing a failed create's updates goes on to the entity's next request",
     scenario_failed_create_then_other),
    ('update, other kind, create of one entity: the create goes first, nothing waits forever',
     scenario_update_other_create),
    ("a claim from the queue's floor hands out a parked entity's create",
     scenario_parked_create),
    ("a transaction's own claim of an entity keeps its older updates back",
     scenario_own_claim_in_group),
    ("the article's create then grouped updates, transactional",
     scenario_article),
    ('a failed create settles its updates error', scenario_failed_create),
    ('lease expiry, reaping, late settle and heartbeat (55000), retries spent',
     scenario_lease_reap_late_settle),
    ('dlsm_settle_many counts, lost ids and uncommitted claims',
     scenario_settle_many),
    ('a group at its limit: passed over, slots freed by a settle in the transaction, a rollback, a late settle; dlsm_group_updates refused',
     scenario_group_limit),
    ('dlsm_group_updates moves the due update, not the one an hour ahead (issue 21 #7)',
     scenario_group_not_due),
    ('delayed requests wait, hold their entity back, end a group',
     scenario_delayed),
    ('a failed create requeued with its updates goes first; the updates wait for it',
     scenario_requeue_failed_create),
    ('cancel: never handed out; in progress (an unwritten claim too) refused',
     scenario_cancel),
    ('a requeue keeps one live request per dedup key (55000 when the key is held)',
     scenario_requeue_dedup_key),
    ("dlsm_group_updates writes the transaction's own claims first; busy entity, locked row",
     scenario_group_pending),
    ('a delayed update enqueued before its create, then another kind: the create goes first',
     scenario_delayed_update_before_create),
    ('updates_wait_for_create: updates wait for a late create, which goes first',
     scenario_wait_for_late_create),
    ('updates_wait_for_create turned off: waiting updates are handed out at once',
     scenario_wait_turned_off),
    ("an older request of a parked entity, committed after the parking, goes at once",
     scenario_parked_older_commits),
    ('a claim in flight is passed over; rolled back, its row is claimed next',
     scenario_in_flight_rolled_back),
]


def run_scenario(fn):
    t = DlsmMachine()
    try:
        fn(t)
        t.check_all()
    except BaseException:
        t.broken = True
        raise
    finally:
        t.teardown()


# ------------------------------------------------------------------ main

def tap_comment(text):
    for line in str(text).rstrip('\n').split('\n'):
        print('# ' + line)


def print_failure(exc, reports=()):
    tap_comment('%s: %s' % (type(exc).__name__, exc))
    reports = [r for r in reports if 'more than five minutes' not in r]
    if reports:
        tap_comment('hypothesis:')
        for r in reports:
            tap_comment('  ' + r.replace('\n', '\n  '))
    machine = LAST[0]
    if machine is not None:
        tap_comment('SQL transcript of that run (S0..S2 sessions, A the superuser; queue renamed q):')
        for line in machine.transcript:
            tap_comment('  ' + line)
    for note in getattr(exc, '__notes__', []):
        tap_comment(note)
    if not isinstance(exc, Disagreement):
        tap_comment(''.join(traceback.format_exception(type(exc), exc, exc.__traceback__)))


def main():
    examples = int(os.environ.get('MODEL_EXAMPLES', '400'))
    steps = int(os.environ.get('MODEL_STEPS', '50'))
    seed = os.environ.get('MODEL_SEED', '')
    scenarios = SCENARIOS if os.environ.get('MODEL_SCENARIOS', '1') != '0' else []
    connect()
    print('1..%d' % (len(scenarios) + 1))
    failed = 0
    n = 0
    for name, fn in scenarios:
        n += 1
        LAST[0] = None
        try:
            run_scenario(fn)
            print('ok %d - scenario: %s' % (n, name))
        except Exception as e:
            failed += 1
            print('not ok %d - scenario: %s' % (n, name))
            print_failure(e)
    n += 1
    before = dict(STATS)
    reports = []
    kw = dict(max_examples=examples, stateful_step_count=steps, deadline=None,
              database=None, suppress_health_check=list(HealthCheck),
              print_blob=False, report_multiple_bugs=False)
    if not seed:
        kw['derandomize'] = True
    sets = settings(**kw)

    if seed and seed != 'random':
        hypothesis.core.global_force_seed = int(seed)
    name = 'random interleavings of %d sessions agree with the model' % NSESS
    RUN_START[0] = time.time()
    try:
        shrink_deadline()
        try:
            with with_reporter(reports.append):
                run_state_machine_as_test(DlsmMachine, settings=sets)
        except BudgetSpent:
            pass
        print('ok %d - %s' % (n, name))
    except Exception as e:     # hypothesis re-raises the shrunk failure
        failed += 1
        print('not ok %d - %s' % (n, name))
        print_failure(e, reports)
    ran = {k: STATS[k] - before[k] for k in STATS}
    print('model: %d steps in %d examples (at most %d of up to %d steps, shrinking '
          'included), %.0f s: '
          '%d claims (%d rows, %d units, %d grouped), %d settles (%d in a savepoint), %d settle_many, '
          '%d heartbeats, %d lost-claim 55000s, %d duplicate-create 23505s, %d expiries, '
          '%d reaps (%d rows), %d delayed enqueues, %d made due, %d dlsm_group_updates '
          '(%d rows; 55P03: %d being claimed, %d held, %d create not complete, %d row '
          'locked, %d create not enqueued, %d group at its limit), %d requeues (%d rows), %d cancels (%d rows, %d in progress: 55000), %d commits, %d rollbacks, %d view comparisons, '
          '%d updates_wait_for_create changes, %d late creates in drains, '
          '%d dlsm_queue_stats checks, %d drains to terminal'
          % (ran['steps'], ran['examples'], examples, steps, time.time() - RUN_START[0],
             ran['claims'], ran['claimed_rows'], ran['units'], ran['groups'], ran['settles'],
             ran['settles_in_savepoint'], ran['settle_many'], ran['heartbeats'], ran['lost_55000'], ran['dup_23505'],
             ran['expires'], ran['reaps'], ran['reaped_rows'], ran['delayed'],
             ran['made_due'], ran['group_calls'], ran['grouped_rows'], ran['busy_claiming'],
             ran['busy_held'], ran['busy_create'], ran['busy_row'], ran['busy_nocreate'], ran['busy_limit'],
             ran['requeues'], ran['requeued_rows'], ran['cancels'], ran['cancelled_rows'],
             ran['cancel_55000'], ran['commits'], ran['rollbacks'], ran['view_checks'], ran['wait_toggles'],
             ran['late_creates'], ran['stats_checks'], ran['drains']))
    print('model: checked after every step: the ids and units each claim returns '
          '(FIFO, busy entities, updates waiting for their create, failed creates, '
          'delayed requests, grouping, groups at their concurrency limit), the rows '
          'each session in a transaction sees '
          'and the committed rows (status, process id, fence, attempts, detail, due), '
          'settle and settle_many counts, dlsm_group_updates counts and 55P03s, '
          '55000 for lost claims, 23505 for a second create, reaped rows, '
          'waiting_for_create_to_arrive of dlsm_queue_stats, '
          'requeued and cancelled rows and the 55000 of a cancel in progress, '
          'one unit per entity, fences rising, a fresh process id per unit; after '
          'every example: every request terminal once drained')
    if time.time() - RUN_START[0] > BUDGET:
        print('model: the time budget (MODEL_BUDGET=%g s) ended the random run early%s'
              % (BUDGET, ', while shrinking: the counterexample may not be minimal'
                 if SHRINK_CUT[0] else ''))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
