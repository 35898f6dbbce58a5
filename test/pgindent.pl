#!/usr/bin/perl
#
# test/pgindent.pl: format src/ as PostgreSQL's pgindent does, or check that
# it is so formatted.
#
#   perl test/pgindent.pl           rewrite the files of src/ that differ
#   perl test/pgindent.pl --check   list them, with their diff; exit 1
#
# It runs pg_bsd_indent (Debian's package pg-bsd-indent, version 2.1.1, the
# one PostgreSQL 15's pgindent asks for) with pgindent's options, and the
# steps pgindent takes around it: // comments made /* */, dash-protected
# block comments kept, run-together comments split by a tab, a single space
# before the * of a function's return type.  The typedefs are dlsm's own
# (src/typedefs.list) and PostgreSQL's, read from the installed server
# headers (pgindent's own list is the buildfarm's, which Debian does not
# ship): every name a typedef declares there, "bool" added.
use strict;
use warnings;
use File::Temp qw(tempfile);
use FindBin;

chdir("$FindBin::Bin/..") or die "cannot enter the tree: $!\n";
my $check = @ARGV && $ARGV[0] eq '--check';
my $src = 'src';
my $opts = '-bad -bap -bbb -bc -bl -cli1 -cp33 -cdb -nce -d0 -di12 -nfc1 '
  . '-i4 -l79 -lp -lpl -nip -npro -sac -tpg -ts4';

sub slurp
{
	my ($path) = @_;
	open(my $fh, '<', $path) or die "cannot read $path: $!\n";
	local $/;
	return <$fh>;
}

my $version = `pg_bsd_indent --version 2>&1` // '';
die "pg_bsd_indent 2.1.1 is needed (apt-get install pg-bsd-indent)\n"
  unless $version =~ /\b2\.1\.1\b/;

# PostgreSQL's typedefs, from the headers of the server it builds against
my $pg_config = $ENV{PG_CONFIG}
  // (-x '/usr/lib/postgresql/15/bin/pg_config'
	? '/usr/lib/postgresql/15/bin/pg_config' : 'pg_config');
chomp(my $includes = `$pg_config --includedir-server`);
die "cannot run $pg_config\n" if $? || !-d $includes;
my %typedefs = (bool => 1);
for my $h (split /\n/, `find $includes -name '*.h'`)
{
	my $text = slurp($h);
	$text =~ s{/\*.*?\*/}{ }gs;
	# typedef ... name;  typedef struct x { ... } name;  typedef r (*name)(...);
	while ($text =~ /\btypedef\b((?:[^;{}]|(\{(?:[^{}]++|(?2))*\}))*?);/g)
	{
		my $decl = $1;

		$decl =~ s/\{.*\}/ /s;	# a struct's members declare no type
		if ($decl =~ /\(\s*\*\s*(\w+)\s*\)\s*\(/) { $typedefs{$1} = 1; }
		elsif ($decl =~ /(\w+)\s*(?:\[[^\]]*\])?\s*$/) { $typedefs{$1} = 1; }
	}
}
$typedefs{$_} = 1 for grep { /\S/ } split /\n/, slurp("$src/typedefs.list");
my ($tfh, $tlist) = tempfile(UNLINK => 1);
print $tfh map { "$_\n" } sort keys %typedefs;
close($tfh);

my @differ;
for my $file (sort glob("$src/*.c $src/*.h"))
{
	my $orig = slurp($file);
	my $text = $orig;

	$text =~ s!^([ \t]*)//(.*)$!$1/* $2 */!gm;
	$text =~ s!/\* +---!/*---X_X!g;
	my ($fh, $in) = tempfile(UNLINK => 1);
	my (undef, $out) = tempfile(UNLINK => 1);
	print $fh $text;
	close($fh);
	my $err = `pg_bsd_indent $opts -U$tlist $in $out 2>&1`;
	die "pg_bsd_indent failed on $file: $err\n" if $? || $err ne '';
	$text = slurp($out);
	$text =~ s!/\*---X_X!/* ---!g;
	$text =~ s!\*/(/\*.*\*/)$!*/\t$1!gm;
	$text =~ s!^([A-Za-z_]\S*)[ \t]+\*$!$1 *!gm;
	next if $text eq $orig;

	push @differ, $file;
	if ($check)
	{
		my ($dfh, $formatted) = tempfile(UNLINK => 1);
		print $dfh $text;
		close($dfh);
		print `diff -u $file $formatted`;
	}
	else
	{
		open(my $out, '>', $file) or die "cannot write $file: $!\n";
		print $out $text;
		close($out);
	}
}
print "$_\n" for @differ;
exit($check && @differ ? 1 : 0);
