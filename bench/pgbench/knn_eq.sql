-- gateann bench: k-NN filtered by label equality; the label is uniform in 0..nvals-1.
--   pgbench -n -f bench/pgbench/knn_eq.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=label -D nvals=10 -c 2 -j 2 -T 60
\set qid random(1, :nq)
\set val random(0, :nvals - 1)
SELECT id FROM :table
 WHERE :fcolumn = :val
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
