#!/usr/bin/env python3
"""bench/summary.py OUT SECONDS ROUNDS RUN_SECONDS: the benchmark's tables.

Reads OUT/results.csv, OUT/latency.csv and OUT/coalesce.csv written by
bench/run.sh; prints Markdown tables of medians (min-max) and ratios, and
the lines of DESIGN.md section 10 with the figures that decide them; writes
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
}
SCALE = ['dlsm_tx', 'dlsm_1m', 'dlsm_blocked', 'dlsm_rr']

rows = list(csv.DictReader(open(os.path.join(out, 'results.csv'))))
clients = sorted({int(r['clients']) for r in rows})
systems = [s for s in LABELS if any(r['system'] == s for r in rows)]


def values(system, c, col='per_second'):
    return [float(r[col]) for r in rows
            if r['system'] == system and int(r['clients']) == c
            and r[col] not in ('', '-')]


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

lat = list(csv.DictReader(open(os.path.join(out, 'latency.csv'))))
print('\n## Latency (one enqueue every 20 ms)\n')
print('| measure | samples | median ms | p99 ms | max ms |')
print('|---|---|---|---|---|')
latency = {}
for m in sorted({r['measure'] for r in lat}):
    v = sorted(float(r['ms']) for r in lat if r['measure'] == m)
    p99 = v[min(len(v) - 1, int(len(v) * 0.99))]
    latency[m] = statistics.median(v)
    print('| %s | %d | %.2f | %.2f | %.2f |' % (m, len(v), statistics.median(v), p99, v[-1]))

co = list(csv.DictReader(open(os.path.join(out, 'coalesce.csv'))))
print('\n## Coalescing: 1,000 pending updates of one entity\n')
print('| repetitions | rows claimed | units | rows settled | claim ms (median) | settle ms (median) |')
print('|---|---|---|---|---|---|')
print('| %d | %s | %s | %s | %.1f | %.1f |' % (
    len(co), '/'.join(sorted({r['claimed'] for r in co})),
    '/'.join(sorted({r['units'] for r in co})),
    '/'.join(sorted({r['settled'] for r in co})),
    statistics.median(float(r['claim_ms']) for r in co),
    statistics.median(float(r['settle_ms']) for r in co)))

print('\n## DESIGN.md section 10 in this run (%d clients)\n' % c8)


def line(ok, text):
    print('- %s %s' % ('met:' if ok else '**missed:**', text))


tx, ph, hw = med('dlsm_tx', c8), med('physical', c8), med('handwritten', c8)
if tx and ph:
    line(tx >= 0.6 * ph, 'claim + settle reaches %s of the one-row UPDATE (budget 60%%)'
         % pct(tx, ph))
if tx and hw:
    line(tx >= hw, 'claim + settle is %s of the article\'s hand-written SQL (budget 100%%)'
         % pct(tx, hw))
m1 = med('dlsm_1m', c8)
if tx and m1:
    line(tx / m1 <= 1.2, 'with 1,000,000 settled rows a claim + settle takes %.2fx the time of '
         'the empty queue (budget 1.2x)' % (tx / m1))
bt, gb = med('dlsm_batch', c8), med('graphile_batch', c8)
if bt and gb:
    line(bt > gb, 'batched dlsm is %s of graphile-worker\'s batched mode (budget: beat it)'
         % pct(bt, gb))
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

with open(os.path.join(out, 'chart.dat'), 'w') as f:
    shown = [s for s in systems if s not in SCALE[1:]]
    f.write('clients ' + ' '.join(shown) + '\n')
    for c in clients:
        f.write('%d %s\n' % (c, ' '.join('%.0f' % (med(s, c) or 0) for s in shown)))
