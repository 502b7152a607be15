-- gateann bench: unfiltered k-NN with a random query vector from a queries table.
-- Run with the default simple protocol (names are substituted as text), e.g.
--   PGOPTIONS='-c gateann.search_list_size=100' pgbench -n -f bench/pgbench/knn.sql \
--     -D table=items -D column=embedding -D qtable=queries -D nq=1000 -D k=10 -c 2 -j 2 -T 60
-- qtable must have columns (qid int, embedding real[]) with qid = 1..nq.
\set qid random(1, :nq)
SELECT id FROM :table
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
