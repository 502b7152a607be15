/*
 * order.h — the locality order of node ids, chosen when an index is built.
 *
 * Plain C (no PostgreSQL headers) and no allocation, like pq.h, so that the
 * unit tests can link it: callers pass every buffer.
 */
#ifndef GATEANN_ORDER_H
#define GATEANN_ORDER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Below this many nodes the in-memory stores fit in the CPU caches, and
 * node ids keep the order the heap scan met the rows in.
 */
#define GATEANN_ORDER_MIN_NODES		1024

/* First-level groups: the PQ's coarse centroids (GATEANN_PQ_CENTROIDS) */
#define GATEANN_ORDER_GROUPS		256

/* Scratch bytes of gateann_locality_order for n nodes. */
extern size_t gateann_locality_order_scratch_bytes(uint32_t n, int dims);

/*
 * Choose the order in which n vectors (rows of dims floats) are numbered:
 * order[new id] = old id.  The vectors are grouped by their first-level
 * group (group[i * group_stride] for vector i: the coarse centroid its PQ
 * code names, one of the 256 `coarse` centroids of dims floats), and a
 * group of 512 or more again by 256 k-means centroids of its own (seeded
 * from seed); within a group, old ids keep their order.  Deterministic.
 * check_interrupts as in pq.h.
 */
extern void gateann_locality_order(const float *vectors, uint32_t n, int dims,
								   const float *coarse, const uint8_t *group,
								   size_t group_stride, uint64_t seed,
								   uint32_t *order, void *scratch,
								   void (*check_interrupts) (void));

/*
 * gateann_locality_order in its parts, for a caller that splits the groups
 * in several processes (the result is the same): the first level numbers
 * order[0..n) by group (label, tmp: n bytes and n uint32 of scratch) and
 * fills top[g] .. top[g + 1] with group g's place in it; then each group
 * g's ids, order + top[g] .. order + top[g + 1], are split by
 * gateann_locality_split_group (scratch: gateann_locality_split_scratch_bytes
 * for the largest group; a group under 512 is left as it is).
 */
extern void gateann_locality_first_level(const float *coarse, int dims, const uint8_t *group,
										 size_t group_stride, uint32_t n, uint32_t *order,
										 uint8_t *label, uint32_t *tmp,
										 uint32_t top[GATEANN_ORDER_GROUPS + 1]);
extern size_t gateann_locality_split_scratch_bytes(uint32_t max_size, int dims);
extern void gateann_locality_split_group(const float *vectors, int dims, uint32_t *ids,
										 uint32_t size, uint64_t seed, int g, void *scratch,
										 void (*check_interrupts) (void));

/*
 * Of k centroids of dims floats, the one nearest centroid `from` that
 * skip[c] does not rule out (skip[c] != 0), or -1 when every one is
 */
extern int	gateann_nearest_unskipped(const float *centroids, int k, int dims,
									  int from, const uint8_t *skip);

/*
 * Rearrange n rows of row_bytes each in place so that row i then holds what
 * row order[i] held (order a permutation of 0..n-1).  done: (n + 7) / 8
 * zeroed bytes; tmp: row_bytes.
 */
extern void gateann_permute_rows(char *rows, size_t row_bytes, uint32_t n,
								 const uint32_t *order, uint8_t *done, char *tmp);

#endif							/* GATEANN_ORDER_H */
