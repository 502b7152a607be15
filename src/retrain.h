/*
 * retrain.h — a quantizer for indexes that grow from few rows or none.
 *
 * CREATE INDEX trains the PQ codebook on a sample of the rows it indexes.
 * An index built on an empty table has no codebook yet, and one built on a
 * few hundred rows has a poor one for the million it may hold later.  So:
 *
 *   - the first insert into an index built on no rows lays out its records
 *     for the vector's dimensions and trains a codebook on that one vector
 *     (gateann_bootstrap_index);
 *   - an index whose codebook was trained on fewer rows than a build's
 *     sample is retrained, and every PQ code re-encoded, each time its live
 *     nodes reach pq_retrain_at (x4 per step, up to the build's sample):
 *     by the insert that gets there, or by VACUUM (gateann_retrain_if_due);
 *     the filter dictionaries are chosen again from the same sample (an
 *     index built on no rows has empty ones: every scalar filter value is
 *     "unknown" to the filter store until then).
 *
 * Retraining rewrites codes in place, so no insert may encode with the old
 * codebook meanwhile: inserts into such an index hold a heavyweight lock on
 * the metapage in share mode for their duration (gateann_insert_lock), the
 * retrainer takes it exclusively, as GIN does for its pending list.
 * Scans need no lock: a store holds a codebook and codes that belong
 * together, and the new build id the retrain publishes makes the next
 * user load a fresh one.
 */
#ifndef GATEANN_RETRAIN_H
#define GATEANN_RETRAIN_H

#include "gateann.h"

/* pq_retrain_at for a codebook trained on `trained` rows (0: never again) */
extern uint32 gateann_pq_next_retrain(uint32 trained);

/*
 * Lock the index against retraining for an insert and return its metapage
 * (read under the lock) in *meta: an index built on no rows is set up for
 * `vector` (dims floats) first.  Returns the lock mode held (NoLock if
 * none is needed: the codebook is final), for gateann_insert_unlock.
 */
extern LOCKMODE gateann_insert_lock(Relation index, GateannMetaPageData *meta,
									const float *vector, int dims);
extern void gateann_insert_unlock(Relation index, LOCKMODE mode);

/*
 * Retrain the codebook and re-encode every node if the index has reached
 * pq_retrain_at live nodes.  Takes the exclusive lock itself (so the caller
 * must not hold the share lock).  Returns whether it retrained.
 */
extern bool gateann_retrain_if_due(Relation index);

/*
 * Pages of each of the two dictionary areas an index that is retrained
 * reserves (0: no filter column needs a dictionary).
 */
extern BlockNumber gateann_dict_reserve_pages(const GateannMetaPageData *meta);

#endif							/* GATEANN_RETRAIN_H */
