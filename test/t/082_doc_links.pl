# Copyright (c) 2026, dlsm developers
#
# The documentation's links resolve and its pages keep their shape (issue
# 33): links and anchors resolve; each page of doc/ has a table of
# contents, unique headings and at most 600 lines; README at most 150.
#
# For README.md, CHANGELOG.md, CONTRIBUTING.md, bench/README.md,
# test/README.md and every page of doc/ and doc/design/:
#   - every relative link (a Markdown link to a path) names a file or
#     directory of the repository, and never leaves it;
#   - every #anchor, on the same page or another, names a heading there (as
#     GitHub makes anchors: lower case, punctuation dropped, blanks to -);
#   - no page names ../shared or anything outside the repository;
#   - each page of doc/ has unique headings and a table of contents (a
#     "## Contents" section that links each "## " section of the page; a
#     page of at most 150 lines may be one section without one), and at
#     most 600 lines; README at most 150.
# No server: plain Perl.
use strict;
use warnings;

use File::Basename qw(dirname);
use File::Spec;
use Test::More;

my $top = $ENV{TESTDIR} // dirname(dirname(dirname(File::Spec->rel2abs($0))));

sub slurp
{
	my ($path) = @_;
	open my $fh, '<', $path or die "cannot read $path: $!";
	local $/;
	return scalar <$fh>;
}

my @pages = grep { -f "$top/$_" }
  ('README.md', 'CHANGELOG.md', 'CONTRIBUTING.md', 'bench/README.md', 'test/README.md');
my @doc = map { s{^\Q$top/\E}{}r } sort glob("$top/doc/*.md $top/doc/design/*.md");
push @pages, @doc;
cmp_ok(scalar(@doc), '>=', 15, 'doc/ has its pages (' . scalar(@doc) . ')');

# the text outside ``` blocks, and the headings of a page
sub prose
{
	my ($text) = @_;
	my ($out, $in) = ('', 0);
	for my $line (split /\n/, $text, -1)
	{
		if ($line =~ /^\s*```/) { $in = !$in; $out .= "\n"; next; }
		$out .= ($in ? '' : $line) . "\n";
	}
	return $out;
}

sub slug
{
	my ($h) = @_;
	$h =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;
	$h = lc $h;
	$h =~ s/[^\w\- ]//g;
	$h =~ s/ /-/g;
	return $h;
}

my %anchors;	# page -> { anchor => 1 }
my %headings;	# page -> [ heading texts ]
for my $page (@pages)
{
	my %seen;
	for my $line (split /\n/, prose(slurp("$top/$page")))
	{
		next unless $line =~ /^#{1,6} (.*?)\s*$/;
		my $a = slug($1);
		push @{ $headings{$page} }, $1;
		my $n = $seen{$a}++;
		$anchors{$page}{ $n ? "$a-$n" : $a } = 1;
	}
}

my (@bad, $links);
for my $page (@pages)
{
	my $text = prose(slurp("$top/$page"));
	push @bad, "$page names ../shared" if $text =~ m{\.\./shared|/work/shared};
	while ($text =~ /\]\(([^)\s]+)\)/g)
	{
		my $target = $1;
		next if $target =~ m{^(?:https?|mailto):};
		$links++;
		my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
		my $file = $page;
		if ($path ne '')
		{
			$file = File::Spec->canonpath(File::Spec->catfile(dirname($page), $path));
			1 while $file =~ s{(^|/)(?!\.\./)[^/]+/\.\.(/|$)}{$1}; # a/../b -> b
			if ($file =~ m{^\.\.(/|$)} || File::Spec->file_name_is_absolute($path))
			{
				push @bad, "$page: $target leaves the repository";
				next;
			}
			if (!-e "$top/$file")
			{
				push @bad, "$page: $target: no such file";
				next;
			}
		}
		next unless defined $anchor && $anchor ne '';
		if ($file !~ /\.md$/ || !$anchors{$file})
		{
			push @bad, "$page: $target: an anchor in a page not checked here";
			next;
		}
		push @bad, "$page: $target: no such heading in $file"
		  unless $anchors{$file}{$anchor};
	}
}
cmp_ok($links // 0, '>=', 200, 'the pages link to each other (' . ($links // 0) . ' links)');
is(join("\n", @bad), '', 'every relative link and anchor resolves');

my (@dups, @notoc, @long);
for my $page (@doc)
{
	my %n;
	$n{$_}++ for @{ $headings{$page} };
	push @dups, map { "$page: \"$_\"" } grep { $n{$_} > 1 } sort keys %n;
	my $text = slurp("$top/$page");
	my $lines = () = $text =~ /\n/g;
	my @sections = grep { $_ ne 'Contents' } $text =~ /^## (.+)$/mg;
	if ($text !~ /^## Contents\n((?:(?!^## ).)*)/ms)
	{
		# a short page may be one section
		push @notoc, "$page: none" if @sections || $lines > 150;
	}
	else
	{
		# every section of the page is in it
		my $toc = $1;
		push @notoc, "$page: empty" unless $toc =~ /\]\(#/;
		push @notoc, map { "$page: \"$_\" not in it" }
		  grep { index($toc, '(#' . slug($_) . ')') < 0 } @sections;
	}
	push @notoc, "$page: $lines lines in one section" if $lines > 150 && !@sections;
	push @long, "$page: $lines lines" if $lines > 600;
}
is(join(', ', @dups), '', 'the headings of each page of doc/ are unique');
is(join(', ', @notoc), '', 'each page of doc/ has a table of contents that links each of its sections');
is(join(', ', @long), '', 'no page of doc/ has more than 600 lines');
my $readme = () = slurp("$top/README.md") =~ /\n/g;
cmp_ok($readme, '<=', 150, "README.md has at most 150 lines ($readme)");
my @index = grep { index(slurp("$top/README.md"), "($_)") < 0 } @doc;
is(join(', ', @index), '', 'README links every page of doc/');

done_testing();
