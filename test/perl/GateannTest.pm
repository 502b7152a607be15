# Copyright: gateann authors.
#
# The set-up the TAP tests (test/t) share: a started node with the extension
# created, a streaming standby of it, and the SQL of a table of random
# vectors.  The Makefile's check-tap puts test/perl on prove's @INC.

package GateannTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;

our @EXPORT = qw(gateann_node gateann_standby random_vectors_sql single_row_inserts_sql
  indexed_items_sql loaded_tenant_table_sql crc32c);

# A started node where CREATE EXTENSION gateann is done (database postgres).
#   preload => 1     shared_preload_libraries = 'gateann' (shared stores)
#   streaming => 1   a primary: allows_streaming, replay of generic WAL
#                    records checked against full-page images, and WAL kept
#                    for a standby that lags (it is slow: it compares images)
#   conf => '...'    more postgresql.conf lines
#   checksums => 0/1 data checksums off / on (default: initdb's, which is
#                    off before PostgreSQL 18 and on from 18)
sub gateann_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	my @initdb;

	if (defined $opt{checksums})
	{
		# --no-data-checksums exists from PostgreSQL 17, the first with
		# anything to turn off is 18
		push @initdb, '--data-checksums' if $opt{checksums};
		push @initdb, '--no-data-checksums'
		  if !$opt{checksums} && $node->pg_version >= 18;
	}
	$node->init(($opt{streaming} ? (allows_streaming => 1) : ()),
		(@initdb ? (extra => \@initdb) : ()));
	my $conf = "maintenance_work_mem = '256MB'\n";
	$conf .= "shared_preload_libraries = 'gateann'\n" if $opt{preload};
	$conf .= "wal_consistency_checking = 'generic'\nwal_keep_size = '1GB'\n"
	  if $opt{streaming};
	$conf .= "$opt{conf}\n" if defined $opt{conf};
	$node->append_conf('postgresql.conf', $conf);
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION gateann');
	return $node;
}

# A started streaming standby of $primary from a backup taken now; it gets
# what the primary does afterwards through WAL alone.
#   preload => 1     shared_preload_libraries = 'gateann' on the standby
sub gateann_standby
{
	my ($primary, $name, %opt) = @_;
	my $standby = PostgreSQL::Test::Cluster->new($name);

	$primary->backup("${name}_base");
	$standby->init_from_backup($primary, "${name}_base", has_streaming => 1);
	$standby->append_conf('postgresql.conf', "shared_preload_libraries = 'gateann'")
	  if $opt{preload};
	$standby->start;
	return $standby;
}

# INSERT of rows 1..$n of (id, vector of $dims random() values) into $table
sub random_vectors_sql
{
	my ($table, $n, $dims) = @_;
	return "INSERT INTO $table SELECT i, "
	  . "(SELECT array_agg(random()::real) FROM generate_series(1, $dims) WHERE i > 0) "
	  . "FROM generate_series(1, $n) i;";
}

# Table items of $n random $dims-dimensional rows (random() seeded with
# $seed) with a gateann index items_idx, table queries (q, v) of every
# $every-th row, and a checkpoint (the files hold what shared buffers do)
sub indexed_items_sql
{
	my ($seed, $n, $dims, $every) = @_;
	return "SELECT setseed($seed);\n"
	  . "CREATE TABLE items (id int, v real[]);\n"
	  . random_vectors_sql('items', $n, $dims) . "\n"
	  . "CREATE INDEX items_idx ON items USING gateann (v);\n"
	  . "CREATE TABLE queries AS SELECT id AS q, v FROM items WHERE id % $every = 0;\n"
	  . "CHECKPOINT;";
}

# Table t (id int PRIMARY KEY, v real[], meta jsonb) of $n random
# $dims-dimensional rows (random() seeded with $seed), meta {"tenant": id %
# 10}, a gateann index t_idx on (v, meta), and one scan, which loads its
# stores: the set-up of the VACUUM tests
sub loaded_tenant_table_sql
{
	my ($seed, $n, $dims) = @_;
	return "SELECT setseed($seed);\n"
	  . "CREATE TABLE t (id int PRIMARY KEY, v real[], meta jsonb);\n"
	  . random_vectors_sql('t', $n, $dims) . "\n"
	  . "UPDATE t SET meta = jsonb_build_object('tenant', id % 10);\n"
	  . "CREATE INDEX t_idx ON t USING gateann (v, meta);\n"
	  . "SET enable_seqscan = off;\n"
	  . "SELECT count(*) FROM (SELECT id FROM t ORDER BY v <-> (SELECT v FROM t WHERE id = 1) LIMIT 10) s;\n"
	  . "RESET enable_seqscan;";
}

# $count rows of (id, vector of $dims random() values) into $table, ids
# $base + 1 .. $base + $count, each in a statement of its own (every insert
# takes its own slot and neighbors, as single-row writes do)
sub single_row_inserts_sql
{
	my ($table, $base, $count, $dims) = @_;
	return "DO \$\$ BEGIN FOR i IN 1..$count LOOP "
	  . "INSERT INTO $table SELECT $base + i, array_agg(random()::real) "
	  . "FROM generate_series(1, $dims); END LOOP; END \$\$;";
}

# CRC-32C of a byte string, as PostgreSQL's INIT/COMP/FIN_CRC32C compute it
# (a record's check: src/page.h), bit by bit: tests check a few records.
sub crc32c
{
	my ($bytes) = @_;
	my $crc = 0xFFFFFFFF;

	for my $byte (unpack('C*', $bytes))
	{
		$crc ^= $byte;
		$crc = ($crc & 1) ? (($crc >> 1) ^ 0x82F63B78) : ($crc >> 1) for 1 .. 8;
	}
	return $crc ^ 0xFFFFFFFF;
}

1;
