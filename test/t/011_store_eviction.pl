# Copyright: gateann authors.
#
# Rows inserted while the index's shared store is evicted and reloaded are
# found.  A writer's transaction keeps the store it first used; when
# gateann.max_shared_memory evicts that store and another session loads a
# new one from the pages, the writer's later inserts must reach the new
# store too.  Inserts into slots VACUUM freed are the case that nothing
# else repairs: a new node id is caught up from the pages by the next scan,
# a reused one is not.  Readers in a session opened before and in new
# sessions must find every inserted row by its own vector, and
# gateann_verify must report a store that disagrees with the records.  And a
# VACUUM that loads the store itself must still relink.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use GateannTest;

my $node = gateann_node('evict', preload => 1);

# s3: the table written; ev and ev2: those whose queries evict s3's store
# (a store is loaded, and others evicted, when it is not loaded yet).  The
# stores are of about the same size, and the budget holds one, not two.
$node->safe_psql('postgres', qq{
SELECT setseed(0.25);
CREATE TABLE s3 (id int, v real[], t int);
@{[ random_vectors_sql('s3', 6000, 32) ]}
UPDATE s3 SET t = id % 5;
CREATE INDEX s3_idx ON s3 USING gateann (v, t);
CREATE TABLE ev (id int, v real[]);
@{[ random_vectors_sql('ev', 6000, 32) ]}
CREATE INDEX ev_idx ON ev USING gateann (v);
CREATE TABLE ev2 (LIKE ev);
INSERT INTO ev2 SELECT * FROM ev;
CREATE INDEX ev2_idx ON ev2 USING gateann (v);
});
my $s3_bytes = $node->safe_psql('postgres', q{SELECT gateann_prewarm('s3_idx')});
my $ev_bytes = $node->safe_psql('postgres', q{SELECT gateann_prewarm('ev_idx')});
my $larger = $s3_bytes > $ev_bytes ? $s3_bytes : $ev_bytes;
my $smaller = $s3_bytes > $ev_bytes ? $ev_bytes : $s3_bytes;
my $budget_mb = int($larger / (1024 * 1024)) + 1;
cmp_ok($budget_mb * 1024 * 1024, '<', $s3_bytes + $ev_bytes,
	"a budget of $budget_mb MB holds one store, not both");
$node->safe_psql('postgres', qq{ALTER SYSTEM SET gateann.max_shared_memory = '${budget_mb}MB';
SELECT pg_reload_conf();});

# one KNN query through the index (ev's or s3's): loads that index's store
# (row 10 is never deleted)
sub touch
{
	my ($session, $table) = @_;
	my $sql = qq{SET enable_seqscan = off;
SELECT count(*) FROM (SELECT id FROM $table ORDER BY v <-> (SELECT v FROM $table WHERE id = 10) LIMIT 3) q;};
	return ref($session) ? $session->query_safe($sql) : $node->safe_psql('postgres', $sql);
}

sub s3_loaded
{
	return $node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('s3_idx')});
}

# rows of s3 with id >= $from that a query by their own vector does not return first
sub missing_rows
{
	my ($session, $from) = @_;
	my $sql = qq{SET enable_seqscan = off;
SELECT count(*) FROM s3 n WHERE n.id >= $from AND n.id <> (
  SELECT id FROM s3 ORDER BY v <-> n.v LIMIT 1);};
	return ref($session) ? $session->query_safe($sql) : $node->safe_psql('postgres', $sql);
}

my $reader = $node->background_psql('postgres');
my $writer = $node->background_psql('postgres');
my $next_id = 100000;

for my $round (1 .. 3)
{
	# free slots: delete rows, VACUUM
	$node->safe_psql('postgres', qq{DELETE FROM s3 WHERE id % 10 = $round AND id < 100000;
VACUUM s3;});
	my $free = $node->safe_psql('postgres', q{SELECT free_slots FROM gateann_index_info('s3_idx')});
	cmp_ok($free, '>=', 40, "round $round: VACUUM freed slots ($free)");

	touch(undef, 's3');
	# the writer's transaction gets s3's store with its first row ...
	$writer->query_safe(qq{BEGIN; INSERT INTO s3 SELECT $next_id, v, 7 FROM s3 WHERE id = 10;});
	# ... which queries of the other tables evict; the next s3 query loads a new one
	for my $other ('ev', 'ev2', 'ev', 'ev2')
	{
		last if s3_loaded() eq 'f';
		touch(undef, $other);
	}
	is(s3_loaded(), 'f', "round $round: s3's store was evicted");
	touch(undef, 's3');
	is(s3_loaded(), 't', "round $round: and loaded again");

	# the writer's next rows go into freed slots
	my $first = $next_id + 1;
	$writer->query_safe(qq{INSERT INTO s3 SELECT $first + i, array_agg(random()::real), 7
  FROM generate_series(0, 39) i, generate_series(1, 32) d GROUP BY i; COMMIT;});
	$next_id += 41;

	is(missing_rows(undef, $first), '0', "round $round: a new session finds every inserted row");
	is(missing_rows($reader, $first), '0', "round $round: a session opened before finds them");
	is($node->safe_psql('postgres', q{SELECT string_agg(p, E'\n') FROM (SELECT p FROM gateann_verify('s3_idx') p LIMIT 5) q}), '',
		"round $round: gateann_verify finds nothing wrong");
}

# --- a writer that keeps a private copy ------------------------------------------------------------
# A session whose store did not fit the budget when it first needed it (here: another load held the
# room) keeps a private copy.  Once another session has loaded the shared store, the writer's rows
# must reach that store too.
$node->safe_psql('postgres', q{DELETE FROM s3 WHERE id % 10 = 4 AND id < 100000; VACUUM s3;});
for my $other ('ev', 'ev2', 'ev')
{
	touch(undef, $other);
}
is($node->safe_psql('postgres', q{SELECT bool_or(loaded) FROM
  (SELECT loaded FROM gateann_index_info('s3_idx') UNION ALL SELECT loaded FROM gateann_index_info('ev2_idx')) q}),
	'f', 'neither s3 nor ev2 is loaded');

my $loader = $node->background_psql('postgres', on_error_stop => 0);
my $loader_pid = $loader->query_safe('SELECT pg_backend_pid()');
$loader->query_safe(q{SET gateann.load_delay = '10min'; SET enable_seqscan = off});
$loader->query_until(qr/loading/, "\\echo loading\nSELECT count(*) FROM (SELECT id FROM ev2 ORDER BY v <-> (SELECT v FROM ev2 WHERE id = 10) LIMIT 3) q;\n");
ok($node->poll_query_until('postgres',
		qq{SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = $loader_pid}),
	'another session holds the budget while it loads');

$writer->query(qq{INSERT INTO s3 SELECT $next_id, v, 7 FROM s3 WHERE id = 10;});
like($writer->{stderr}, qr/using a private copy/, 'the writer\'s store does not fit beside the load');
$writer->{stderr} = '';
$next_id++;
cmp_ok($writer->query_safe(q{SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
  WHERE name = 'gateann private store'}), '>', 0, 'the writer keeps a private copy');

$node->safe_psql('postgres', "SELECT pg_cancel_backend($loader_pid)");
eval { $loader->quit; };
touch(undef, 's3');
is($node->safe_psql('postgres', q{SELECT loaded AND shared FROM gateann_index_info('s3_idx')}), 't',
	'another session loaded the shared store');

my $first = $next_id;
$writer->query_safe(qq{INSERT INTO s3 SELECT $first + i, array_agg(random()::real), 7
  FROM generate_series(0, 39) i, generate_series(1, 32) d GROUP BY i;});
is(missing_rows(undef, $first), '0', 'a new session finds every row the writer inserted');
is($node->safe_psql('postgres', q{SELECT string_agg(p, E'\n') FROM (SELECT p FROM gateann_verify('s3_idx') p LIMIT 5) q}), '',
	'gateann_verify finds nothing wrong');

$reader->quit;
$writer->quit;

# --- VACUUM that loads the store itself -------------------------------------------------------------
# After a restart (or an eviction) VACUUM loads the store it works on.  Its own load is not a store
# "loaded since it began" (those are dropped, and relinking stops when its store was replaced):
# nodes left unreachable over the prefixes (here: after ALTER INDEX lowers tunnel_neighbors) must
# be relinked.
$node->safe_psql('postgres', qq{ALTER SYSTEM RESET gateann.max_shared_memory; SELECT pg_reload_conf();
SELECT setseed(0.7);
CREATE TABLE rl (id int, v real[]);
INSERT INTO rl SELECT g, (SELECT array_agg(((g % 9) + random() * 0.5 + 0 * d)::real)
                            FROM generate_series(1, 16) d WHERE g > 0)
  FROM generate_series(1, 3000) g;
CREATE INDEX rl_idx ON rl USING gateann (v) WITH (max_neighbors = 16);
ALTER INDEX rl_idx SET (tunnel_neighbors = 2);});
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM gateann_verify('rl_idx')}), '>', 0,
	'nodes unreachable over prefixes of 2');
$node->restart;
is($node->safe_psql('postgres', q{SELECT loaded FROM gateann_index_info('rl_idx')}), 'f',
	'no store after the restart');
$node->safe_psql('postgres', q{DELETE FROM rl WHERE id % 100 = 0; VACUUM rl;});
is($node->safe_psql('postgres', q{SELECT string_agg(p, E'\n') FROM (SELECT p FROM gateann_verify('rl_idx') p LIMIT 5) q}), '',
	'VACUUM relinked them on the store it loaded');

$node->stop;
done_testing();
