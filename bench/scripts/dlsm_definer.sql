SELECT bench_take_and_settle();
