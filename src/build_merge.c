/*
 * build_merge.c — a build in partitions, for vectors and graphs larger than
 * maintenance_work_mem (build_merge.h says what and why).
 *
 * Passes over the spilled vectors, each sequential:
 *   1. encode every vector (codes to a temporary file) and note its nearest
 *      coarse centroid (its group), the group sizes, and each group's
 *      member nearest its centroid (an entry point);
 *   2. pack the groups into partitions (a group larger than a partition's
 *      share is split into parts); give each node its primary partition
 *      and, while that partition has room, a secondary one; copy each
 *      vector into the temporary file of each of its partitions;
 *   3. per partition: read its file, build its graph (graph.c, with its
 *      secondary members marked foreign), write each member's list with
 *      global ids to the partition's list file;
 *   4. (gateann_merge_next, as the caller writes records) the nodes in
 *      their new order: partition by partition, group by group within one
 *      (so that a search finds the nodes it touches in the in-memory stores
 *      close together, as the in-memory build's locality order does), heap
 *      order within a group; each node's vector, code and one or two lists
 *      read where they are (forward within a partition's files, mostly).
 * Per node, memory keeps its two partitions, its place in their list files
 * and its new id both ways (GATEANN_MERGE_NODE_BYTES).
 */
#include "postgres.h"

#include "build_merge.h"
#include "compat.h"
#include "distance.h"
#include "graph.h"
#include "order.h"
#include "parallel.h"

#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"

#define NO_PARTITION		0xFFFF
/* partitions at most: each needs its root among the entry points */
#define MAX_PARTITIONS		(GATEANN_MAX_ENTRIES - 1)
/* rows read from a file at a time */
#define READ_CHUNK_ROWS		64

struct GateannMergePartition
{
	uint32		primaries;		/* nodes whose partition this is */
	uint32		members;		/* primaries and secondary members */
	uint32		root;			/* a primary member: an entry point */
	int			seed_group;		/* the group it was formed around */
	BufFile    *vectors;		/* members' vectors, heap order (pass 2-3) */
	BufFile    *lists;			/* members' lists (pass 3-4) */
};

/* One list in a list file: degree, then R ids (unused: InvalidNodeId) */
static inline Size
list_record_bytes(int R)
{
	return sizeof(uint16) + sizeof(uint32) * R;
}

static void
file_read(BufFile *file, void *ptr, Size bytes)
{
	size_t		got = BufFileRead(file, ptr, bytes);

	if (got != bytes)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from gateann build temporary file: read only %zu of %zu bytes",
						got, (Size) bytes)));
}

/* Read bytes at byte position pos of file */
static void
file_read_at(BufFile *file, uint64 pos, void *ptr, Size bytes)
{
	if (BufFileSeekBlock(file, (long) (pos / BLCKSZ)) != 0 ||
		BufFileSeek(file, 0, (off_t) (pos % BLCKSZ), SEEK_CUR) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not seek in gateann build temporary file")));
	file_read(file, ptr, bytes);
}

static void
file_rewind(BufFile *file)
{
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind gateann build temporary file")));
}

/* ----------------------------------------------------------------
 * The spill
 * ----------------------------------------------------------------
 */

Size
gateann_spill_sample_bytes(int n, int dims, int m)
{
	return (Size) n * sizeof(float) * dims + gateann_pq_train_scratch_bytes(n, dims, m);
}

static void
sample_row(GateannSpill *sp, const float *v)
{
	Size		row = sizeof(float) * sp->dims;

	/* reservoir sampling: row i replaces a kept one with chance cap/(i+1) */
	if (sp->nsample < sp->sample_cap)
		memcpy(sp->sample + (Size) sp->nsample++ * sp->dims, v, row);
	else
	{
		uint64		j = gateann_random_next(&sp->rng) % ((uint64) sp->n + 1);

		if (j < (uint64) sp->sample_cap)
			memcpy(sp->sample + (Size) j * sp->dims, v, row);
	}
}

void
gateann_spill_begin(GateannSpill *sp, const float *vectors, uint32 n, int dims,
					int sample_cap)
{
	uint32		i;

	memset(sp, 0, sizeof(*sp));
	sp->dims = dims;
	sp->sample_cap = Max(sample_cap, 1);
	sp->sample = palloc_extended(sizeof(float) * dims * (Size) sp->sample_cap,
								 MCXT_ALLOC_HUGE);
	sp->rng = GATEANN_PQ_SEED;
	sp->file = BufFileCreateTemp(false);
	for (i = 0; i < n; i++)
	{
		gateann_spill_add(sp, vectors + (Size) i * dims);
		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
}

void
gateann_spill_add(GateannSpill *sp, const float *v)
{
	sample_row(sp, v);
	gateann_buffile_write(sp->file, v, sizeof(float) * sp->dims);
	sp->n++;
}

Size
gateann_merge_member_bytes(int dims, int R, bool parallel)
{
	/* vector, graph arrays, stamp, 8-bit copy, member id, walk (3 ids) */
	Size		graph = gateann_graph_array_bytes(1, R);
	Size		bytes = sizeof(float) * dims + graph + sizeof(uint32) + dims +
		sizeof(uint32) + 3 * sizeof(uint32) + 1;

	/* the shared segment: vectors, 8-bit copy, arrays and a lock again */
	if (parallel)
		bytes += sizeof(float) * dims + dims + graph + sizeof(slock_t);
	return bytes;
}

/* ----------------------------------------------------------------
 * Pass 1: codes and groups
 * ----------------------------------------------------------------
 */

typedef struct Groups
{
	uint8	   *first;			/* n: nearest coarse centroid */
	uint32		count[GATEANN_PQ_CENTROIDS];
	uint32		medoid[GATEANN_PQ_CENTROIDS];	/* member nearest the centroid */
	float		medoid_dist[GATEANN_PQ_CENTROIDS];
	float	   *medoid_vec;		/* 256 * dims */
	double	   *mean;			/* dims */
	/* how groups map to partitions: parts first_part .. + nsplit - 1 */
	int			first_part[GATEANN_PQ_CENTROIDS];
	int			nsplit[GATEANN_PQ_CENTROIDS];
	/* the groups in the order partitions took them: the nodes' new order */
	int			order[GATEANN_PQ_CENTROIDS];
	int			norder;
} Groups;

static void
encode_pass(GateannMergeBuild *mb, Groups *gr)
{
	GateannSpill *sp = mb->spill;
	const GateannPQ *pq = mb->pq;
	int			dims = sp->dims;
	Size		cb = gateann_pq_code_bytes(pq->m);
	float	   *v = palloc(sizeof(float) * dims);
	float	   *work = palloc(sizeof(float) * dims);
	uint8	   *code = palloc(cb);
	uint32		id;
	int			g;

	gr->first = palloc_extended(sp->n, MCXT_ALLOC_HUGE);
	gr->medoid_vec = palloc(sizeof(float) * dims * GATEANN_PQ_CENTROIDS);
	gr->mean = palloc0(sizeof(double) * dims);
	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
	{
		gr->count[g] = 0;
		gr->medoid[g] = InvalidNodeId;
	}
	file_rewind(sp->file);
	for (id = 0; id < sp->n; id++)
	{
		int			a;
		int			d;
		float		dist;

		file_read(sp->file, v, sizeof(float) * dims);
		(void) gateann_pq_encode(pq, v, code, work, &dist);
		gateann_buffile_write(mb->codes, code, cb);

		a = gateann_pq_code_group(code, pq->m);
		gr->first[id] = (uint8) a;
		gr->count[a]++;
		if (gr->medoid[a] == InvalidNodeId || dist < gr->medoid_dist[a])
		{
			gr->medoid[a] = id;
			gr->medoid_dist[a] = dist;
			memcpy(gr->medoid_vec + (Size) a * dims, v, sizeof(float) * dims);
		}
		for (d = 0; d < dims; d++)
			gr->mean[d] += v[d];
		if ((id & 4095) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, id);
		}
	}
	pfree(v);
	pfree(work);
	pfree(code);
}

/* ----------------------------------------------------------------
 * Pass 2: partitions
 * ----------------------------------------------------------------
 */

/* Members of part j of a group of `count` split into s parts */
static inline uint32
split_share(uint32 count, int s, int j)
{
	return count / s + ((uint32) j < count % s ? 1 : 0);
}

/*
 * Pack the groups into partitions of at most `share` primaries each: the
 * largest group left seeds a partition, which takes the groups nearest it
 * that still fit; a group larger than share is split into parts of its own.
 */
static int
form_partitions(GateannMergeBuild *mb, Groups *gr, uint32 share)
{
	const float *coarse = mb->pq->coarse;
	int			dims = mb->spill->dims;
	bool		placed[GATEANN_PQ_CENTROIDS];
	int			nparts = 0;
	int			g;

	gr->norder = 0;
	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
	{
		placed[g] = (gr->count[g] == 0);
		gr->first_part[g] = -1;
		gr->nsplit[g] = 0;
	}
	mb->parts = palloc0(sizeof(GateannMergePartition) * MAX_PARTITIONS);
	for (;;)
	{
		int			seed = -1;
		uint32		total;
		int			s;

		for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
			if (!placed[g] && (seed < 0 || gr->count[g] > gr->count[seed]))
				seed = g;
		if (seed < 0)
			break;
		s = (int) ((gr->count[seed] + share - 1) / share);
		if (nparts + s > MAX_PARTITIONS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gateann index build would need more than %d partitions of %u vectors for %u vectors",
							MAX_PARTITIONS, share, mb->spill->n),
					 errhint("Increase maintenance_work_mem.")));
		placed[seed] = true;
		gr->order[gr->norder++] = seed;
		gr->first_part[seed] = nparts;
		gr->nsplit[seed] = s;
		for (g = 0; g < s; g++)
		{
			mb->parts[nparts + g].primaries = split_share(gr->count[seed], s, g);
			mb->parts[nparts + g].seed_group = seed;
			mb->parts[nparts + g].root = InvalidNodeId;
		}
		nparts += s;
		if (s > 1)
			continue;

		/* fill the partition with the nearest groups that fit */
		total = gr->count[seed];
		for (;;)
		{
			uint8		skip[GATEANN_PQ_CENTROIDS];
			int			best;

			for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
				skip[g] = placed[g] || total + gr->count[g] > share;
			best = gateann_nearest_unskipped(coarse, GATEANN_PQ_CENTROIDS, dims, seed, skip);
			if (best < 0)
				break;
			placed[best] = true;
			gr->order[gr->norder++] = best;
			gr->first_part[best] = nparts - 1;
			gr->nsplit[best] = 1;
			total += gr->count[best];
		}
		mb->parts[nparts - 1].primaries = total;
	}
	return nparts;
}

/* Partitions that are parts of a split group */
static int
split_parts(const Groups *gr)
{
	int			parts = 0;
	int			g;

	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
		if (gr->nsplit[g] > 1)
			parts += gr->nsplit[g];
	return parts;
}

/* The partition of node id of group g, the rank-th of its group */
static inline int
part_of(const Groups *gr, int g, uint32 rank)
{
	return gr->first_part[g] + (int) (rank % (uint32) gr->nsplit[g]);
}

/*
 * Give every node its partitions, and each partition its root: the group
 * medoid of its seed group if that lands in it, else its first primary
 * member of that group.  A node's second partition is the one of the
 * nearest coarse centroid outside its own (the boundary it lies nearest:
 * its second nearest centroid is mostly in its own partition, which packs
 * neighbouring groups); a part of a split group takes the next part.
 * Copies the vectors into the partitions' files.
 */
static void
assign_pass(GateannMergeBuild *mb, Groups *gr, uint32 capacity)
{
	GateannSpill *sp = mb->spill;
	int			dims = sp->dims;
	uint32		rank[GATEANN_PQ_CENTROIDS];
	float		dist[GATEANN_PQ_CENTROIDS];
	float	   *v = palloc(sizeof(float) * dims);
	int			slot_start[GATEANN_PQ_CENTROIDS];
	uint32	   *next_new = palloc(sizeof(uint32) * (mb->npartitions + GATEANN_PQ_CENTROIDS));
	uint32	   *seen = palloc0(sizeof(uint32) * mb->npartitions);
	uint32		at = 0;
	int			nslots = 0;
	uint32		id;
	int			k,
				p;

	memset(rank, 0, sizeof(rank));
	mb->primary = palloc_extended(sizeof(uint16) * (Size) sp->n, MCXT_ALLOC_HUGE);
	mb->secondary = palloc_extended(sizeof(uint16) * (Size) sp->n, MCXT_ALLOC_HUGE);
	mb->primary_at = palloc_extended(sizeof(uint32) * (Size) sp->n, MCXT_ALLOC_HUGE);
	mb->secondary_at = palloc_extended(sizeof(uint32) * (Size) sp->n, MCXT_ALLOC_HUGE);
	mb->new_id = palloc_extended(sizeof(uint32) * (Size) sp->n, MCXT_ALLOC_HUGE);
	mb->old_id = palloc_extended(sizeof(uint32) * (Size) sp->n, MCXT_ALLOC_HUGE);
	for (p = 0; p < mb->npartitions; p++)
	{
		mb->parts[p].members = mb->parts[p].primaries;
		mb->parts[p].vectors = BufFileCreateTemp(false);
	}

	/*
	 * The new ids: a slot per (group, part of it) in the order partitions
	 * took the groups, each as many ids as the part has nodes
	 */
	for (k = 0; k < gr->norder; k++)
	{
		int			g = gr->order[k];
		int			j;

		slot_start[g] = nslots;
		for (j = 0; j < gr->nsplit[g]; j++)
		{
			next_new[nslots++] = at;
			at += gr->nsplit[g] > 1 ? split_share(gr->count[g], gr->nsplit[g], j) : gr->count[g];
		}
	}
	Assert(at == sp->n);
	file_rewind(sp->file);
	for (id = 0; id < sp->n; id++)
	{
		int			a = gr->first[id];
		int			q = NO_PARTITION;
		uint32		r = rank[a]++;

		file_read(sp->file, v, sizeof(float) * dims);
		p = part_of(gr, a, r);
		if (gr->nsplit[a] > 1)
			q = gr->first_part[a] + (int) ((r + 1) % (uint32) gr->nsplit[a]);
		else
		{
			int			b = -1;
			int			g;

			gateann_pq_l2_table(mb->pq->coarse, v, dims, dist);
			for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
				if (gr->first_part[g] >= 0 && gr->first_part[g] != p &&
					(b < 0 || dist[g] < dist[b]))
					b = g;
			if (b >= 0)
				q = part_of(gr, b, id);
		}
		if (q == p || (q != NO_PARTITION && mb->parts[q].members >= capacity))
			q = NO_PARTITION;
		mb->primary[id] = (uint16) p;
		mb->secondary[id] = (uint16) q;
		mb->primary_at[id] = seen[p]++;
		mb->secondary_at[id] = q != NO_PARTITION ? seen[q]++ : 0;
		k = slot_start[a] + (p - gr->first_part[a]);
		mb->new_id[id] = next_new[k]++;
		mb->old_id[mb->new_id[id]] = id;
		gateann_buffile_write(mb->parts[p].vectors, v, sizeof(float) * dims);
		if (q != NO_PARTITION)
		{
			mb->parts[q].members++;
			gateann_buffile_write(mb->parts[q].vectors, v, sizeof(float) * dims);
		}
		if (a == mb->parts[p].seed_group &&
			(mb->parts[p].root == InvalidNodeId || id == gr->medoid[a]))
			mb->parts[p].root = id;
		if ((id & 4095) == 0)
		{
			CHECK_FOR_INTERRUPTS();
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, id);
		}
	}
	pfree(v);
	pfree(next_new);
	pfree(seen);
	for (p = 0; p < mb->npartitions; p++)
		mb->members += mb->parts[p].members;
}

/*
 * The index's entry points: the group medoid nearest the mean first, every
 * partition's root, then other group medoids while there is room.
 */
static void
choose_entries(GateannMergeBuild *mb, const Groups *gr)
{
	int			dims = mb->spill->dims;
	float	   *mean = palloc(sizeof(float) * dims);
	float		bestd = 0;
	int			best = -1;
	int			g,
				p,
				d;

	for (d = 0; d < dims; d++)
		mean[d] = (float) (gr->mean[d] / Max(mb->spill->n, 1));
	for (g = 0; g < GATEANN_PQ_CENTROIDS; g++)
	{
		float		dist;

		if (gr->medoid[g] == InvalidNodeId)
			continue;
		dist = gateann_l2sq(mean, gr->medoid_vec + (Size) g * dims, dims);
		if (best < 0 || dist < bestd)
		{
			best = g;
			bestd = dist;
		}
	}
	pfree(mean);
	Assert(best >= 0);
	mb->medoid = gr->medoid[best];
	mb->nentries = 0;
	mb->entries[mb->nentries++] = mb->medoid;
	for (p = 0; p < mb->npartitions; p++)
	{
		Assert(mb->parts[p].root != InvalidNodeId);
		if (mb->parts[p].root != mb->medoid)
			mb->entries[mb->nentries++] = mb->parts[p].root;
	}
	for (g = 0; g < GATEANN_PQ_CENTROIDS && mb->nentries < GATEANN_MAX_ENTRIES; g++)
	{
		int			e;

		if (gr->medoid[g] == InvalidNodeId)
			continue;
		for (e = 0; e < mb->nentries && mb->entries[e] != gr->medoid[g]; e++)
			;
		if (e == mb->nentries)
			mb->entries[mb->nentries++] = gr->medoid[g];
	}
}

/* ----------------------------------------------------------------
 * Pass 3: the partitions' graphs
 * ----------------------------------------------------------------
 */

/* progress of the partition phase: members done before this partition */
static uint64 progress_base;

static void
partition_progress(int pass, uint32 done, uint32 total)
{
	uint64		at = progress_base + (pass == 1 ? done / 2 : total / 2 + done / 2);

	CHECK_FOR_INTERRUPTS();
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, (int64) at);
}

static void
build_partition(GateannMergeBuild *mb, int p, bool first)
{
	GateannMergePartition *part = &mb->parts[p];
	GateannSpill *sp = mb->spill;
	int			dims = sp->dims;
	uint32		n = part->members;
	uint32	   *members = palloc_extended(sizeof(uint32) * (Size) Max(n, 1), MCXT_ALLOC_HUGE);
	uint8	   *foreign = palloc_extended(((Size) n + 7) / 8, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	float	   *vectors = palloc_extended(sizeof(float) * dims * (Size) Max(n, 1),
										  MCXT_ALLOC_HUGE);
	uint32		entries[GATEANN_MAX_ENTRIES];
	int			nentries = 0;
	GateannGraph graph;
	char	   *rec;
	Size		recbytes = list_record_bytes(mb->R);
	uint32		id,
				i;
	int			e;

	/*
	 * members in heap order: the order their vectors were written in, and
	 * what primary_at / secondary_at count
	 */
	i = 0;
	for (id = 0; id < sp->n; id++)
	{
		if ((id & 65535) == 0)
			CHECK_FOR_INTERRUPTS();
		if (mb->primary[id] == p)
			members[i++] = id;
		else if (mb->secondary[id] == p)
		{
			foreign[i >> 3] |= 1 << (i & 7);
			members[i++] = id;
		}
	}
	Assert(i == n);
	file_rewind(part->vectors);
	file_read(part->vectors, vectors, sizeof(float) * dims * (Size) n);
	BufFileClose(part->vectors);
	part->vectors = NULL;

	/* its root first, then the index's other entry points among its own */
	entries[nentries++] = mb->primary_at[part->root];
	for (e = 0; e < mb->nentries; e++)
		if (mb->primary[mb->entries[e]] == p && mb->entries[e] != part->root)
			entries[nentries++] = mb->primary_at[mb->entries[e]];

	memset(&graph, 0, sizeof(graph));
	graph.dims = dims;
	graph.n = n;
	graph.vectors = vectors;
	graph.R = mb->R;
	graph.foreign = foreign;
	if (mb->nworkers <= 0 || n < GATEANN_PARALLEL_MIN_NODES ||
		!gateann_graph_build_parallel(&graph, entries, nentries, mb->L, mb->alpha,
									  mb->r_max, first && mb->choose_r_max,
									  mb->nworkers, partition_progress))
		gateann_graph_build(&graph, entries, nentries, mb->L, mb->alpha, mb->r_max,
							first && mb->choose_r_max, partition_progress);
	if (first)
		mb->r_max_chosen = graph.r_max;

	/* the lists, with global ids (the file made in the build's context) */
	rec = palloc(recbytes);
	for (i = 0; i < n; i++)
	{
		uint16		deg = graph.degree[i];
		const uint32 *list = graph.adj + (Size) i * graph.capacity;
		uint32	   *ids = (uint32 *) (rec + sizeof(uint16));
		int			k;

		memcpy(rec, &deg, sizeof(uint16));
		for (k = 0; k < mb->R; k++)
		{
			uint32		global = k < deg ? members[list[k]] : InvalidNodeId;

			memcpy(ids + k, &global, sizeof(uint32));
		}
		gateann_buffile_write(part->lists, rec, recbytes);
		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
	}
	progress_base += n;
}

void
gateann_merge_build(GateannMergeBuild *mb)
{
	GateannSpill *sp = mb->spill;
	Groups		gr;
	uint32		share;
	MemoryContext cxt,
				partcxt,
				oldcxt;
	int			e,
				p;

	if (mb->capacity < GATEANN_MERGE_MIN_PARTITION)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gateann index build in partitions needs room for at least %d vectors per partition in maintenance_work_mem, and has room for %u",
						GATEANN_MERGE_MIN_PARTITION, mb->capacity),
				 errhint("Increase maintenance_work_mem.")));

	/* temporary files live as long as the build: made in its context */
	mb->codes = BufFileCreateTemp(false);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gateann build groups",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	mb->phase(GATEANN_PHASE_PARTITION, sp->n);
	encode_pass(mb, &gr);

	/*
	 * Half a partition for its primaries, the rest for other partitions'
	 * nodes; one partition when everything fits.
	 */
	share = sp->n <= mb->capacity ? mb->capacity : mb->capacity / 2;
	MemoryContextSwitchTo(oldcxt);
	mb->npartitions = form_partitions(mb, &gr, share);
	assign_pass(mb, &gr, mb->capacity);
	choose_entries(mb, &gr);
	MemoryContextDelete(cxt);	/* the groups */
	elog(DEBUG1, "gateann build: %u vectors in %d partitions of at most %u (%d of them parts of a split group), %.2f partitions per vector",
		 sp->n, mb->npartitions, mb->capacity, split_parts(&gr),
		 (double) mb->members / Max(sp->n, 1));

	mb->phase(GATEANN_PHASE_PARTITION_GRAPH, (double) mb->members);
	progress_base = 0;
	partcxt = AllocSetContextCreate(CurrentMemoryContext, "gateann build partition",
									ALLOCSET_DEFAULT_SIZES);
	for (p = 0; p < mb->npartitions; p++)
	{
		mb->parts[p].lists = BufFileCreateTemp(false);
		oldcxt = MemoryContextSwitchTo(partcxt);
		build_partition(mb, p, p == 0);
		MemoryContextSwitchTo(oldcxt);
		mb->peak_memory = Max(mb->peak_memory,
							  MemoryContextMemAllocated(mb->memory_root, true));
		MemoryContextReset(partcxt);
	}
	MemoryContextDelete(partcxt);

	/* the entry points by their new ids */
	mb->medoid = mb->new_id[mb->medoid];
	for (e = 0; e < mb->nentries; e++)
		mb->entries[e] = mb->new_id[mb->entries[e]];
	mb->list_buf = palloc(list_record_bytes(mb->R));
}

/*
 * The list at place `at` of partition p's list file into ids (R), with new
 * ids; returns its degree
 */
static int
read_list(GateannMergeBuild *mb, int p, uint32 at, uint32 *ids)
{
	char	   *rec = mb->list_buf;
	uint16		deg;
	int			k;

	file_read_at(mb->parts[p].lists, (uint64) at * list_record_bytes(mb->R), rec,
				 list_record_bytes(mb->R));
	memcpy(&deg, rec, sizeof(uint16));
	memcpy(ids, rec + sizeof(uint16), sizeof(uint32) * deg);
	for (k = 0; k < deg; k++)
		ids[k] = mb->new_id[ids[k]];
	return deg;
}

/* Append id to list[0..*n) unless it is there or is self */
static inline void
append_new(uint32 *list, int *n, uint32 id, uint32 self)
{
	int			j;

	if (id == self)
		return;
	for (j = 0; j < *n; j++)
		if (list[j] == id)
			return;
	list[(*n)++] = id;
}

void
gateann_merge_next(GateannMergeBuild *mb, uint32 id, uint32 *heap_order, float *vector,
				   uint8 *code, uint32 *list, int *degree)
{
	uint32		old = mb->old_id[id];
	Size		cb = gateann_pq_code_bytes(mb->pq->m);
	uint32		mine[GATEANN_MAX_NEIGHBORS_LIMIT];
	uint32		other[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			deg,
				odeg,
				keep,
				n,
				i,
				k;

	*heap_order = old;
	file_read_at(mb->spill->file, (uint64) old * sizeof(float) * mb->spill->dims, vector,
				 sizeof(float) * mb->spill->dims);
	file_read_at(mb->codes, (uint64) old * cb, code, cb);
	deg = read_list(mb, mb->primary[old], mb->primary_at[old], mine);
	if (mb->secondary[old] == NO_PARTITION)
	{
		memcpy(list, mine, sizeof(uint32) * deg);
		*degree = deg;
		return;
	}
	odeg = read_list(mb, mb->secondary[old], mb->secondary_at[old], other);

	/*
	 * The prefix the primary partition connected is kept whole (what makes
	 * the node's way on reachable); the rest of the list takes the two
	 * lists' entries in turn, each in its order: a full primary list would
	 * otherwise leave no room for the edges into the other partition, and
	 * the partitions would be linked one way only.
	 */
	keep = Min(deg, mb->r_max);
	memcpy(list, mine, sizeof(uint32) * keep);
	n = keep;
	i = keep;
	k = 0;
	while (n < mb->R && (i < deg || k < odeg))
	{
		if (k < odeg)
			append_new(list, &n, other[k++], id);
		if (n < mb->R && i < deg)
			append_new(list, &n, mine[i++], id);
	}
	*degree = n;
}

void
gateann_merge_end(GateannMergeBuild *mb)
{
	int			p;

	for (p = 0; p < mb->npartitions; p++)
		if (mb->parts[p].lists)
			BufFileClose(mb->parts[p].lists);
	if (mb->codes)
		BufFileClose(mb->codes);
	if (mb->spill->file)
		BufFileClose(mb->spill->file);
	mb->codes = NULL;
	mb->spill->file = NULL;
}
