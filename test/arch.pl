#!/usr/bin/perl
# Copyright (c) 2026, dlsm developers
#
# test/arch.pl: the shape of src/ that the next engineer relies on, as TAP
# lines.  Every include of a dlsm header goes down the layers listed in
# src/dlsm.c; only its owner touches a part of the shared state; no
# function runs past 100 lines; every .c opens with what it owns and what it
# calls (its "Calls" sentence names every module whose function it calls,
# and none it neither calls nor includes; src/dlsm.c's table of the
# layers is the one checked here); no
# statement parameter or result column is indexed by a bare number; no
# comment sends the reader to a document outside the repository; a
# module's private header (NAME_internals.h) is included only by the
# module's own files;
# includes keep PostgreSQL's order (postgres.h first, each block sorted);
# src/typedefs.list (what pgindent reads) lists exactly the typedefs of
# src/; no two files define a function of the same name (static ones
# included: a backtrace or a profile names them without their file);
# all SQL text is in querytext.c (no string literal elsewhere begins a
# statement) and only plans.c prepares or runs it with SPI;
# every message is whole for its translator: no INT64_FORMAT in a message
# (%lld with a (long long) cast), no format or %s argument chosen by a
# ternary of string literals, no verb put in by %s (nor a step's or an
# action's English name), no primary message (errmsg) with its cause
# after a colon (the cause is the errdetail), no errdetail_internal
# or errhint_internal with a %s whose text another piece of code wrote;
# a signal or timeout handler of src/ (a function given to pqsignal or
# RegisterTimeout; a timeout's runs in the SIGALRM handler) writes only
# volatile sig_atomic_t variables of its own and calls only SetLatch or
# kill (to signal its own process, as core's statement timeout does); no
# code of src/ writes core's interrupt flags (InterruptPending,
# QueryCancelPending, ProcDiePending: core's handlers set them and
# ProcessInterrupts clears them); no code of src/ fires triggers by hand
# (AfterTriggerFireDeferred: core fires them, before any pre-commit
# callback; pending.c writes at commit only what runs no user's code); no
# code of src/ asks whether a process lives with kill(pid, 0) (PIDs are
# reused: a process records its own slot and clears it at its exit,
# pool.c's "Liveness"); every
# SQL-callable function checks how it was called before it reads an
# argument (dlsm_extension_check_call, or begin_view for the views); every
# statement's text in querytext.c uses each parameter its layout in
# querytext.h declares and no other, and names its result columns as the
# layout does, in order (and that check fails on a broken statement).
use strict;
use warnings;

my $src = ($0 =~ m{(.*)/test/arch\.pl$} ? $1 : '.') . '/src';
# compat.h and usage.h are under every layer: compat.h's macros over PostgreSQL's own headers for
# its majors, which the base layer needs as much as the rest (floor.c
# names a backend's process number through it)
# the floor module (floor.c) and rate.c call nothing of
# dlsm: base, under the claims, wake.c and grouplimit.c that read and
# write them; pool.c calls names.c and is
# called by wake.c and queue.c (layer 2) as well as by the launcher and the
# workers: services; shmem.c calls every owner of shared state to size and
# create its part, as PostgreSQL's ipci.c does, and only dlsm.c calls it:
# top; querytext.c holds the text of every statement and calls nothing:
# base, under plans.c that prepares and runs them; duration.c turns
# intervals into microseconds for every layer and calls nothing: base;
# bgw.c describes every background worker dlsm starts (the launcher, a
# worker, a reaper, a relay) and calls nothing: base, under notify.c
my %layer = (
	compat => -1, cache => 0, usage => -1, guc => 0, subxact => 0, identity => 0,
	usercode => 0,
	extension => 0, names => 0, waits => 0, floor => 0, rate => 0,
	querytext => 0, duration => 0, bgw => 0,
	plans => 1, notify => 1, locks => 1, bound => 1, pool => 1,
	queue => 2, fence => 2, wake => 2, dedup => 2,
	pending => 3, grouplimit => 3, queuehandler => 3,
	claim => 4, state => 4, deadletter => 4, namedlock => 4, capture => 4,
	handler => 5, args => 5, capacity => 5,
	api => 6, views => 6, worker => 6, launcher => 6, relay => 6, hooks => 6, shmem => 6,
	dlsm => 7);
# the modules that own a part of the shared state (shmem.c creates them)
my %owner = map { $_ => 1 } qw(waits pool namedlock notify floor rate);
# who may call the floors' group functions (a group's key, park when full,
# parked?, a probe, freed, the clock): the floor module and
# grouplimit.c, which claims and settles ask
my %group_caller = map { $_ => 1 } qw(floor grouplimit);
# a module's private header, as PostgreSQL's predicate.c keeps its layout
# in predicate_internals.h: it counts as the module (its layer, its
# ownership, its calls)
my %part_of = (floor_internals => 'floor');

# The module of a file of src/.
sub module_of
{
	my ($file) = @_;
	(my $module = $file) =~ s/\.[ch]$//;
	return $part_of{$module} // $module;
}
my $n = 0;
my $failed = 0;

sub check
{
	my ($ok, $what, @why) = @_;
	$n++;
	print(($ok ? 'ok' : 'not ok') . " $n - $what\n");
	print "# $_\n" for @why;
	$failed++ unless $ok;
}

sub slurp
{
	my ($file) = @_;
	open my $fh, '<', $file or die "cannot read $file: $!";
	local $/;
	return <$fh>;
}

opendir my $dh, $src or die "cannot read $src: $!";
my @files = sort grep { /\.[ch]$/ } readdir $dh;
closedir $dh;
my @c = grep { /\.c$/ } @files;

my (@up, @unknown, @shared, @long, @headerless, @bare, @outside, @spliced);
my @internal;	# includes of a module's private header by another module
my @include_order;
my %typedef;
my %defined;	# function name -> files defining it
my %handler;	# signal or timeout handler -> the file that installs it
my %atomic;		# variables declared volatile sig_atomic_t
my %body;		# function name -> its body
my %private;	# typedef of a .c file -> that file
my %text;		# file -> its text
for my $file (@files)
{
	my $text = slurp("$src/$file");
	$text{$file} = $text;

	# a definition: the name at the start of a line, its body's { alone below
	push @{ $defined{$1} }, $file while $text =~ /^(\w+)\([^;]*?\)\n\{/mg;
	$body{$1} = $2 while $text =~ /^(\w+)\([^;]*?\)\n\{\n(.*?)^\}/msg;
	$handler{$1} = $file
	  while $text =~ /\b(?:pqsignal|RegisterTimeout)\(\s*\w+\s*,\s*(\w+)\s*\)/g;
	$atomic{$1} = 1 while $text =~ /\bvolatile\s+sig_atomic_t\s+(\w+)/g;

	# typedef struct|enum|union [tag] { ... } Name;  typedef ... (*Name)(...);
	# typedef other Name;
	$typedef{$1} = 1
	  while $text =~ /\btypedef\s+(?:struct|enum|union)\s*\w*\s*\{.*?\}\s*(\w+)\s*;/gs;
	$typedef{$1} = 1
	  while $text =~ /\btypedef\s+[^;{]*?\(\s*\*\s*(\w+)\s*\)\s*\([^;]*\);/g;
	$typedef{$1} = 1
	  while $text =~ /\btypedef\s+(?:(?:struct|enum|union)\s+)?[\w \t*]+?\b(\w+)\s*;/g;
	my $module = module_of($file);
	if (($file =~ /\.c$/ || $file =~ /_internals\.h$/) && $owner{$module})
	{
		$private{$1} = $module
		  while $text =~ /\btypedef\s+(?:struct|enum|union)\s*\w*\s*\{.*?\}\s*(Dlsm\w+)\s*;/gs;
	}
	if (!defined $layer{$module})
	{
		push @unknown, $file;
		next;
	}
	while ($text =~ /^#include "(\w+)\.h"/mg)
	{
		my $header = $1;

		push @internal, "$file includes $header.h"
		  if $header =~ /_internals$/ && module_of("$header.h") ne $module;
		next if $header eq $module || !defined $layer{$header};	# its own, PostgreSQL's
		push @up, "$file includes $header.h" if $layer{$header} >= $layer{$module};
	}
	# PostgreSQL's order: postgres.h first in a .c, then blocks of
	# includes (system, PostgreSQL's, dlsm's), each in alphabetical order
	push @include_order, "$file: postgres.h is not its first include"
	  if $file =~ /\.c$/ && $text !~ /\A(?:(?!#include).)*#include "postgres\.h"\n/s;
	while ($text =~ /((?:^#include [<"][^>"]+[>"]\n)+)/mg)
	{
		my @names = $1 =~ /^#include [<"]([^>"]+)[>"]/mg;
		next if "@names" eq 'postgres.h';
		push @include_order, "$file: " . join(' ', @names)
		  if join("\n", @names) ne join("\n", sort @names);
	}
	push @shared, $file
	  if !$owner{$module} && $text =~ /\bshared->/;
	push @bare, "$file: $1"
	  while $text =~ /(?<![.>])\b((?:values|nulls|args)\[\d+\])/g;
	push @outside, $file if $text =~ /DESIGN\.md|STYLE\.md|\.\.\/shared/;
	while ($text =~ /\b(err(?:msg|detail|hint|context)\w*)\s*(\((?:[^()"]++|"(?:[^"\\]|\\.)*"|(?2))*\))/g)
	{
		my ($call, $args) = ($1, $2);
		my $line = 1 + (substr($text, 0, $-[0]) =~ tr/\n//);

		push @spliced, "$file:$line: $call with INT64_FORMAT"
		  if $args =~ /\bINT64_FORMAT\b/;
		push @spliced, "$file:$line: $call with a ternary of string literals"
		  if $args =~ /\?\s*"(?:[^"\\]|\\.)*"\s*:\s*"/;
		push @spliced, "$file:$line: $call puts a verb in with %s"
		  if $args =~ /\b(?:cannot|could not|will not|to) %s\b/
		  || $args =~ /%s.*,\s*(?:\w+_)?(?:action|verb|step|activity)\s*[,)]/s
		  || ($call !~ /_internal$/ && $args =~ /step_name\s*\(/);
		push @spliced, "$file:$line: $call carries its cause after a colon (errdetail)"
		  if $call =~ /^errmsg(?:_plural)?$/
		  && join('', $args =~ /"((?:[^"\\]|\\.)*)"/g) =~ /: /;
		push @spliced, "$file:$line: $call shows text made elsewhere"
		  if $call =~ /^err(?:detail|hint)_internal$/ && $args =~ /^\(\s*"%s"/;
	}
	next unless $file =~ /\.c$/;
	push @headerless, $file
	  unless $text =~ m{\A/\*-+\n \*\n \* \Q$file\E\n}
	  && $text =~ m{\A/\*.*?^ \* Calls .*?IDENTIFICATION}ms;
	my @lines = split /\n/, $text;
	my ($start, $name);
	for my $i (0 .. $#lines)
	{
		if ($lines[$i] eq '{' && $i > 0)
		{
			($start, $name) = ($i, $lines[$i - 1]);
		}
		elsif ($lines[$i] eq '}' && defined $start)
		{
			push @long, "$file: $name (" . ($i - $start + 1) . " lines)"
			  if $i - $start + 1 > 100;
			undef $start;
		}
	}
}

# what a handler of ours writes and calls
my @unsafe;
for my $name (sort grep { defined $body{$_} } keys %handler)
{
	my $body = $body{$name} =~ s{/\*.*?\*/}{}gsr;
	while ($body =~ /^\s*(\w+)\s*(?:[-+|&]?=(?!=)|\+\+|--)/mg)
	{
		push @unsafe, "$handler{$name}: $name writes $1" unless $atomic{$1};
	}
	while ($body =~ /\b(\w+)\s*\(/g)
	{
		push @unsafe, "$handler{$name}: $name calls $1"
		  unless $1 eq 'SetLatch' || $1 eq 'kill';
	}
}

# core's interrupt flags, written anywhere in src/
my @core_flags;
for my $file (sort keys %text)
{
	my $code = $text{$file} =~ s{/\*.*?\*/}{}gsr;
	push @core_flags, "$file: writes $1"
	  while $code =~ /\b(InterruptPending|QueryCancelPending|ProcDiePending)\s*(?:[-+|&]?=(?!=)|\+\+|--)/g;
}
my @hand_fired;
for my $file (sort keys %text)
{
	my $code = $text{$file} =~ s{/\*.*?\*/}{}gsr;
	push @hand_fired, "$file: calls $1"
	  while $code =~ /\b(AfterTrigger\w+)\s*\(/g;
}
my @probed;
for my $file (sort keys %text)
{
	my $code = $text{$file} =~ s{/\*.*?\*/}{}gsr;
	push @probed, "$file: calls $1"
	  while $code =~ /\b(kill\s*\([^;]*?,\s*0\s*\))/g;
}

# each part of the shared state is touched only by its owner: the types
# an owner's .c file defines (its shared struct, its entries) appear in no
# other file; only an owner creates shared memory and keeps a pointer
# named shared; only shmem.c asks for shared memory and locks, and calls
# the owners' dlsm_<module>_shmem_size and _shmem_init; a call (not a
# definition, whose name starts its line) in a .c file
my @foreign;
for my $file (sort keys %text)
{
	my $module = module_of($file);
	my $code = $text{$file} =~ s{/\*.*?\*/}{}gsr;
	my $calls = $file =~ /\.c$/ ? $code : '';

	for my $type (sort grep { $private{$_} ne $module } keys %private)
	{
		push @foreign, "$file names $type ($private{$type}'s)"
		  if $text{$file} =~ /\b\Q$type\E\b/;
	}
	push @foreign, "$file touches shared state it does not own"
	  if !$owner{$module} && $module ne 'compat' && $code =~ /\bshared->|\bShmemInit(?:Struct|Hash)\b|\bDLSM_SHMEM_INIT_HASH\b/;
	push @foreign, "$file asks for shared memory or locks ($1)"
	  while $module ne 'shmem'
	  && $code =~ /\b(RequestAddinShmemSpace|RequestNamedLWLockTranche|GetNamedLWLockTranche|shmem_(?:request|startup)_hook)\b/g;
	push @foreign, "$file calls $1"
	  while $module ne 'shmem'
	  && $calls =~ /[^\n]\b(dlsm_\w+_shmem_(?:size|init))\s*\(/g;
	push @foreign, "$file calls $1, the floors' group function"
	  while !$group_caller{$module}
	  && $calls =~ /[^\n]\b(dlsm_floor_(?:group_key|group_park|group_parked|group_probed|groups|clock))\s*\(/g;
}

# all SQL text dlsm runs lives in querytext.c: no other file has a string
# literal that begins a statement, and only plans.c hands one to SPI to
# prepare or run (comments and character literals set aside)
my @sql;
for my $file (sort keys %text)
{
	my $module = module_of($file);
	my $code = $text{$file} =~ s{/\*.*?\*/}{"\n" x ($& =~ tr/\n//)}gser;

	while ($module ne 'querytext'
		   && $code =~ /'(?:[^'\\\n]|\\.)*'|"((?:[^"\\\n]|\\.)*)"/g)
	{
		next unless defined $1;
		my $literal = $1;
		my $line = 1 + (substr($code, 0, $-[0]) =~ tr/\n//);

		push @sql, "$file:$line: \"$literal\""
		  if $literal =~ /^\s*(?:SELECT|INSERT|UPDATE|DELETE|MERGE|WITH|VALUES|TABLE|CREATE|ALTER|DROP|TRUNCATE|GRANT|REVOKE|COMMENT|COPY|LOCK|SET|RESET|DO|CALL|VACUUM|ANALYZE|REFRESH|NOTIFY|LISTEN)\s+\S/;
	}
	push @sql, "$file calls $1"
	  while $module ne 'plans'
	  && $code =~ /\b(SPI_(?:execute\w*|exec|prepare\w*|cursor_open\w*|keepplan))\s*\(/g;
}

# every SQL-callable function checks how it was called before it reads an
# argument: dlsm_extension_check_call (the version of the SQL objects, the
# number of arguments passed) or, for the views' functions, which read no
# argument, begin_view (the number of result columns declared).  Only the
# wake trigger answers at any version (it must not fail a producer's
# INSERT before ALTER EXTENSION dlsm UPDATE).
my @unchecked;
for my $file (sort keys %text)
{
	my $code = $text{$file} =~ s{/\*.*?\*/}{"\n" x ($& =~ tr/\n//)}gser;
	my %callable = map { $_ => 1 } $code =~ /^PG_FUNCTION_INFO_V1\((\w+)\);/mg;
	while ($code =~ /^(\w+)\(PG_FUNCTION_ARGS\)\n\{\n(.*?)\n\}\n/msg)
	{
		my ($name, $body) = ($1, $2);
		next unless $callable{$name} && $name ne 'dlsm_wake';
		my ($first) = $body =~ /(\w+\s*\(\s*fcinfo\b|\bfcinfo\b|\bPG_\w+)/;
		push @unchecked, "$file: $name reads its call before checking it ($first)"
		  unless defined $first && $first =~ /^(?:dlsm_extension_check_call|begin_view)\s*\(/;
	}
}

# every statement's text agrees with its layout in querytext.h: it uses
# each of $1 .. $n of its declared parameters (but those its entry says it
# may leave out, DLSM_PARAM_BIT) and no higher one, and the columns it
# returns are named, by AS or as plain columns, as its list declares them,
# in order.  plans.c checks the same of each statement it prepares, for the
# statements a run reaches; this reads them all, from the text.

# A text with its literals and quoted names blanked, as the $n and the
# commas of a list are read outside them.
sub unquoted
{
	my ($text) = @_;
	return $text =~ s/'[^']*'|"[^"]*"/' ' x length($&)/ger;
}

# What is wrong with a statement's text against its layout: nparams
# declared parameters, skip{n} those it may leave out, columns the names
# declared.
sub layout_problems
{
	my ($text, $nparams, $skip, @columns) = @_;
	my @why;
	my $bare = unquoted($text);
	my %used = map { $_ => 1 } $bare =~ /\$(\d+)/g;
	push @why, "uses \$$_, declares $nparams parameters"
	  for sort { $a <=> $b } grep { $_ > $nparams } keys %used;
	push @why, "does not use its parameter \$$_"
	  for grep { !$used{$_} && !$skip->{$_} } 1 .. $nparams;

	# the result: the RETURNING list, else the first SELECT's, at depth 0
	my (@depth, $d, $list);
	$d = 0;
	for my $i (0 .. length($bare) - 1)
	{
		my $c = substr($bare, $i, 1);
		$d-- if $c eq ')';
		push @depth, $d;
		$d++ if $c eq '(';
	}
	my $top = sub {
		my ($re) = @_;
		my @at;
		while ($bare =~ /$re/g)
		{
			push @at, [ $-[0], $+[0] ] if $depth[ $-[0] ] == 0;
		}
		return @at;
	};
	my @ret = $top->(qr/\bRETURNING\b/);
	my @sel = $top->(qr/\bSELECT\b/);
	my ($from, $to);
	if (@ret)
	{
		($from, $to) = ($ret[-1][1], length $bare);
	}
	elsif (@sel)
	{
		$from = $sel[0][1];
		my @end = grep { $_->[0] > $from } $top->(qr/\bFROM\b/);
		$to = @end ? $end[0][0] : length $bare;
	}
	my @names;
	if (defined $from)
	{
		my ($start, @items) = ($from);
		for my $i ($from .. $to - 1)
		{
			next unless substr($bare, $i, 1) eq ',' && $depth[$i] == 0;
			push @items, [ $start, $i ];
			$start = $i + 1;
		}
		push @items, [ $start, $to ];
		for (@items)
		{
			my $item = substr($text, $_->[0], $_->[1] - $_->[0]) =~ s/^\s+|\s+$//gr;
			push @names,
				$item =~ /\bAS\s+(\w+)$/ ? $1
			  : $item =~ /^(?:\w+\.)?([a-z_]\w*)$/ ? $1
			  : "(unnamed: $item)";
		}
	}
	push @why, "returns (@names), declares (@columns)"
	  unless "@names" eq "@columns";
	return @why;
}

# querytext.h's lists: name -> [[constant, column name or undef], ...]
my $qh = slurp("$src/querytext.h") =~ s/\\\n/ /gr;
my %listdef = $qh =~ /^#define\s+(\w+)(?:\(X\))?[ \t]+([^\n]*)/mg;
my %listempty = map { $_ => 1 } $qh =~ /^#define\s+(\w+)\(X\)[ \t]*$/mg;
sub list_of
{
	my ($name) = @_;
	return () if $listempty{$name};
	my $body = $listdef{$name} // die "querytext.h: no list $name\n";
	return list_of($body) if $body =~ /^\w+$/;
	my @entries;
	while ($body =~ /\bX\(\s*(\w+)\s*,\s*(?:"(\w+)"\s*,\s*)?\w+\s*\)|\b(\w+)\(X\)/g)
	{
		push @entries, defined $3 ? list_of($3) : [ $1, $2 ];
	}
	return @entries;
}

# querytext.c's string macros, and each statement's text
my $qc = slurp("$src/querytext.c");
$qc =~ s{"(?:[^"\\]|\\.)*"|/\*.*?\*/}{substr($&, 0, 1) eq '"' ? $& : ' '}gse;
my (%smacro, %sargs);
while ($qc =~ /^#define[ \t]+(\w+)(?:\(([\w, ]*)\))?[ \t]+((?:[^\n]*\\\n)*[^\n]*)/mg)
{
	my ($name, $args, $body) = ($1, $2, $3);
	$body =~ s/\\\n/ /g;
	next unless $body =~ /"/;
	$smacro{$name} = $body;
	$sargs{$name} = [ defined $args ? split(/\s*,\s*/, $args) : () ];
}

# The string a C expression of literals, macros and their arguments makes.
sub cstring
{
	my ($expr, $env) = @_;
	my $out = '';
	pos($expr) = 0;
	while ($expr =~ /\G\s*(?:"((?:[^"\\]|\\.)*)"|(\w+))/gc)
	{
		if (defined $1)
		{
			$out .= $1 =~ s/\\(.)/$1/gr;
			next;
		}
		my $name = $2;
		if (exists $env->{$name})
		{
			$out .= $env->{$name};
		}
		elsif ($expr =~ /\G\s*\(/gc)
		{
			my ($depth, $arg, @args) = (1, '');
			while ($depth > 0 && $expr =~ /\G("(?:[^"\\]|\\.)*"|[(),]|[^"(),]+)/gc)
			{
				my $t = $1;
				$depth++ if $t eq '(';
				$depth-- if $t eq ')';
				if ($depth == 0 || ($depth == 1 && $t eq ','))
				{
					push @args, $arg;
					$arg = '';
				}
				else
				{
					$arg .= $t;
				}
			}
			my %call;
			@call{ @{ $sargs{$name} // die "querytext.c: no macro $name\n" } } =
			  map { cstring($_, $env) } @args;
			$out .= cstring($smacro{$name}, \%call);
		}
		else
		{
			$out .= cstring($smacro{$name} // die("querytext.c: no macro $name\n"), {});
		}
	}
	die "querytext.c: cannot read " . substr($expr, pos($expr) // 0, 40) . "\n"
	  if (pos($expr) // 0) < length($expr) && substr($expr, pos($expr) // 0) =~ /\S/;
	return $out;
}

# the placeholders that put in a parameter (plans.c's name_substs)
my %param_subst = slurp("$src/plans.c") =~ /\{"(\w+)", [^"\n]*"([^"\n]*\$\d+[^"\n]*)"/g;

my (@layout, $statements);
while ($qc =~ /^\t\[(DLSM_[QC]_\w+)\] = \{\n(.*?)^\t\t?LAYOUT\(\1\),\n(.*?)^\t\},/msg)
{
	my ($q, $expr, $rest) = ($1, $2, $3);
	$statements++;
	my $text = eval { cstring($expr =~ s/,\s*$//r, {}) };
	if (!defined $text)
	{
		push @layout, "$q: $@";
		next;
	}
	$text =~ s/\{(\w+)\}/$param_subst{$1} \/\/ $&/ge;
	my @params = list_of("${q}_PARAMS");
	my @columns = map { $_->[1] } list_of("${q}_COLUMNS");
	my %index = map { $params[$_][0] => $_ + 1 } 0 .. $#params;
	my %skip = map { ($index{$_} // die "$q: DLSM_PARAM_BIT($_) names no parameter\n") => 1 }
	  $rest =~ /DLSM_PARAM_BIT\((\w+)\)/g;
	push @layout, map { "$q: $_" } layout_problems($text, scalar @params, \%skip, @columns);
}
push @layout, "querytext.c: no statement read" unless $statements;

# and the check can fail: a statement that skips $2, uses $3 and
# returns an unnamed column
my @broken = layout_problems('SELECT a.x, {id} FROM t WHERE y = $1 AND z = $3', 2, {}, 'x', 'id');

check(!@unknown, 'every file of src/ belongs to a layer', @unknown);
check(!@up, 'every include of a dlsm header goes to a lower layer', @up);
check(!@shared, 'only the owners of shared state touch it', @shared);
check(!@internal, 'a module\'s private header is included only by its own files',
	@internal);
check(!@foreign,
	'each part of the shared state is touched only by its owner, created by shmem.c alone, and the floors\' group functions are called only by the floor module and grouplimit.c',
	@foreign);
check(!@include_order,
	'includes: postgres.h first, then each block in alphabetical order',
	@include_order);
check(!@sql, 'all SQL text is in querytext.c, and only plans.c prepares and runs it',
	@sql);
check(!@long, 'no function runs past 100 lines', @long);
check(!@headerless,
	'every .c opens with its banner, what it owns and what it calls',
	@headerless);
check(!@bare, 'no parameter, null flag or argument array is indexed by a bare number',
	@bare);
check(!@outside, 'no comment points at a document outside the repository',
	@outside);
my %listed = map { $_ => 1 } grep { /\S/ } split /\n/, slurp("$src/typedefs.list");
my @missing = sort grep { !$listed{$_} } keys %typedef;
my @stale = sort grep { !$typedef{$_} } keys %listed;
check(!@missing && !@stale, 'src/typedefs.list lists every typedef of src/, and no other',
	(map { "missing: $_" } @missing), (map { "stale: $_" } @stale));
check(!@spliced, 'every message is one whole string for its translator',
	@spliced);
check(!@unsafe,
	'a signal or timeout handler writes only volatile sig_atomic_t variables and calls only SetLatch or kill',
	@unsafe);
check(!@core_flags,
	'no code of src/ writes core\'s interrupt flags (InterruptPending, QueryCancelPending, ProcDiePending)',
	@core_flags);
check(!@hand_fired, 'no code of src/ fires or queues triggers by hand (AfterTrigger...)',
	@hand_fired);
check(!@probed, 'no code of src/ probes a process with kill(..., 0) (PIDs are reused)',
	@probed);
check(!@unchecked,
	'every SQL-callable function checks its call (dlsm_extension_check_call, begin_view) before it reads an argument',
	@unchecked);
my @twice = map { "$_: @{ $defined{$_} }" } sort grep { @{ $defined{$_} } > 1 } keys %defined;
check(!@twice, 'no two files define a function of the same name', @twice);
# The "Calls ..." sentence of each .c's banner (up to "; called by" or
# "; nothing calls it") names every module whose functions the file calls
# (a function defined in another file of src/), and names no module the
# file neither calls nor reaches through its includes (a setting read, a
# descriptor's fields).  dlsm.c, which calls every module's init, is exempt.
my %defined_in;
for my $name (keys %defined)
{
	$defined_in{$name} = module_of($defined{$name}[0]) if @{ $defined{$name} } == 1;
}
my %includes;	# file -> the dlsm headers it includes (their modules)
for my $file (keys %text)
{
	$includes{$file} = [ map { module_of("$_.h") } grep { -e "$src/$_.h" } $text{$file} =~ /^#include "(\w+)\.h"/mg ];
}
sub reached	# the modules a file reaches through its includes, transitively
{
	my ($file) = @_;
	my (%seen, @pending);
	@pending = @{ $includes{$file} };
	while (defined(my $m = shift @pending))
	{
		next if $seen{$m}++;
		push @pending, @{ $includes{"$m.h"} // [] };
		push @pending, @{ $includes{"${m}_internals.h"} // [] };
	}
	return \%seen;
}
my @calls_line;
for my $file (grep { /\.c$/ && $_ ne 'dlsm.c' } sort keys %text)
{
	my $module = module_of($file);
	my ($sentence) = $text{$file} =~ m{^ \* (Calls .*?)(?:\n \*\n|\n \*/)}ms;
	next unless defined $sentence;	# the banner check reports it
	$sentence =~ s/\n \*\s*/ /g;
	$sentence =~ s/;\s*(?:called by|nothing calls).*//s;
	my %named = map { module_of("$_.h") => 1 } $sentence =~ /\b(\w+)\.[ch]\b/g;
	my $code = $text{$file} =~ s{/\*.*?\*/}{}gsr =~ s/"(?:[^"\\]|\\.)*"//gr;
	my %called;
	while ($code =~ /\b(\w+)\s*\(/g)
	{
		my $m = $defined_in{$1};
		$called{$m}{$1} = 1 if defined $m && $m ne $module;
	}
	my $reached = reached($file);
	push @calls_line, "$file calls $_ (" . join(', ', sort keys %{ $called{$_} }) . ") and does not say so"
	  for grep { !$named{$_} } sort keys %called;
	push @calls_line, "$file says it calls $_, and neither calls nor includes it"
	  for grep { $_ ne $module && !$called{$_} && !$reached->{$_} } sort keys %named;
}
check(!@calls_line,
	'every .c\'s "Calls" sentence names the modules it calls, and only those it calls or reaches',
	@calls_line);

# src/dlsm.c's table of the layers is the %layer above: every module at
# its layer, none missing, none more
my ($table) = $text{'dlsm.c'} =~ /The modules, in layers.*?\n \*\n(.*?)\n \*\n/s;
my (%table_layer, $at);
for my $line (split /\n/, $table // '')
{
	$at = $1 eq "under all" ? -1 : $1 if $line =~ /^ \*\t\s*(\d|under all)\b/;
	$table_layer{ module_of("$_.h") } //= $at for $line =~ /\b(\w+)\.[ch]\b/g;
}
my @layer_table = map { "$_: layer $layer{$_} here, " . ($table_layer{$_} // 'none') . ' in src/dlsm.c' }
  grep { ($table_layer{$_} // 99) != $layer{$_} } sort keys %layer;
push @layer_table, map { "$_: in src/dlsm.c's table, not a module here" } grep { !defined $layer{$_} } sort keys %table_layer;
check(!@layer_table, 'src/dlsm.c\'s table of the layers is the one this test checks', @layer_table);

check(!@layout, 'every statement\'s text uses its declared parameters and names its declared columns (querytext.h)',
	@layout);
check(@broken == 3, 'the layout check finds a skipped, an undeclared and an unnamed one in a broken statement',
	@broken == 3 ? () : @broken);
my @unformatted = `perl $src/../test/pgindent.pl --check 2>&1`;
check($? == 0, 'src/ is as pgindent leaves it (test/pgindent.pl --check)',
	map { chomp; $_ } @unformatted);
print "1..$n\n";
exit($failed ? 1 : 0);
