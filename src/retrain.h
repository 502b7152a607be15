/*
 * retrain.h — a quantizer for indexes that grow from few rows or none.
 *
 * CREATE INDEX trains the PQ codebook on a sample of the rows it indexes.
 * An index built on an empty table has no codebook yet, and one built on a
 * few hundred rows has a poor one for the million it may hold later.  So:
 *
 *   - the first vector inserted into an index built on no rows (or on rows
 *     of NULL vectors only) lays out its records for the vector's
 *     dimensions, trains a codebook on that one vector and copies the tail
 *     records the index holds into the new layout (bootstrap);
 *   - an index whose codebook was trained on fewer rows than a build's
 *     sample is retrained, and every PQ code re-encoded, each time its live
 *     nodes reach pq_retrain_at (x4 per step, up to the build's sample):
 *     by the insert that gets there, or by VACUUM (gateann_retrain_if_due);
 *     the filter dictionaries are chosen again from the same sample (an
 *     index built on no rows has empty ones: every scalar filter value is
 *     "unknown" to the filter store until then);
 *   - any index is retrained when the rows inserted since its training
 *     come from where the training never saw (a new region of the space):
 *     when at least 1/32 as many as the codebook was trained on (and 64),
 *     and a quarter of all inserted since, were farther from their
 *     coarse centroid than GATEANN_PQ_POOR_FACTOR times the distance
 *     between neighboring centroids (squared).  Their codes
 *     would all look alike, and a search could not tell them apart.  An
 *     insert does it up to GATEANN_RETRAIN_BY_INSERT_MAX live rows; above,
 *     VACUUM does (an insert should not wait for a re-encoding of that
 *     many records).
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
 * An inserted vector is coded poorly when its squared distance to its
 * coarse centroid is above this many times the codebook's spacing
 */
#define GATEANN_PQ_POOR_FACTOR			4.0
/* Inserts retrain indexes for poor codes up to this many live rows */
#define GATEANN_RETRAIN_BY_INSERT_MAX	65536

/* Is a vector coded `coarse_dist` from its coarse centroid poorly coded? */
static inline bool
gateann_pq_code_is_poor(const GateannMetaPageData *meta, float coarse_dist)
{
	return coarse_dist > GATEANN_PQ_POOR_FACTOR * meta->pq_spacing;
}

/*
 * Lock the index against retraining for an insert and return its metapage
 * (read under the lock) in *meta: an index that has seen no vector yet is
 * set up for `vector` (dims floats) first.  vector NULL: the insert of a
 * tail record (gateann.h), which never sets an index up; in an index that
 * has seen no vector it holds the set-up off.  Returns the lock mode held
 * (NoLock if none is needed: the codebook is final), for
 * gateann_insert_unlock.
 */
extern LOCKMODE gateann_insert_lock(Relation index, GateannMetaPageData *meta,
									const float *vector, int dims);
extern void gateann_insert_unlock(Relation index, LOCKMODE mode);

/*
 * Retrain the codebook and re-encode every node if the index has reached
 * pq_retrain_at live nodes, or its codebook codes inserted rows poorly (see
 * above; by_vacuum: the caller is VACUUM, for which size is no limit).
 * Takes the exclusive lock itself (so the caller must not hold the share
 * lock).  Returns whether it retrained.
 */
extern bool gateann_retrain_if_due(Relation index, bool by_vacuum);

/*
 * Pages of each of the two dictionary areas an index that is retrained
 * reserves (0: no filter column needs a dictionary).
 */
extern BlockNumber gateann_dict_reserve_pages(const GateannMetaPageData *meta);

#endif							/* GATEANN_RETRAIN_H */
