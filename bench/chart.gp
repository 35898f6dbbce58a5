# bench/chart.gp: requests per second against clients, a line per system.
# gnuplot -e "dir='bench/out'" bench/chart.gp
set terminal pngcairo size 1100,650 font "sans,10"
set output dir.'/throughput.png'
set title "dlsm benchmark: requests settled per second (median of the rounds)"
set xlabel "clients"
set ylabel "requests per second (log scale)"
set logscale y
set logscale x 2
set xtics (1, 4, 8, 16)
set grid ytics mytics xtics
set key outside right top
file = dir.'/chart.dat'
ncols = int(system("head -1 ".file." | wc -w"))
plot for [i=2:ncols] file using 1:i with linespoints lw 2 pt 7 title columnheader(i)
