# Copyright (c) 2026, dlsm developers
#
# The router reads connection strings as libpq does (issue 40, finding 8):
# on a corpus of tricky strings (URIs with IPv6 brackets, ?, #, %
# escapes, several hosts, a password as a URI parameter; keyword = value
# with quotes, backslash escapes, duplicated keywords, unicode, empty
# values), dlsm_proxy_conninfo_parse gives the keywords and values that
# libpq's own PQconninfoParse stores, or an error where libpq refuses the
# string.  The oracle is test/perl/conninfo_oracle.py on the libpq that
# PL/Proxy links (and on each libpq of $DLSM_LIBPQ_ORACLES: ";"-separated
# entries, each a python command and a libpq path, its last word).  A
# string no libpq of 15 to 18 reads alike (a space in a URI: libpq 18
# strips or refuses it) is compared with libpq 18 only; one whose value
# decodes to bytes that are no UTF-8 the router refuses.  Whatever the
# libpq: each string in which it reads a secret (a keyword it shows as a
# password, or scram_client_key, scram_server_key) is refused by
# dlsm_proxy_configure (22023), as the review's two strings (a ? inside
# an IPv6 address's brackets, before ?password=) were not in 1.1.
use strict;
use warnings;

use Encode qw(encode_utf8);
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmShard;

# [string, what is special]: 'newest' (libpq 18 reads it unlike 15 to 17),
# 'stricter' (the router refuses it, libpq takes it)
my @corpus = (
	# the review's strings
	[q{postgresql://[::1?]/db?password=secret}],
	[q{postgresql://host,[h?2]/db?password=x}],
	# IPv6 brackets
	[q{postgresql://[::1]:5432/db}],
	[q{postgresql://[::1]/db?password=x}],
	[q{postgresql://[::1}],
	[q{postgresql://[]/db?password=x}],
	[q{postgresql://[::1]x/db?password=x}],
	[q{postgresql://[::1],[::2]:5433/db?password=x}],
	[q{postgresql://[a@b]/db}],
	[q{postgresql://%5B::1%5D/db}],
	# several hosts, ports
	[q{postgresql://h1:1,h2:2,h3/db}],
	[q{postgresql://h1,h2/d}],
	[q{postgresql://h:5432:6/db}],
	[q{postgresql://,/db}],
	# the user part
	[q{postgresql://u:pw@h/db}],
	[q{postgresql://u:@h/db}],
	[q{postgresql://:pw@h/db}],
	[q{postgresql://u@h/db?password=x}],
	[q{postgresql://u:pa#ss@h/db}],
	[q{postgresql://u:pa?ss@h/db}],
	[q{postgresql://u:p@ss@h/db}],
	[q{postgresql://u:p%40ss@h/db}],
	[q{postgresql://u:p:w@h/db}],
	[q{postgresql://u/x:pw@h/db}],
	[q{postgres://u:pw@h}],
	[q{postgresql://u%3Apw@h/db}],
	# parameters
	[q{postgresql://h/db?pass%77ord=x}],
	[q{postgresql://h/db?%70assword=x}],
	[q{postgresql://h/db?password%3Dx=y}],
	[q{postgresql://h/db?sslpassword=x}],
	[q{postgresql://h/db?application_name=a&password=x}],
	[q{postgresql://h/db?application_name=a&&password=x}],
	[q{postgresql://h/db?password=x&}],
	[q{postgresql://h/db?password}],
	[q{postgresql://h/db?a=b=c}],
	[q{postgresql://h/db?Password=x}],
	[q{postgresql://h/db?host=other&port=1&dbname=x}],
	[q{postgresql://h/db?dbname=postgresql://u:pw@h/x}],
	[q{postgresql://h/db?ssl=true}],
	[q{postgresql://h/db?ssl=false}],
	[q{postgresql://h/db?requiressl=1}],
	[q{postgresql://h/db?oauth_client_secret=x}],
	[q{postgresql://h/db?scram_client_key=x}],
	[q{postgresql://h?password=pw@x/db}],
	# # and / where a URI has none
	[q{postgresql://h/db#frag?password=x}],
	[q{postgresql://h#x/db}],
	[q{postgresql://h/a/b?application_name=c/d}],
	# percent escapes
	[q{postgresql://h/db?password=%zz}],
	[q{postgresql://h/db?application_name=%4}],
	[q{postgresql://h/db?application_name=%00}],
	[q{postgresql://h/d%C3%A9j%C3%A0?application_name=%E2%9C%93}],
	[q{postgresql://h/db?application_name=a%20b&options=-c%20x%3Dy}],
	[q{postgresql://h/db?application_name=%ff}, 'stricter'],
	# spaces in a URI (libpq 18: trimmed at the ends, refused inside)
	[q{postgresql://h?  password=x}, 'newest'],
	[q{postgresql://h/my db}, 'newest'],
	[q{postgresql://u: @h/db}, 'newest'],
	[q{postgresql://h/db?password= x }, 'newest'],
	# not URIs
	[q{postgresql://}],
	[q{PostgreSQL://u:pw@h/db}],
	[q{postgresql:/h/db}],
	[q{ postgresql://u:pw@h/db}],
	# keyword = value
	[q{host=h password=pw}],
	[q{host=h password='p w'}],
	[q{host=h application_name='password=x'}],
	[q{host=h dbname=postgresql://u:pw@h/db}],
	[q{dbname='postgresql://u:pw@h/db'}],
	[q{host = h   port  =  5432}],
	[q{host='a'port=5}],
	[q{host='a'password=5}],
	[q{host=a\ password=x}],
	[q{host=a\\ password=x}],
	[q{host='it\'s' password=x}],
	[q{host='a\\b' options='-c\ x'}],
	[q{host='unterminated}],
	[q{host=a port}],
	[q{=x}],
	[q{host=a password=}],
	[q{password='' host=a}],
	[q{host=a password=x password=}],
	[q{host=a'b password=x}],
	[q{host=h\\}],
	[q{host=h\\ }],
	[q{host=h password = 'x'}],
	[q{host=h sslpassword=x}],
	[q{host=h oauth_client_secret=s}],
	[q{host=h scram_client_key=abc scram_server_key=def}],
	[q{host=h foo=bar}],
	[q{host=h Password=x}],
	[q{requiressl=1 host=h}],
	[q{requiressl=0}],
	[q{service=foo password=x}],
	[q{}],
	[q{   }],
	["host=h\tpassword=x"],
	["host=h\npassword=x\r"],
	["host=h\x{0b}password=x\x{0c}"],
	# unicode: U+00A0 and U+2003 are no spaces to libpq
	["host=h\x{a0}password=x"],
	["application_name=\x{e9}\x{2713} host=h"],
	["host=h\x{2003}password=x"],
	["application_name='caf\x{e9}' password=x"],);

# the libpqs: PL/Proxy's, and those of $DLSM_LIBPQ_ORACLES
my $pkglibdir = `pg_config --pkglibdir`;
chomp $pkglibdir;
my ($plproxy_libpq) = `ldd $pkglibdir/plproxy.so` =~ /libpq\.so\.5 => (\S+)/;
ok($plproxy_libpq, "PL/Proxy links libpq ($plproxy_libpq)");
my @oracles = (["python3", $plproxy_libpq]);
for my $entry (split /;/, $ENV{DLSM_LIBPQ_ORACLES} // '')
{
	my @words = split ' ', $entry;
	my $lib = pop @words;
	push @oracles, [ @words, $lib ] if $lib;
}
my $oracle_py = "$ENV{TESTDIR}/test/perl/conninfo_oracle.py";
my $json = JSON::PP->new->utf8->canonical;

sub oracle
{
	my ($cmd, @input) = @_;
	my ($out, $err) = ('', '');
	my @argv = (@$cmd[ 0 .. $#$cmd - 1 ], $oracle_py, $cmd->[-1]);
	require IPC::Run;
	IPC::Run::run([ @argv, @input ? () : ('keywords') ],
		'<', \(join('', map { $json->encode($_) . "\n" } @input)),
		'>', \$out, '2>', \$err)
	  or die "oracle @argv failed: $err";
	return $out;
}

# the router: a database in UTF8, whose text holds any decoded byte string
# that is UTF-8
my $router = router_node('conninfo_router');
$router->safe_psql('postgres', q{CREATE DATABASE u8 ENCODING 'UTF8'
	LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0});
$router->safe_psql('u8', q{CREATE EXTENSION dlsm_proxy CASCADE});
$router->safe_psql('u8', q{
CREATE FUNCTION reading(s text) RETURNS json LANGUAGE plpgsql AS $f$
BEGIN
	RETURN (SELECT json_build_object('ok', true, 'options',
				COALESCE(json_object_agg(keyword, hex ORDER BY keyword), '{}'))
			  FROM (SELECT DISTINCT ON (p.keyword) p.keyword,
						   encode(convert_to(p.value, 'UTF8'), 'hex') AS hex
					  FROM dlsm_proxy_conninfo_parse(s) WITH ORDINALITY p
					 ORDER BY p.keyword, p.ordinality DESC) x);
EXCEPTION WHEN OTHERS THEN
	RETURN json_build_object('ok', false, 'error', SQLSTATE || ' ' || SQLERRM);
END $f$;
-- what dlsm_proxy_configure says to a string: refused (22023) or taken
-- (and undone, for the next string)
CREATE FUNCTION refusal(s text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM dlsm_proxy_configure(ARRAY[s]);
	RAISE EXCEPTION 'taken';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ' ' || SQLERRM;
END $f$;
});

# each string's reading by the router, and its answer to configure, in
# one statement each (the corpus as a JSON array, dollar-quoted)
my $corpus_json = JSON::PP->new->ascii->encode([ map { $_->[0] } @corpus ]);
die 'the corpus holds $j$' if $corpus_json =~ /\$j\$/;
sub router_column
{
	my ($fn) = @_;
	my $out = $router->safe_psql('u8', qq{
SELECT $fn(s)::text FROM json_array_elements_text(\$j\$$corpus_json\$j\$)
  WITH ORDINALITY AS c(s, n) ORDER BY n});
	my @rows = split /\n/, $out, -1;
	return @rows;
}
my @router = map { JSON::PP->new->utf8->decode($_) } router_column('reading');
is(scalar @router, scalar @corpus, 'the router read every string');
# dlsm_proxy_configure is only asked about strings some libpq reads a
# secret in (one without any would be taken and reach for its host)
my %refusal;

for my $o (@oracles)
{
	my ($version, @known) = split /\n/, oracle($o);
	my %known = map { split / / } @known;
	my @secrets = grep { $known{$_} eq '*' } keys %known;
	push @secrets, grep { exists $known{$_} } qw(scram_client_key scram_server_key);
	my $newest = $version >= 180000;
	my @libpq = map { $json->decode($_) } split /\n/, oracle($o, map { $_->[0] } @corpus);
	is(scalar @libpq, scalar @corpus, "libpq $version read every string");
	note "libpq $version ($o->[-1]): secrets @secrets";

	for my $i (0 .. $#corpus)
	{
		my ($s, $special) = @{ $corpus[$i] };
		my ($l, $r) = ($libpq[$i], $router[$i]);
		my $shown = $json->encode($s);
		$special //= '';
		# a keyword this libpq does not know but a newer one does
		my $unknown = !$l->{ok}
		  && $l->{error} =~ /^(?:invalid connection option|invalid URI query parameter:) "(\w+)"/
		  && $r->{ok} && exists $r->{options}{$1} ? $1 : undef;
		if ($special eq 'stricter')
		{
			ok($l->{ok} && !$r->{ok},
				"libpq $version takes $shown, the router refuses it ($r->{error})");
		}
		elsif (defined $unknown)
		{
			pass("libpq $version has no keyword $unknown: $shown");
		}
		elsif ($special ne 'newest' || $newest)
		{
			is_deeply(
				$r->{ok} ? $r->{options} : 'refused',
				$l->{ok} ? $l->{options} : 'refused',
				"libpq $version and the router read $shown alike"
				  . ($l->{ok} ? '' : " (libpq: $l->{error}; router: $r->{error})"));
		}
		my @read = $l->{ok} ? grep { exists $l->{options}{$_} } @secrets : ();
		$refusal{$s} = $read[0] if @read && !exists $refusal{$s};
	}
}
ok(scalar(keys %refusal) >= 20, 'libpq reads a secret in 20 strings or more');
for my $s (sort keys %refusal)
{
	my $answer = $router->safe_psql('u8',
		encode_utf8('SELECT refusal($j$' . $s . '$j$)'));
	like($answer, qr/^22023 /,
		"dlsm_proxy_configure refuses " . $json->encode($s) . " (libpq reads $refusal{$s})");
}
is($router->safe_psql('u8', q{SELECT count(*) FROM dlsm_proxy_nodes}),
	'0', 'no string configured a node');

done_testing();
