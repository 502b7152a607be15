-- Partitioning by vector cluster and routing a query to the nearest
-- clusters' partitions: gateann_kmeans (aggregate) and
-- gateann_nearest_centroid (src/routing.c)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gateann;
CREATE FUNCTION rt_noise(i int, j int) RETURNS real LANGUAGE sql IMMUTABLE
  AS $$ SELECT (((abs(sin(i * 12.9898 + j * 78.233)) * 43758.5453)::numeric % 1) - 0.5)::real $$;
-- 1,600 rows: 4 clusters of 400 in 8 dimensions, centre c at 10 (c + 1) in
-- dimension c + 1, noise within 0.5
CREATE TABLE rt (id int, truth int, v real[]);
INSERT INTO rt SELECT i, i % 4,
  ARRAY(SELECT (CASE WHEN j = i % 4 + 1 THEN 10 * (i % 4 + 1) ELSE 0 END + rt_noise(i, j))::real
        FROM generate_series(1, 8) j)
  FROM generate_series(1, 1600) i;
CREATE TABLE rt_centroids AS SELECT gateann_kmeans(v, 4) AS c FROM rt;
SELECT array_dims(c) FROM rt_centroids;
-- the clusters found are the true ones (each true cluster in one, four in all)
SELECT count(DISTINCT gateann_nearest_centroid(v, c)) AS clusters,
       count(DISTINCT (truth, gateann_nearest_centroid(v, c))) AS pairs
  FROM rt, rt_centroids;
-- one sample, one result (a fixed seed); rows without a vector left out
SELECT gateann_kmeans(v, 4) = (SELECT c FROM rt_centroids) AS same
  FROM (SELECT v FROM rt UNION ALL SELECT NULL) s;
-- ranks 1 .. k name every cluster once
SELECT array_agg(gateann_nearest_centroid(v, c, r) ORDER BY r) AS by_rank
  FROM rt, rt_centroids, generate_series(1, 4) r WHERE id = 7 GROUP BY id;
SELECT gateann_kmeans(v, 2) IS NULL AS no_rows FROM rt WHERE false;

-- A table partitioned by the nearest centre, a gateann index on every
-- partition; a query visits the partitions of its nearest m clusters
CREATE TABLE rtp (id int, cluster int, v real[]) PARTITION BY LIST (cluster);
CREATE TABLE rtp_0 PARTITION OF rtp FOR VALUES IN (0);
CREATE TABLE rtp_1 PARTITION OF rtp FOR VALUES IN (1);
CREATE TABLE rtp_2 PARTITION OF rtp FOR VALUES IN (2);
CREATE TABLE rtp_3 PARTITION OF rtp FOR VALUES IN (3);
INSERT INTO rtp SELECT id, gateann_nearest_centroid(v, c), v FROM rt, rt_centroids;
CREATE INDEX ON rtp USING gateann (v);
SELECT count(*) AS rows_in_their_cluster FROM rtp, rt_centroids
  WHERE gateann_nearest_centroid(v, c) = cluster;
SET enable_seqscan = off;
SET max_parallel_workers_per_gather = 0;
-- plan-time pruning: the query and the centres as constants
SELECT (SELECT c FROM rt_centroids) AS c \gset
EXPLAIN (COSTS OFF) SELECT id FROM rtp
  WHERE cluster IN (gateann_nearest_centroid('{0,0,31,0,0,0,0,0}', :'c'::real[], 1),
                    gateann_nearest_centroid('{0,0,31,0,0,0,0,0}', :'c'::real[], 2))
  ORDER BY v <-> '{0,0,31,0,0,0,0,0}' LIMIT 10;
-- when the executor starts: parameters of a generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE routed(real[], real[]) AS SELECT id FROM rtp
  WHERE cluster IN (gateann_nearest_centroid($1, $2, 1)) ORDER BY v <-> $1 LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE routed('{0,0,31,0,0,0,0,0}', :'c');
-- the rows: the exact 10 nearest (all in the nearest cluster)
CREATE TEMP TABLE rt_got AS EXECUTE routed('{0,0,31,0,0,0,0,0}', :'c');
SELECT count(*) AS of_the_exact_10 FROM rt_got JOIN (SELECT id FROM rt
  ORDER BY v <-> '{0,0,31,0,0,0,0,0}' LIMIT 10) e USING (id);
-- a client binds a list of floats as double precision[]: the same
-- clusters (real[] centres are cast), the same pruning, the same rows
SELECT gateann_nearest_centroid('{0,0,31,0,0,0,0,0}'::float8[], c) AS f8_query,
       gateann_nearest_centroid('{0,0,31,0,0,0,0,0}'::float8[], c::float8[], 2) AS f8_both,
       gateann_nearest_centroid('{0,0,31,0,0,0,0,0}', c) AS real_first,
       gateann_nearest_centroid('{0,0,31,0,0,0,0,0}', c, 2) AS real_second
  FROM rt_centroids;
PREPARE routed8(float8[], float8[]) AS SELECT id FROM rtp
  WHERE cluster IN (gateann_nearest_centroid($1, $2, 1)) ORDER BY v <-> $1 LIMIT 10;
EXPLAIN (COSTS OFF) EXECUTE routed8('{0,0,31,0,0,0,0,0}', :'c');
CREATE TEMP TABLE rt_got8 AS EXECUTE routed8('{0,0,31,0,0,0,0,0}', :'c');
SELECT count(*) AS same_rows FROM rt_got8 JOIN rt_got USING (id);
RESET plan_cache_mode;
RESET max_parallel_workers_per_gather;
RESET enable_seqscan;

-- errors that say what to give instead
SELECT gateann_kmeans(v, 0) FROM rt;
SELECT gateann_kmeans(v, NULL) FROM rt;
SELECT gateann_kmeans(v, 5) FROM rt WHERE id <= 3;
SELECT gateann_kmeans(v, id % 2 + 1) FROM rt WHERE id <= 4;
SELECT gateann_kmeans(v, 2) FROM (VALUES ('{1,2}'::real[]), ('{1,2,3}')) t(v);
SELECT gateann_kmeans(v, 1) FROM (VALUES ('{1,NaN}'::real[])) t(v);
SELECT gateann_nearest_centroid('{1,2,3}', c) FROM rt_centroids;
SELECT gateann_nearest_centroid('{0,0,31,0,0,0,0,0}', c, 5) FROM rt_centroids;
SELECT gateann_nearest_centroid('{1,2}'::real[], '{1,2}');
SELECT gateann_nearest_centroid('{1,2}'::real[], '{{1,2},{3,NULL}}');
SELECT gateann_nearest_centroid('{1,2}'::float8[], '{{1,2},{3,1e300}}');
-- two literals: either function fits, the caller says which type
SELECT gateann_nearest_centroid('{1,2}', '{{1,2},{3,4}}');
DROP TABLE rt, rt_centroids, rtp;
DROP FUNCTION rt_noise(int, int);
