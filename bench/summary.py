#!/usr/bin/env python3
"""bench/summary.py OUT SECONDS ROUNDS RUN_SECONDS: the benchmark's tables.

Reads OUT/results.csv, OUT/latency.csv and OUT/coalesce.csv written by
bench/run.sh; prints Markdown tables of medians (min-max) and ratios, and
the performance goals (README) with the figures that decide them; writes
OUT/chart.dat for bench/chart.gp.
"""
import csv
import os
import statistics
import sys

out, took, rounds, run_seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

LABELS = {
    'physical': 'one-row UPDATE by primary key (physical reference)',
    'handwritten': "article's SQL: claim + settle, one transaction",
    'handwritten_updates': "article's SQL, update-heavy: claim, create check, grouping, settle",
    'dlsm_tx': 'dlsm claim + settle, one transaction',
    'dlsm_leased': 'dlsm leased: claim committed, then settle',
    'dlsm_updates': 'dlsm, update-heavy (same workload)',
    'dlsm_batch': 'dlsm batched: units => 100 + dlsm_settle_many',
    'pgboss': 'pg-boss 12: fetch one + complete',
    'graphile': 'graphile-worker 0.18: run(), defaults',
    'graphile_batch': 'graphile-worker batched: local queue 500, batched completion',
    'dlsm_1m': 'scale: dlsm claim + settle, 1,000,000 settled rows',
    'dlsm_blocked': 'scale: 1,000 updates blocked behind an in-progress create',
    'dlsm_rr': 'scale: a REPEATABLE READ transaction open all run',
    'handwritten_rr': "scale: article's SQL, a REPEATABLE READ transaction open all run",
}
SCALE = ['dlsm_tx', 'dlsm_1m', 'dlsm_blocked', 'dlsm_rr']

rows = list(csv.DictReader(open(os.path.join(out, 'results.csv'))))
clients = sorted({int(r['clients']) for r in rows})
systems = [s for s in LABELS if any(r['system'] == s for r in rows)]


PEERS = ('pgboss', 'graphile', 'graphile_batch')


def values(system, c, col='per_second'):
    # a peer run that failed (peers.log says why) counts 0: left out
    return [float(r[col]) for r in rows
            if r['system'] == system and int(r['clients']) == c
            and r[col] not in ('', '-')
            and not (system in PEERS and float(r['per_second']) == 0)]


def med(system, c, col='per_second'):
    v = values(system, c, col)
    return statistics.median(v) if v else None


def num(x):
    return '–' if x is None else format(int(round(x)), ',')


def pct(a, b):
    return '–' if not a or not b else '%.0f%%' % (100 * a / b)


print('# dlsm benchmark\n')
print('%s rounds of %s s per system and client count, systems alternating; '
      'the whole run took %d min %d s. Requests (jobs) settled per second, '
      'median (min–max), and the ratio to the one-row UPDATE at the same '
      'client count.\n' % (rounds, run_seconds, took // 60, took % 60))
print('| system | ' + ' | '.join('%d client%s' % (c, '' if c == 1 else 's')
                                  for c in clients) + ' |')
print('|---|' + '---|' * len(clients))
for s in systems:
    cells = []
    for c in clients:
        v = values(s, c)
        if not v:
            cells.append('–')
            continue
        cells.append('%s (%s–%s) %s' % (num(statistics.median(v)), num(min(v)),
                                        num(max(v)),
                                        pct(statistics.median(v), med('physical', c))))
    print('| %s | %s |' % (LABELS[s], ' | '.join(cells)))

c8 = 8 if 8 in clients else clients[-1]
print('\n## Ratios at %d clients\n' % c8)
print('| ratio | value |')
print('|---|---|')
for a, b in [('dlsm_tx', 'physical'), ('dlsm_tx', 'handwritten'),
             ('dlsm_tx', 'pgboss'), ('dlsm_tx', 'graphile'),
             ('dlsm_leased', 'physical'), ('dlsm_updates', 'handwritten_updates'),
             ('dlsm_batch', 'physical'), ('dlsm_batch', 'graphile_batch')]:
    print('| %s / %s | %s |' % (a, b, pct(med(a, c8), med(b, c8))))

print('\n## Scale (claim + settle, one transaction)\n')
print('| case | clients | per second | vs empty queue | p99 ms | dead tuples after the run |')
print('|---|---|---|---|---|---|')
for c in clients:
    for s in SCALE:
        if not values(s, c):
            continue
        print('| %s | %d | %s | %s | %.1f | %s |' % (
            LABELS[s], c, num(med(s, c)), pct(med(s, c), med('dlsm_tx', c)),
            med(s, c, 'p99_ms') or 0, num(med(s, c, 'dead_tuples'))))

def read(name):
    """The rows of OUT/name; none when the run left it out (BENCH_SYSTEMS)."""
    path = os.path.join(out, name)
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


lat = read('latency.csv')
if lat:
    print('\n## Latency (one enqueue every 20 ms)\n')
    print('| measure | samples | median ms | p99 ms | max ms |')
    print('|---|---|---|---|---|')
latency = {}
for m in sorted({r['measure'] for r in lat}):
    v = sorted(float(r['ms']) for r in lat if r['measure'] == m)
    p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
    latency[m] = statistics.median(v)
    print('| %s | %d | %.2f | %.2f | %.2f |' % (m, len(v), statistics.median(v), p99, v[-1]))

co = read('coalesce.csv')
if co:
    print('\n## Coalescing: 1,000 pending updates of one entity\n')
    print('| repetitions | rows claimed | units | rows settled | claim ms (median) | settle ms (median) |')
    print('|---|---|---|---|---|---|')
    print('| %d | %s | %s | %s | %.1f | %.1f |' % (
        len(co), '/'.join(sorted({r['claimed'] for r in co})),
        '/'.join(sorted({r['units'] for r in co})),
        '/'.join(sorted({r['settled'] for r in co})),
        statistics.median(float(r['claim_ms']) for r in co),
        statistics.median(float(r['settle_ms']) for r in co)))

print('\n## The performance goals in this run (%d clients)\n' % c8)


def line(ok, text):
    print('- %s %s' % ('met:' if ok else '**missed:**', text))


tx, ph, hw = med('dlsm_tx', c8), med('physical', c8), med('handwritten', c8)
if tx and ph:
    line(tx >= 0.6 * ph, 'claim + settle reaches %s of the one-row UPDATE (budget 60%%)'
         % pct(tx, ph))
if tx and hw:
    line(tx >= 1.2 * hw, 'claim + settle is %s of the article\'s hand-written SQL (budget 120%%)'
         % pct(tx, hw))
ls = med('dlsm_leased', c8)
if ls and ph:
    line(ls >= 0.45 * ph, 'leased claim then settle reaches %s of the one-row UPDATE (budget 45%%)'
         % pct(ls, ph))
m1 = med('dlsm_1m', c8)
if tx and m1:
    line(m1 >= 0.9 * tx, 'with 1,000,000 settled rows claim + settle keeps %s of the empty '
         'queue\'s rate (budget 90%%)' % pct(m1, tx))
bl = med('dlsm_blocked', c8)
if tx and bl:
    line(bl >= 0.9 * tx, 'with 1,000 updates blocked behind an in-progress create claim + settle '
         'keeps %s of the empty queue\'s rate (budget 90%%)' % pct(bl, tx))
rr, hrr = med('dlsm_rr', c8), med('handwritten_rr', c8)
if tx and rr:
    hw_kept = hrr / hw if hrr and hw else None
    line(rr >= 0.8 * tx and (hw_kept is None or rr / tx > hw_kept),
         'with a REPEATABLE READ transaction open claim + settle keeps %s of the empty queue\'s '
         'rate (budget 80%%, and more than the hand-written SQL keeps: %s)'
         % (pct(rr, tx), pct(hrr, hw)))
for c in clients:
    bt, gb = med('dlsm_batch', c), med('graphile_batch', c)
    if bt and gb:
        line(bt >= 1.3 * gb, 'at %d client%s batched dlsm is %s of graphile-worker\'s batched '
             'mode (budget 130%%)' % (c, '' if c == 1 else 's', pct(bt, gb)))
if co:
    line(all(r['claimed'] == '1000' and r['units'] == '1' and r['settled'] == '1000'
             for r in co), '1,000 pending updates of one entity are claimed as one unit '
         'and settled by one statement')
w = [m for m in latency if 'claim' in m]
if w:
    line(latency[w[0]] <= 5, 'a waiting dlsm_claim returns %.2f ms (median) after the '
         'enqueuing commit (budget 5 ms)' % latency[w[0]])
line(all(values(s, c8) and med(s, c8) > 0 for s in ('pgboss', 'graphile', 'handwritten')),
     'the peers ran in the same run')

# the chart: a line per system, and dashed, the budgets of the single-unit
# and the batched modes
GOALS = [('goal:dlsm_tx=60%_of_physical', 'physical', 0.6),
         ('goal:dlsm_batch=130%_of_graphile_batch', 'graphile_batch', 1.3)]
with open(os.path.join(out, 'chart.dat'), 'w') as f:
    shown = [s for s in systems if s not in SCALE[1:] and s != 'handwritten_rr']
    goals = [g for g in GOALS if g[1] in systems]
    f.write('clients ' + ' '.join(shown + [g[0] for g in goals]) + '\n')
    for c in clients:
        f.write('%d %s\n' % (c, ' '.join(['%.0f' % (med(s, c) or 0) for s in shown] +
                                          ['%.0f' % ((med(g[1], c) or 0) * g[2])
                                           for g in goals])))
