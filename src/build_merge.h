/*
 * build_merge.h — CREATE INDEX when the vectors and the graph do not fit in
 * maintenance_work_mem: the graph is built partition by partition and the
 * partitions' lists are merged as the records are written (build_merge.c).
 *
 * The heap scan spills its vectors to a temporary file (GateannSpill) and
 * keeps a sample for training.  After training, the vectors are grouped by
 * the codebook's coarse centroids, the groups packed into partitions that
 * fit the budget, and each vector given to the partition of its group (its
 * primary) and, where there is room, to the partition of its second
 * nearest group (overlap: the edges between partitions).  Each partition's
 * graph is built in memory like a whole index's; a node's final list is its
 * primary partition's list, then the entries of its other list it lacks,
 * up to max_neighbors.
 *
 * Reachability over prefixes (reach.h) holds by construction: a node's
 * prefix is its primary partition's; each partition's repair walks and
 * links through its primary members only, from roots that are all entry
 * points of the index.  So every node is reached in the merged graph by
 * the walk that reached it in its partition.
 */
#ifndef GATEANN_BUILD_MERGE_H
#define GATEANN_BUILD_MERGE_H

#include "gateann.h"
#include "pq.h"

#include "storage/buffile.h"

/* The vectors of a build that left memory, in the heap scan's order */
typedef struct GateannSpill
{
	BufFile    *file;			/* n rows of dims floats */
	uint32		n;
	int			dims;

	/* a uniform sample for training (reservoir, deterministic) */
	float	   *sample;			/* sample_cap rows */
	int			nsample;
	int			sample_cap;
	uint64		rng;
} GateannSpill;

/*
 * Start a spill with the n vectors a build holds so far; at most
 * sample_cap of them (and of those added later) are kept as the sample.
 */
extern void gateann_spill_begin(GateannSpill *sp, const float *vectors, uint32 n, int dims,
								int sample_cap);
extern void gateann_spill_add(GateannSpill *sp, const float *v);

/* Bytes of the sample and its training scratch for a sample of n rows */
extern Size gateann_spill_sample_bytes(int n, int dims, int m);

/*
 * Bytes a partition needs per member: its vector, graph arrays, the build
 * search's 8-bit copy and stamps, the repair's walk, and with parallel
 * workers the shared copy of those.
 */
extern Size gateann_merge_member_bytes(int dims, int R, bool parallel);

/* The fewest members a partition may have */
#define GATEANN_MERGE_MIN_PARTITION		1024

typedef struct GateannMergePartition GateannMergePartition;

typedef struct GateannMergeBuild
{
	/* inputs */
	GateannSpill *spill;
	const GateannPQ *pq;
	int			R;
	int			L;
	float		alpha;
	int			r_max;
	bool		choose_r_max;
	int			nworkers;		/* per partition, 0: serial */
	uint32		capacity;		/* members per partition, at most */
	void		(*phase) (int phase, double total);
	MemoryContext memory_root;	/* whose allocations peak_memory samples */

	/* results */
	uint32		medoid;
	int			nentries;
	uint32		entries[GATEANN_MAX_ENTRIES];
	int			r_max_chosen;
	int			npartitions;
	uint64		members;		/* over all partitions (overlap included) */
	Size		peak_memory;	/* memory_root's most, sampled per partition */

	/* private */
	BufFile    *codes;			/* n codes, heap order */
	uint16	   *primary;		/* n: each node's partition */
	uint16	   *secondary;		/* n: its other one, or NO_PARTITION */
	uint32	   *primary_at;		/* n: its place among primary's members */
	uint32	   *secondary_at;	/* n: and among secondary's */
	uint32	   *new_id;			/* n: heap order -> the index's node id */
	uint32	   *old_id;			/* n: the reverse */
	GateannMergePartition *parts;
	char	   *list_buf;		/* scratch for the cursor */
} GateannMergeBuild;

/*
 * Encode and partition the spilled vectors, build every partition's graph;
 * afterwards gateann_merge_next gives the nodes in their new order.  Errors when
 * the budget cannot hold a partition of GATEANN_MERGE_MIN_PARTITION.
 */
extern void gateann_merge_build(GateannMergeBuild *mb);

/*
 * Node `id` of the index (called for 0, 1, ... in order): its place in the
 * heap scan's order (of the caller's TIDs and filter values), its vector
 * (dims floats), PQ code, merged list (room for R) and degree.
 */
extern void gateann_merge_next(GateannMergeBuild *mb, uint32 id, uint32 *heap_order,
							   float *vector, uint8 *code, uint32 *list, int *degree);

/* Memory per node of a build in partitions besides its TID and filter values */
#define GATEANN_MERGE_NODE_BYTES	(2 * sizeof(uint16) + 4 * sizeof(uint32) + 1)

/* Close the temporary files */
extern void gateann_merge_end(GateannMergeBuild *mb);

#endif							/* GATEANN_BUILD_MERGE_H */
