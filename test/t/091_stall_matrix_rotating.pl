# Copyright (c) 2026, dlsm developers
#
# The stall matrix (048_stall_matrix.pl) with a worker that visits: one
# worker (dlsm.max_workers = 1) takes turns between postgres and a second
# database, so that each cell meets a worker that makes one pass and exits,
# and the next visit must still leave a shunned queue alone.
use strict;
use warnings;

# loaded here, at compile time: their INIT blocks set up the test run
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

$ENV{DLSM_STALL_ROTATING} = 1;
my $matrix = "$ENV{TESTDIR}/test/t/048_stall_matrix.pl";
do $matrix;
die "$matrix: $@" if $@;
