-- gateann bench: k-NN filtered by a multi-label int[] column containing one tag
-- (tags @> ARRAY[t]), t uniform in 0..ntags-1.
--   pgbench -n -f bench/pgbench/knn_tags_contains.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=tags -D ntags=10 ...
\set qid random(1, :nq)
\set tag random(0, :ntags - 1)
SELECT id FROM :table
 WHERE :fcolumn @> ARRAY[:tag]::int4[]
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
