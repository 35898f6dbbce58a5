#!/usr/bin/perl
# test/meta.pl: check META.json against the PGXN Meta Spec 1.0 and against
# the repository, printing TAP (runs under prove).
#
# The rules are those of the spec (https://pgxn.org/spec/) as its JSON schemas
# state them (pgxn/meta, schema/v1): the required keys, no keys outside the
# spec but x_ ones, SemVer versions, Terms for names, the license list,
# provides entries with file and version, prereqs as phases of relationships
# of version ranges, the shapes of resources, no_index, tags and meta-spec.
# Then the repository: every provided file exists, every extension has its
# control file, and the versions agree with each control file's
# default_version (which PostgreSQL allows to be "1.0"; PGXN wants SemVer, so
# "1.0" is compared as "1.0.0").
#
# Core Perl only.  Usage: perl test/meta.pl [META.json]
use strict;
use warnings;
use B ();
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use JSON::PP ();
use Test::More;

my $top = dirname(dirname(abs_path($0)));
my $file = shift // "$top/META.json";
my $dist = dirname(abs_path($file));

my $SEMVER = qr/(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)
	(?:-(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?
	(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?/x;
my %LICENSES = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1
  artistic_2 bsd freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0
  mit mozilla_1_0 mozilla_1_1 openssl perl_5 postgresql qpl_1_0 ssleay sun zlib
  open_source restricted unrestricted unknown);
my @REQUIRED = qw(name version abstract maintainer license provides meta-spec);
my %TOPLEVEL = map { $_ => 1 } @REQUIRED,
  qw(description generated_by tags no_index prereqs release_status resources);
my %PHASES = map { $_ => 1 } qw(configure build test runtime develop);
my %RELATIONSHIPS = map { $_ => 1 } qw(requires recommends suggests conflicts);

# --- value shapes, each returns an error text or '' ---

sub is_string
{
	my ($v) = @_;
	return 0 if !defined $v || ref $v;
	return (B::svref_2object(\$v)->FLAGS & B::SVf_POK) ? 1 : 0;
}

sub is_number
{
	my ($v) = @_;
	return 0 if !defined $v || ref $v || is_string($v);
	return (B::svref_2object(\$v)->FLAGS & (B::SVf_IOK | B::SVf_NOK)) ? 1 : 0;
}

sub show { JSON::PP->new->canonical->allow_nonref->encode($_[0]) }

sub bad_string		# non-empty string
{
	my ($v) = @_;
	return is_string($v) && length $v ? '' : 'must be a non-empty string, not ' . show($v);
}

sub bad_term
{
	my ($v) = @_;
	return 'must be a string, not ' . show($v) unless is_string($v);
	return "\"$v\" must be at least 2 characters with no slash, backslash, space or control character"
	  unless $v =~ /\A[^\/\\\s\p{Cntrl}]{2,}\z/;
	return '';
}

sub bad_version
{
	my ($v) = @_;
	return 'must be a string, not ' . show($v) unless is_string($v);
	return "\"$v\" is not a SemVer version (major.minor.patch)" unless $v =~ /\A$SEMVER\z/;
	return '';
}

sub bad_range		# a version range: 0, or "[op] semver[, op semver]..."
{
	my ($v) = @_;
	return '' if is_number($v) && $v == 0;
	return 'must be 0 or a string, not ' . show($v) unless is_string($v);
	my @parts = split /,\s*/, $v, -1;
	my $first = shift @parts;
	my $op = qr/(?:[=!]=|[<>]=?)\s*/;
	return "\"$v\" is not a version range"
	  unless defined $first && $first =~ /\A(?:$op)?(?:$SEMVER|0)\z/
	  && !grep { !/\A(?:$op)?$SEMVER\z/ } @parts;
	return '';
}

sub bad_path		# relative, unix conventions, no . or .. component
{
	my ($v) = @_;
	return 'must be a string, not ' . show($v) unless is_string($v);
	my $p = $v =~ s{\A\./}{}r;
	return "\"$v\" must be at least 2 characters" if length $v < 2;
	return "\"$v\" must be relative" if $p =~ m{\A/};
	return "\"$v\" must use / as separator" if $p =~ /\\/;
	return "\"$v\" must not contain . or .. components"
	  if grep { $_ eq '.' || $_ eq '..' } split m{/}, $p;
	return '';
}

sub bad_uri
{
	my ($v) = @_;
	return is_string($v) && $v =~ /\A[A-Za-z][A-Za-z0-9+.-]*:[^\s]+\z/
	  ? '' : show($v) . ' is not a URI';
}

sub bad_email
{
	my ($v) = @_;
	return is_string($v) && $v =~ /\A[^@\s]+@[^@\s]+\.[^@\s]+\z/
	  ? '' : show($v) . ' is not an email address';
}

sub bad_keys		# bad_keys(HASH, KNOWN...): keys outside KNOWN and x_*
{
	my ($h, @known) = @_;
	my %k = map { $_ => 1 } @known;
	my @extra = grep { !$k{$_} && !/\A[xX]_./ } sort keys %$h;
	return @extra ? 'unknown keys: ' . join(', ', @extra) : '';
}

# check(NAME, ERROR): one TAP line; the error, if any, as its diagnostic
sub check
{
	my ($name, $err) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	ok(!$err, $name) or diag($err);
	return !$err;
}

# --- the document ---

my $meta;
{
	my $text = do { local (@ARGV, $/) = ($file); <> };
	$meta = eval { JSON::PP->new->utf8->decode($text // '') };
	check('META.json is a JSON object',
		!defined $text ? "cannot read $file"
		: $@ ? "not valid JSON: $@"
		: ref $meta ne 'HASH' ? 'top level is not an object' : '')
	  or do { done_testing(); exit 1 };
}

for my $k (@REQUIRED)
{
	check("has required key \"$k\"", exists $meta->{$k} ? '' : 'missing');
}
check('no top-level keys outside the spec (or x_)', bad_keys($meta, keys %TOPLEVEL));

check('name is a Term', bad_term($meta->{name})) if exists $meta->{name};
check('version is SemVer', bad_version($meta->{version})) if exists $meta->{version};
for my $k (qw(abstract description generated_by))
{
	check("$k is a non-empty string", bad_string($meta->{$k})) if exists $meta->{$k};
}

if (exists $meta->{maintainer})
{
	my $m = $meta->{maintainer};
	my @m = ref $m eq 'ARRAY' ? @$m : ($m);
	check('maintainer is a string or a non-empty list of strings',
		!@m ? 'empty list' : join('; ', grep { $_ } map { bad_string($_) } @m));
}

if (exists $meta->{license})
{
	my $l = $meta->{license};
	my $err;
	if (ref $l eq 'HASH')
	{
		$err = !%$l ? 'empty object'
		  : join('; ', grep { $_ } map { bad_uri($l->{$_}) } sort keys %$l);
	}
	else
	{
		my @l = ref $l eq 'ARRAY' ? @$l : ($l);
		$err = !@l ? 'empty list'
		  : join('; ', map { show($_) . ' is not in the spec\'s license list' }
			  grep { !is_string($_) || !$LICENSES{$_} } @l);
	}
	check('license is from the spec\'s list (or names URIs)', $err);
}

if (exists $meta->{'meta-spec'})
{
	my $s = $meta->{'meta-spec'};
	if (check('meta-spec is an object', ref $s eq 'HASH' ? '' : 'not an object'))
	{
		check('meta-spec version is 1.0.x',
			is_string($s->{version}) && $s->{version} =~ /\A1\.0\.\d+\z/
			? '' : 'version is ' . show($s->{version}));
		check('meta-spec url is the spec\'s',
			!exists $s->{url} || (is_string($s->{url})
				&& $s->{url} =~ m{\Ahttps?://pgxn\.org/meta/spec\.txt\z})
			? '' : 'url is ' . show($s->{url}));
		check('meta-spec has no other keys', bad_keys($s, qw(version url)));
	}
}

my %provides;
if (exists $meta->{provides})
{
	my $p = $meta->{provides};
	if (check('provides is a non-empty object',
			ref $p ne 'HASH' ? 'not an object' : !%$p ? 'empty' : ''))
	{
		%provides = %$p;
	}
	for my $ext (sort keys %provides)
	{
		my $e = $provides{$ext};
		check("provides key \"$ext\" is a Term", bad_term($ext));
		next unless check("provides $ext is an object", ref $e eq 'HASH' ? '' : 'not an object');
		check("provides $ext has file and version",
			join(', ', map { "no $_" } grep { !exists $e->{$_} } qw(file version)));
		check("provides $ext has no other keys",
			bad_keys($e, qw(file version abstract docfile docpath)));
		check("provides $ext version is SemVer", bad_version($e->{version}))
		  if exists $e->{version};
		check("provides $ext abstract is a non-empty string", bad_string($e->{abstract}))
		  if exists $e->{abstract};
		for my $k (qw(file docfile))
		{
			next unless exists $e->{$k};
			check("provides $ext $k is a relative unix path", bad_path($e->{$k}))
			  and check("provides $ext $k $e->{$k} exists",
				-f "$dist/$e->{$k}" ? '' : "no file $dist/$e->{$k}");
		}
	}
}

if (exists $meta->{prereqs})
{
	my $p = $meta->{prereqs};
	if (check('prereqs is a non-empty object',
			ref $p ne 'HASH' ? 'not an object' : !%$p ? 'empty' : ''))
	{
		check('prereqs has only the spec\'s phases', bad_keys($p, keys %PHASES));
		for my $phase (sort grep { $PHASES{$_} } keys %$p)
		{
			my $ph = $p->{$phase};
			next unless check("prereqs $phase is a non-empty object",
				ref $ph ne 'HASH' ? 'not an object' : !%$ph ? 'empty' : '');
			check("prereqs $phase has only the spec's relationships",
				bad_keys($ph, keys %RELATIONSHIPS));
			for my $rel (sort grep { $RELATIONSHIPS{$_} } keys %$ph)
			{
				my $r = $ph->{$rel};
				check("prereqs $phase $rel maps Terms to version ranges",
					ref $r ne 'HASH' ? 'not an object' : !%$r ? 'empty'
					: join('; ', grep { $_ }
						map { bad_term($_), bad_range($r->{$_}) } sort keys %$r));
			}
		}
	}
}

if (exists $meta->{tags})
{
	my $t = $meta->{tags};
	check('tags is a non-empty list of tags',
		ref $t ne 'ARRAY' ? 'not a list' : !@$t ? 'empty'
		: join('; ', map { show($_) . ' is not a tag (2 to 255 characters, no /, \\ or control)' }
			grep { !is_string($_) || !/\A[^\/\\\p{Cntrl}]{2,255}\z/ } @$t));
}

if (exists $meta->{release_status})
{
	check('release_status is stable, testing or unstable',
		is_string($meta->{release_status})
		&& $meta->{release_status} =~ /\A(?:stable|testing|unstable)\z/
		? '' : 'is ' . show($meta->{release_status}));
}

if (exists $meta->{resources})
{
	my $r = $meta->{resources};
	my @err;
	if (ref $r ne 'HASH' || !%$r) { push @err, 'not a non-empty object' }
	else
	{
		push @err, bad_keys($r, qw(homepage bugtracker repository));
		push @err, 'homepage: ' . bad_uri($r->{homepage})
		  if exists $r->{homepage} && bad_uri($r->{homepage});
		if (exists $r->{bugtracker})
		{
			my $b = $r->{bugtracker};
			if (ref $b ne 'HASH' || !(exists $b->{web} || exists $b->{mailto}))
			{
				push @err, 'bugtracker needs web or mailto';
			}
			else
			{
				push @err, map { "bugtracker $_" } grep { $_ } bad_keys($b, qw(web mailto)),
				  (exists $b->{web} ? bad_uri($b->{web}) : ''),
				  (exists $b->{mailto} ? bad_email($b->{mailto}) : '');
			}
		}
		if (exists $r->{repository})
		{
			my $s = $r->{repository};
			if (ref $s ne 'HASH'
				|| !(exists $s->{web} || (exists $s->{url} && exists $s->{type})))
			{
				push @err, 'repository needs web, or url and type';
			}
			else
			{
				push @err, map { "repository $_" } grep { $_ } bad_keys($s, qw(url web type)),
				  (map { exists $s->{$_} ? bad_uri($s->{$_}) : '' } qw(url web)),
				  (exists $s->{type} ? bad_string($s->{type}) : '');
			}
		}
	}
	check('resources has the spec\'s shape', join('; ', grep { $_ } @err));
}

if (exists $meta->{no_index})
{
	my $n = $meta->{no_index};
	my @err;
	if (ref $n ne 'HASH' || !(exists $n->{file} || exists $n->{directory}))
	{
		push @err, 'needs file or directory';
	}
	else
	{
		push @err, bad_keys($n, qw(file directory));
		for my $k (grep { exists $n->{$_} } qw(file directory))
		{
			my @l = ref $n->{$k} eq 'ARRAY' ? @{ $n->{$k} } : ($n->{$k});
			my %seen;
			push @err, "$k: empty list" unless @l;
			push @err, map { "$k: $_" } grep { $_ } map { bad_path($_) } @l;
			push @err, "$k: duplicates" if grep { $seen{ show($_) }++ } @l;
		}
	}
	check('no_index has the spec\'s shape', join('; ', grep { $_ } @err));
}

# --- against the repository ---

sub control_version	# default_version of EXT.control (in DIR, or the top), or undef
{
	my ($ext, $dir) = @_;
	my $control = -e "$dist/$ext.control" ? "$dist/$ext.control"
	  : "$dist/$dir/$ext.control";
	open my $fh, '<', $control or return undef;
	while (<$fh>)
	{
		return $1 if /^\s*default_version\s*=\s*'([^']*)'/;
	}
	return undef;
}

sub semver_of		# "1.0" -> "1.0.0"
{
	my ($v) = @_;
	my @p = split /\./, $v;
	push @p, 0 while @p < 3;
	return join '.', @p;
}

opendir my $dh, $dist or die "cannot read $dist: $!";
my @controls = sort map { s/\.control\z//r } grep { /\.control\z/ } readdir $dh;
closedir $dh;
# and the extensions in a directory of their own (proxy/)
push @controls, map { m{([^/]+)\.control\z} } glob("$dist/*/*.control");
@controls = sort @controls;
check('provides names every extension with a control file',
	join(', ', map { "$_.control has no provides entry" } grep { !$provides{$_} } @controls));

for my $ext (sort keys %provides)
{
	my $e = $provides{$ext};
	next unless ref $e eq 'HASH';
	# an extension's files stand beside its install script (sql/ for the
	# main one, whose control file is at the top)
	my $dir = (($e->{file} // '') =~ s{\A\./}{}r) =~ m{\A(.*)/[^/]*\z} ? $1 : '.';
	my $cv = control_version($ext, $dir);
	next unless check("$ext.control exists with a default_version",
		defined $cv ? '' : "no default_version in $ext.control");
	check("provides $ext version equals $ext.control default_version $cv (as SemVer)",
		($e->{version} // '') eq semver_of($cv) ? ''
		: 'META.json says ' . show($e->{version}) . ', the control file ' . semver_of($cv));
	check("provides $ext file is the install script of version $cv",
		(($e->{file} // '') =~ s{\A\./}{}r) eq "$dir/$ext--$cv.sql" ? ''
		: 'file is ' . show($e->{file}) . ", expected $dir/$ext--$cv.sql");
	next unless $ext eq ($meta->{name} // '');
	check("distribution version is a release of $ext $cv",
		is_string($meta->{version}) && semver_of($cv) =~ /\A(\d+\.\d+)\./
		&& $meta->{version} =~ /\A\Q$1\E\./ ? ''
		: 'version ' . show($meta->{version}) . " does not start with major.minor of $cv");
}

my $pg = ref $meta->{prereqs} eq 'HASH' && ref $meta->{prereqs}{runtime} eq 'HASH'
  && ref $meta->{prereqs}{runtime}{requires} eq 'HASH'
  ? $meta->{prereqs}{runtime}{requires}{PostgreSQL} : undef;
check('runtime requires PostgreSQL 15.0.0 or later (src/compat.h\'s baseline)',
	is_string($pg) && $pg =~ /\A(?:>=\s*)?(\d+)\.\d+\.\d+\z/ && $1 >= 15 ? ''
	: 'prereqs.runtime.requires.PostgreSQL is ' . show($pg));
# the majors the test matrix runs (test/run_all.sh: 15, and MATRIX's)
if (-f "$dist/test/run_all.sh")
{
	open my $fh, '<', "$dist/test/run_all.sh" or die "cannot read test/run_all.sh: $!";
	my $run_all = do { local $/; <$fh> };
	my @majors = ('15', sort { $a <=> $b } $run_all =~ /^\t\[(\d+)\]="/mg);
	my $tested = $meta->{x_postgresql_tested};
	check('x_postgresql_tested names the majors test/run_all.sh runs (' . join(', ', @majors) . ')',
		ref $tested eq 'ARRAY' && "@$tested" eq "@majors" ? ''
		: 'x_postgresql_tested is ' . show($tested));
}
if (-d "$dist/test/pgtap")
{
	check('test prereqs name pgTAP (test/pgtap uses it)',
		ref $meta->{prereqs} eq 'HASH' && ref $meta->{prereqs}{test} eq 'HASH'
		&& grep({ ref $_ eq 'HASH' && exists $_->{pgTAP} } values %{ $meta->{prereqs}{test} })
		? '' : 'no pgTAP in prereqs.test');
}

done_testing();
