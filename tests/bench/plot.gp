# gnuplot: throughput against request size for every method in `randctl benchmark --csv`,
# with the keystream floor (AES-256-CTR where the CPU does AES, else ChaCha20) as a dashed line.
# Invoked as: gnuplot -e "csv='benchmark.csv'; png='benchmark.png'" plot.gp
set datafile separator ","
stats csv using ((strcol(1) eq "floor" && strstrt(strcol(2), " keystream") > 0) ? $5 : 1/0) \
      name "floor" nooutput
set terminal pngcairo size 1000,640 noenhanced font ",11"
set output png
set title "randctl benchmark: throughput by request size"
set xlabel "request size (bytes)"
set ylabel "MB/s"
set logscale xy
set xrange [24:1400000]
set xtics ("32 B" 32, "4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576)
set key outside right top
set grid
array methods[7] = ["randd", "in-process", "getrandom", "vDSO getrandom", "/dev/urandom", "RAND_bytes", \
                    "RAND_bytes+randd"]
plot for [i=1:7] csv using ((strcol(1) eq "throughput" && strcol(2) eq methods[i]) ? $3 : 1/0):5 \
         with linespoints lw 2 pt 7 title methods[i], \
     floor_max with lines dt 2 lc rgb "black" title "keystream floor"
