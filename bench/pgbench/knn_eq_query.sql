-- gateann bench: k-NN filtered by label equality, the label read from the query's row
-- (e.g. the label of the query's own cluster).
--   pgbench -n -f bench/pgbench/knn_eq_query.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=label -D qcolumn=near10 -c 2 -j 2 -T 60
\set qid random(1, :nq)
SELECT id FROM :table
 WHERE :fcolumn = (SELECT :qcolumn FROM :qtable WHERE qid = :qid)
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
