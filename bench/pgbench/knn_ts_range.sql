-- gateann bench: k-NN filtered by a time window [lo, lo + width) on a timestamptz column;
-- lo is uniform in unix seconds ts_lo .. ts_hi - width.
--   pgbench -n -f bench/pgbench/knn_ts_range.sql -D table=items -D column=embedding \
--     -D qtable=queries -D nq=1000 -D k=10 -D fcolumn=ts -D ts_lo=1577836800 \
--     -D ts_hi=1735689600 -D width=2592000 -c 2 -j 2 -T 60
\set qid random(1, :nq)
\set lo random(:ts_lo, :ts_hi - :width)
SELECT id FROM :table
 WHERE :fcolumn >= to_timestamp(:lo) AND :fcolumn < to_timestamp(:lo + :width)
 ORDER BY :column <-> (SELECT embedding FROM :qtable WHERE qid = :qid)
 LIMIT :k;
