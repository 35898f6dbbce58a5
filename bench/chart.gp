# bench/chart.gp: requests per second against clients, a line per system.
# gnuplot -e "dir='bench/out'" bench/chart.gp
set terminal pngcairo size 1100,650 font "sans,10" noenhanced
set output dir.'/throughput.png'
set title "dlsm benchmark: requests settled per second (median of the rounds)"
set xlabel "clients"
set ylabel "requests per second (log scale)"
set logscale y
set logscale x 2
set xtics (1, 4, 8, 16)
set xrange [0.9:18]
set grid ytics mytics xtics
set key outside right top
file = dir.'/chart.dat'
# ten distinct colours
# the budgets, in the colours of dlsm_tx and dlsm_batch
goal_colours = "#d62728 #2ca02c"
colours = "#000000 #1f77b4 #aec7e8 #d62728 #ff9896 #ff7f0e #2ca02c #9467bd #8c564b #e377c2"
ncols = int(system("head -1 ".file." | wc -w"))
# the last columns, named goal:..., are budgets: drawn dashed
ngoals = int(system("head -1 ".file." | tr ' ' '\\n' | grep -c '^goal:'"))
last = ncols - ngoals
plot for [i=2:last] file using 1:i with linespoints lw 2 pt 7 \
	lc rgb word(colours, (i - 2) % 10 + 1) \
	title columnheader(i), \
	for [i=last+1:ncols] file using 1:i with linespoints lw 2 dt 2 pt 0 \
	lc rgb word(goal_colours, (i - last - 1) % 2 + 1) \
	title columnheader(i)
