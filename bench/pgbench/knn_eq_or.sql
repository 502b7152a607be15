-- gateann bench: k-NN filtered by an OR across two columns, which the planner applies
-- above the index scan: fcolumn = v1 OR fcolumn2 = v2 (uniform in 0..nvals-1, 0..nvals2-1).
--   pgbench -n -f bench/pgbench/knn_eq_or.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=label10 -D nvals=10 \
--     -D fcolumn2=label100 -D nvals2=100 ...
\set qid random(1, :nq)
\set v1 random(0, :nvals - 1)
\set v2 random(0, :nvals2 - 1)
SELECT id FROM :table
 WHERE (:fcolumn = :v1 OR :fcolumn2 = :v2)
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
