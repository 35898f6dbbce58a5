# bench/growth.gp: each line of bench/growth.sh, its ratio (a bar) and its
# goal (a circle).  gnuplot -e "dir='bench/out'" bench/growth.gp
set terminal pngcairo size 1100,600 font "sans,10" noenhanced
set output dir.'/growth.png'
set title "dlsm as the work grows: each line's ratio (bars) and its goal (circles)"
set style fill solid 0.6 border -1
set boxwidth 0.6
set ylabel "ratio"
set yrange [0:1.4]
set xtics rotate by -30 left
set bmargin 14
set rmargin 34
set grid ytics
set key outside right top
plot dir.'/growth.dat' using 0:2:xtic(1) with boxes lc rgb "#1f77b4" title "measured", \
	'' using 0:3 with points pt 6 ps 2 lw 2 lc rgb "#d62728" title "goal"
