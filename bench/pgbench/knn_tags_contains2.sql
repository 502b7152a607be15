-- gateann bench: k-NN filtered by a multi-label int[] column containing two different
-- random tags (tags @> ARRAY[t1, t2]), t1, t2 in 0..ntags-1.
--   pgbench -n -f bench/pgbench/knn_tags_contains2.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=tags -D ntags=10 ...
\set qid random(1, :nq)
\set t1 random(0, :ntags - 1)
\set t2 (:t1 + random(1, :ntags - 1)) % :ntags
SELECT id FROM :table
 WHERE :fcolumn @> ARRAY[:t1, :t2]::int4[]
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
