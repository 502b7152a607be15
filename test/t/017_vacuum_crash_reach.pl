# Copyright: gateann authors.
#
# VACUUM frees the slots of deleted nodes, then walks the graph and links
# every live node it no longer reaches.  Its records reach disk only when
# something flushes them (a VACUUM assigns no transaction id, so its commit
# flushes nothing): a crash can keep the freed slots and lose the links.
# After recovery nothing is deleted any more and no store is loaded; the
# next VACUUM must still walk and link the stranded nodes.
#
# The crash is made exact by cutting the WAL right after the last record
# that frees a slot (as if the rest had never been flushed), then
# recovering.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

# A node where VACUUM consolidated half of a sparse index, stopped by a
# crash whose WAL ends right after the last record that frees a slot
# ($cut_after 'last') or the first ($cut_after 'first').  Returns the node
# (stopped) and how many slots the VACUUM freed.
sub crash_in_vacuum
{
	my ($name, $cut_after) = @_;

	# (nothing but the test writes: no autovacuum, no background writer, no
	# checkpoint while it runs)
	my $node = gateann_node($name, preload => 1, conf => qq{
	autovacuum = off
	bgwriter_lru_maxpages = 0
	checkpoint_timeout = '1h'
	max_wal_size = '4GB'
	wal_writer_delay = '10s'
	});

	# A sparse graph (4 neighbors, a prefix of 4), half of it deleted in one
	# region: the repaired lists no longer lead everywhere.  (The rows around
	# the middle stay: a deleted entry point would stay deleted, not freed,
	# until the next VACUUM, which would walk anyway.)
	$node->safe_psql('postgres', qq{
	SELECT setseed(0.5);
	CREATE TABLE t (id int, v real[]);
	@{[ random_vectors_sql('t', 4000, 8) ]}
	SET client_min_messages = warning;
	CREATE INDEX t_idx ON t USING gateann (v)
	  WITH (max_neighbors = 4, build_search_list_size = 4, alpha = 1.5, tunnel_neighbors = 4);
	RESET client_min_messages;
	CHECKPOINT;
	});
	my $index_file = $node->safe_psql('postgres', q{SELECT pg_relation_filepath('t_idx')});
	my ($spc, $db, $relnode) = (1663,
		$node->safe_psql('postgres',
			q{SELECT oid FROM pg_database WHERE datname = current_database()}),
		$node->safe_psql('postgres', q{SELECT pg_relation_filenode('t_idx')}));
	my $start_lsn = $node->safe_psql('postgres', q{SELECT pg_current_wal_insert_lsn()});

	my ($rc, $vacuum_out, $vacuum_messages) = $node->psql('postgres', q{
	SET enable_indexscan = off;
	DELETE FROM t WHERE v[1] < 0.5 AND id NOT IN
	  (SELECT id FROM t ORDER BY v <-> array_fill(0.5::real, ARRAY[8]) LIMIT 100);
	RESET enable_indexscan;
	SET client_min_messages = debug2;
	VACUUM t;
	}, on_error_stop => 1);
	is($rc, 0, 'DELETE and VACUUM ran');
	my ($freed, $relinked) =
	  $vacuum_messages =~ /"t_idx": (\d+) slots freed, \d+ neighbor lists repaired, (\d+) nodes relinked/;
	ok(defined $freed && $freed > 1000, 'VACUUM freed the slots of the deleted rows')
	  or diag($vacuum_messages);
	cmp_ok($relinked // 0, '>', 0, 'VACUUM linked nodes its consolidation had stranded');

	# A commit that flushes (its transaction has an id) puts every record of
	# the VACUUM into the WAL files, none of its pages into the index's file.
	$node->safe_psql('postgres', 'CREATE TABLE wal_flushed ()');
	my $stop_lsn = $node->safe_psql('postgres', q{SELECT pg_current_wal_flush_lsn()});
	$node->stop('immediate');

	# The records since the checkpoint: one that frees a slot logs the
	# metapage and a record's page of the index; what follows the first or
	# the last of them is lost.
	my $waldump = $node->config_data('--bindir') . '/pg_waldump';
	my ($out, $err) = run_command([ $waldump, '-p', $node->data_dir . '/pg_wal',
		'-s', $start_lsn, '-e', $stop_lsn ]);
	my @records = split /\n/, $out;
	my $rel = qr{rel $spc/$db/$relnode(?: fork main)? blk (\d+)};
	my $cut;
	for my $i (0 .. $#records - 1)
	{
		next unless $records[$i] =~ /^rmgr: Generic/;
		my @blocks = $records[$i] =~ /$rel/g;
		next unless (grep { $_ == 0 } @blocks) && (grep { $_ != 0 } @blocks);
		$cut = $i + 1;
		last if $cut_after eq 'first';
	}
	ok(defined $cut, 'the WAL holds the records that free slots') or diag($out . $err);
	my ($cut_lsn) = $records[$cut] =~ /lsn: ([0-9A-F]+\/[0-9A-F]+)/;
	ok(defined $cut_lsn, "the first record after them starts at $cut_lsn");

	# Zero the WAL from there on, as if it had never been flushed.
	my ($hi, $lo) = map { hex } split m{/}, $cut_lsn;
	my $lsn = $hi * 2**32 + $lo;
	my $seg_size = 16 * 1024 * 1024;
	my $seg_no = int($lsn / $seg_size);
	my $seg_file = sprintf('%s/pg_wal/%08X%08X%08X', $node->data_dir, 1,
		int($seg_no / 256), $seg_no % 256);
	my $offset = $lsn % $seg_size;
	open(my $fh, '+<', $seg_file) or die "cannot open $seg_file: $!";
	binmode $fh;
	seek($fh, $offset, 0);
	print $fh "\0" x ($seg_size - $offset);
	close $fh;
	# (segments past it hold nothing recovery may read either)
	for my $later (glob($node->data_dir . '/pg_wal/0*'))
	{
		my ($seg) = $later =~ m{/([0-9A-F]{24})$};
		unlink $later if defined $seg && $seg gt substr($seg_file, -24);
	}

	# No page the crash kept may be newer than the WAL that is left: the
	# stranded state is what recovery then makes of the index.
	my $index_path = $node->data_dir . '/' . $index_file;
	open($fh, '<', $index_path) or die "cannot open $index_path: $!";
	binmode $fh;
	my ($newer, $page) = (0, '');
	while (read($fh, $page, 8192) == 8192)
	{
		my ($xlogid, $xrecoff) = unpack('LL', $page);
		$newer++ if $xlogid * 2**32 + $xrecoff > $lsn;
	}
	close $fh;
	is($newer, 0, 'no index page on disk is newer than the WAL left');
	return ($node, $freed);
}

# Cut after the last slot freed: nothing is deleted any more, and the
# links are lost.
my ($node, $freed) = crash_in_vacuum('vacuum_crash', 'last');
$node->start;
is($node->safe_psql('postgres',
	qq{SELECT deleted_nodes || ' deleted, ' || (free_slots >= $freed)
  FROM gateann_index_info('t_idx')}),
	'0 deleted, true', 'recovery kept the freed slots: nothing is deleted any more');
my $stranded = $node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p});
like($stranded, qr/unreachable from the entry points/,
	'recovery lost the links: live nodes are unreachable');

# A clean restart drops the store gateann_verify loaded: the VACUUM below
# finds nothing deleted and nothing loaded.
$node->restart;
$node->safe_psql('postgres', 'VACUUM t');
is($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p}),
	'', 'the VACUUM after the crash linked them: gateann_verify finds no problem');

# Once a walk found every node reachable, a VACUUM with nothing to do
# loads nothing.
$node->restart;
$node->safe_psql('postgres', 'VACUUM t');
is($node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('t_idx')}),
	'f', 'a VACUUM with no change to check loads no store');
$node->stop;

# Cut after the first slot freed: the deleted nodes not freed yet keep
# lists that name freed slots (only live nodes' lists were repaired), which
# no scan follows (a free slot is not in the stores) and the next VACUUM
# frees with them.  gateann_verify does not call that damage.
($node, $freed) = crash_in_vacuum('vacuum_crash_first', 'first');
$node->start;
my ($deleted, $free) = split /\|/, $node->safe_psql('postgres',
	q{SELECT deleted_nodes, free_slots FROM gateann_index_info('t_idx')});
ok($deleted > 0 && $free >= 1 && $free < $freed,
	"recovery kept some freed slots ($free) and deleted nodes ($deleted)");
is($node->safe_psql('postgres', q{SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p
  WHERE p NOT LIKE '%unreachable from the entry points%'}),
	'', 'gateann_verify finds no damage in the half-consolidated index');
$node->safe_psql('postgres', 'VACUUM t');
is($node->safe_psql('postgres', q{SELECT deleted_nodes || ' deleted; ' || coalesce(
  (SELECT string_agg(p, '; ') FROM gateann_verify('t_idx') p), 'healthy')
  FROM gateann_index_info('t_idx')}),
	'0 deleted; healthy', 'the next VACUUM frees the rest and leaves every node reachable');
$node->stop;

done_testing();
