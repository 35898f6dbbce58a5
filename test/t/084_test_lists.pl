# Copyright (c) 2026, dlsm developers
#
# test/README.md's lists of the isolation specs and the TAP files are what
# test/doc_lists.pl generates from each file's header comment: a test
# added, removed or re-described without running the script fails here.
# No server: plain Perl.
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec;
use Test::More;

my $top = $ENV{TESTDIR} // dirname(dirname(dirname(File::Spec->rel2abs($0))));
my $out = `perl "$top/test/doc_lists.pl" --check 2>&1`;
my $rc = $? >> 8;
is($rc, 0, 'test/doc_lists.pl --check passes') or diag $out;
like($out, qr/^ok 3 - /m, 'test/README.md holds the generated lists');
unlike($out, qr/^not ok/m, 'no check of test/doc_lists.pl fails');

done_testing();
