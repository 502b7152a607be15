-- gateann bench: k-NN filtered by a conjunction of two columns: fcolumn = v (v uniform in
-- 0..nvals-1) AND fcolumn2 in [lo, lo + width) (lo uniform in 0..range_max-width).
--   pgbench -n -f bench/pgbench/knn_eq_range.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=label10 -D nvals=10 \
--     -D fcolumn2=price -D range_max=1000 -D width=200 ...
\set qid random(1, :nq)
\set val random(0, :nvals - 1)
\set lo random(0, :range_max - :width)
SELECT id FROM :table
 WHERE :fcolumn = :val AND :fcolumn2 >= :lo AND :fcolumn2 < :lo + :width
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
