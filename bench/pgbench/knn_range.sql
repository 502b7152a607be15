-- gateann bench: k-NN filtered by a range on a numeric column:
--   fcolumn in [lo, lo + width), lo uniform in 0..range_max-width
-- (selectivity width/range_max when the column is uniform in [0, range_max)).
--   pgbench -n -f bench/pgbench/knn_range.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=price -D range_max=1000 -D width=100 ...
\set qid random(1, :nq)
\set lo random(0, :range_max - :width)
SELECT id FROM :table
 WHERE :fcolumn >= :lo AND :fcolumn < :lo + :width
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
