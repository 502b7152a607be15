-- gateann bench: k-NN filtered by a multi-label int[] column sharing a tag with
-- two random tags (tags && ARRAY[t1, t2]), t1, t2 uniform in 0..ntags-1.
--   pgbench -n -f bench/pgbench/knn_tags_overlap.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=tags -D ntags=100 ...
\set qid random(1, :nq)
\set t1 random(0, :ntags - 1)
\set t2 random(0, :ntags - 1)
SELECT id FROM :table
 WHERE :fcolumn && ARRAY[:t1, :t2]::int4[]
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
