# Copyright (c) 2026, dlsm developers
#
# The identity matrix (044_identity_matrix.pl) with a worker that visits:
# one worker (dlsm.max_workers = 1) takes turns between the matrix's
# database and another, so that the worker's and the handlers' cells are
# a visiting worker's, each visit a new process.
use strict;
use warnings;

# loaded here, at compile time: their INIT blocks set up the test run
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

$ENV{DLSM_IDM_ROTATING} = 1;
my $matrix = "$ENV{TESTDIR}/test/t/044_identity_matrix.pl";
do $matrix;
die "$matrix: $@" if $@;
