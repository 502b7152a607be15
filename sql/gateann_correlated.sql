-- A filter that follows the query: rows carry their cluster's label (10 %
-- of the rows each) and a query asks for the label of its own cluster, so
-- nearly every row near it matches.  A gate walk's list counts candidates
-- that may match: it reads about as many nodes as an unfiltered walk at the
-- same L, not L / 10 (the list a 10 % filter gets, which it needs when the
-- matching rows are spread out).
CREATE EXTENSION IF NOT EXISTS gateann;
SELECT setseed(0.31);
CREATE TABLE cr_centers AS
  SELECT c, array_agg((random() * 2 - 1)::real ORDER BY d) AS v
  FROM generate_series(0, 39) c, generate_series(1, 32) d GROUP BY c;
CREATE TABLE cr (id int, label int, v real[]);
INSERT INTO cr
  SELECT i, (i % 40) % 10,
         (SELECT array_agg((u.x + 0.2 * sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real
                           ORDER BY u.o)
            FROM unnest(c.v) WITH ORDINALITY u(x, o))
  FROM generate_series(1, 8000) i JOIN cr_centers c ON c.c = i % 40;
-- queries: stored rows' vectors, each with its own label
CREATE TABLE cr_q AS
  SELECT g.k, cr.v AS q, cr.label FROM generate_series(1, 20) g(k) JOIN cr ON cr.id = g.k * 397;
SET maintenance_work_mem = '256MB';
SET max_parallel_maintenance_workers = 0;	-- a deterministic (serial) build
CREATE INDEX cr_idx ON cr USING gateann (v, label);
CREATE TEMP TABLE cr_exact AS
  SELECT k, ARRAY(SELECT id FROM cr WHERE cr.label = cr_q.label ORDER BY v <-> q LIMIT 10) AS ids
  FROM cr_q;
CREATE FUNCTION cr_measure(OUT recall numeric, OUT max_visited bigint, OUT filtered boolean)
LANGUAGE plpgsql AS $$
DECLARE
  e record;
  got int[];
  hits int := 0;
  n int := 0;
  s record;
BEGIN
  max_visited := 0;
  filtered := true;
  FOR e IN SELECT x.k, x.ids, q.q, q.label FROM cr_exact x JOIN cr_q q USING (k) LOOP
    got := ARRAY(SELECT id FROM cr WHERE label = e.label ORDER BY v <-> e.q LIMIT 10);
    SELECT * INTO s FROM gateann_last_scan();
    hits := hits + cardinality(ARRAY(SELECT unnest(got) INTERSECT SELECT unnest(e.ids)));
    n := n + 1;
    max_visited := greatest(max_visited, s.visited);
    filtered := filtered AND s.filter_checks > 0;
  END LOOP;
  recall := round(hits / (10.0 * n), 2);
END $$;
SET enable_seqscan = off;
SET gateann.search_list_size = 40;
-- the index takes the filter, and finds the neighbours
SELECT recall >= 0.95 AS recall_ok, filtered FROM cr_measure();
-- reads: about L (this build: 2 L, strict_order's second round), where a
-- list of L / s read over 500
SELECT max_visited <= 100 AS reads_about_L FROM cr_measure();
-- the same filter away from the query still finds its rows (the list may
-- grow to L / s there)
SELECT count(*) AS rows_found FROM (
  SELECT id FROM cr WHERE label = (SELECT (label + 5) % 10 FROM cr_q WHERE k = 1)
  ORDER BY v <-> (SELECT q FROM cr_q WHERE k = 1) LIMIT 10) s;
-- a small L whose first round meets no matching row (the filter's rows lie
-- away from the query) is judged stuck after that round and pre-filters:
-- k rows even with iterative_scan = off (none before), and no walk across
-- the whole graph with strict_order (every node before)
SET gateann.search_list_size = 10;
SET gateann.iterative_scan = off;
SELECT count(*) AS rows_found_off FROM (
  SELECT id FROM cr WHERE label = (SELECT (label + 5) % 10 FROM cr_q WHERE k = 2)
  ORDER BY v <-> (SELECT q FROM cr_q WHERE k = 2) LIMIT 10) s;
RESET gateann.iterative_scan;
SELECT count(*) AS rows_found FROM (
  SELECT id FROM cr WHERE label = (SELECT (label + 5) % 10 FROM cr_q WHERE k = 2)
  ORDER BY v <-> (SELECT q FROM cr_q WHERE k = 2) LIMIT 10) s;
SELECT visited < 2000 AS no_full_walk, strategy FROM gateann_last_scan();
RESET gateann.search_list_size;
RESET enable_seqscan;
DROP FUNCTION cr_measure();
DROP TABLE cr, cr_q, cr_centers;
