/*
 * parallel_vectors.c — the build's work on every vector with its parallel
 * workers: encoding (pq.h) and the second level of the locality order
 * (order.h), on one shared copy of the vectors and the codebook.
 *
 * Each task launches the workers (again, for the second), the leader takes
 * part, and waits for them: encoding claims chunks of rows from an atomic
 * counter and writes each row's code and coarse distance in its own place;
 * the order's split claims whole first-level groups, each of which only
 * permutes its own stretch of the order.  Neither result depends on who did
 * what, so both are the serial build's.  Workers only compute: they touch
 * no relation and write no WAL.
 */
#include "postgres.h"

#include "gateann.h"
#include "parallel.h"
#include "distance.h"
#include "order.h"
#include "pq.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shm_toc.h"

#define PARALLEL_KEY_VECTORS	UINT64CONST(0x6761746561000003)

typedef enum VectorTask
{
	TASK_ENCODE,
	TASK_SPLIT_GROUPS
} VectorTask;

typedef struct VectorShared
{
	uint32		n;
	int			dims;
	int			m;
	VectorTask	task;
	pg_atomic_uint32 next;		/* next row (encode) or group (split) */

	/* the split: the first level's groups, the seed, the largest group */
	uint32		top[GATEANN_ORDER_GROUPS + 1];
	uint64		seed;
	uint32		largest;

	/* array offsets from the start of this struct */
	Size		codebook_off;	/* gateann_pq_codebook_bytes(dims) */
	Size		vectors_off;	/* n * dims floats */
	Size		codes_off;		/* n * gateann_pq_code_bytes(m) */
	Size		coarse_dist_off;	/* n floats */
	Size		order_off;		/* n uint32 */
	Size		total_size;
} VectorShared;

struct GateannVectorWork
{
	ParallelContext *pcxt;
	VectorShared *sh;
	bool		launched;
};

PGDLLEXPORT void gateann_parallel_vectors_main(dsm_segment *seg, shm_toc *toc);

static void
layout_shared(VectorShared *sh, uint32 n, int dims, int m)
{
	Size		off = BUFFERALIGN(sizeof(VectorShared));

	memset(sh, 0, sizeof(VectorShared));
	sh->n = n;
	sh->dims = dims;
	sh->m = m;
	sh->codebook_off = off;
	off += BUFFERALIGN(gateann_pq_codebook_bytes(dims));
	sh->vectors_off = off;
	off += BUFFERALIGN((Size) n * dims * sizeof(float));
	sh->codes_off = off;
	off += BUFFERALIGN((Size) n * gateann_pq_code_bytes(m));
	sh->coarse_dist_off = off;
	off += BUFFERALIGN((Size) n * sizeof(float));
	sh->order_off = off;
	off += BUFFERALIGN((Size) n * sizeof(uint32));
	sh->total_size = off;
}

Size
gateann_vector_work_bytes(uint32 n, int dims, int m)
{
	VectorShared sh;

	layout_shared(&sh, n, dims, m);
	return sh.total_size;
}

static void
encode_rows(VectorShared *sh)
{
	GateannPQ	pq;
	Size		cb = gateann_pq_code_bytes(sh->m);
	const float *vectors = GATEANN_SHARED_ARRAY(sh, const float *, vectors_off);
	uint8	   *codes = GATEANN_SHARED_ARRAY(sh, uint8 *, codes_off);
	float	   *coarse_dist = GATEANN_SHARED_ARRAY(sh, float *, coarse_dist_off);
	float	   *work = palloc(sizeof(float) * sh->dims);

	gateann_pq_attach(&pq, sh->dims, sh->m, GATEANN_SHARED_ARRAY(sh, float *, codebook_off));
	for (;;)
	{
		uint32		from = pg_atomic_fetch_add_u32(&sh->next, GATEANN_PARALLEL_ROW_CHUNK);
		uint32		to;
		uint32		i;

		if (from >= sh->n)
			break;
		to = Min(from + GATEANN_PARALLEL_ROW_CHUNK, sh->n);
		for (i = from; i < to; i++)
			(void) gateann_pq_encode(&pq, vectors + (Size) i * sh->dims,
									 codes + (Size) i * cb, work, &coarse_dist[i]);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(work);
}

static void
split_groups(VectorShared *sh)
{
	uint32	   *order = GATEANN_SHARED_ARRAY(sh, uint32 *, order_off);
	void	   *scratch = NULL;

	for (;;)
	{
		uint32		g = pg_atomic_fetch_add_u32(&sh->next, 1);

		if (g >= GATEANN_ORDER_GROUPS)
			break;
		if (scratch == NULL)
			scratch = palloc_extended(gateann_locality_split_scratch_bytes(sh->largest, sh->dims),
									  MCXT_ALLOC_HUGE);
		gateann_locality_split_group(GATEANN_SHARED_ARRAY(sh, const float *, vectors_off), sh->dims,
									 order + sh->top[g], sh->top[g + 1] - sh->top[g],
									 sh->seed, (int) g, scratch, gateann_check_interrupts);
	}
	if (scratch != NULL)
		pfree(scratch);
}

static void
run_task(VectorShared *sh)
{
	if (sh->task == TASK_ENCODE)
		encode_rows(sh);
	else
		split_groups(sh);
}

void
gateann_parallel_vectors_main(dsm_segment *seg, shm_toc *toc)
{
	gateann_distance_init();
	run_task(shm_toc_lookup(toc, PARALLEL_KEY_VECTORS, false));
}

/* Launch the workers (again) on the task set up, take part, wait for them */
static void
launch_task(GateannVectorWork *w)
{
	pg_atomic_write_u32(&w->sh->next, 0);
	if (w->launched)
		ReinitializeParallelDSM(w->pcxt);
	LaunchParallelWorkers(w->pcxt);
	w->launched = true;
	elog(DEBUG1, "gateann: %s %u vectors with %d of %d parallel workers launched",
		 w->sh->task == TASK_ENCODE ? "encoding" : "ordering", w->sh->n,
		 w->pcxt->nworkers_launched, w->pcxt->nworkers);
	run_task(w->sh);
	WaitForParallelWorkersToFinish(w->pcxt);
}

GateannVectorWork *
gateann_vector_work_begin(const GateannPQ *pq, const float *vectors, uint32 n, int nworkers)
{
	GateannVectorWork *w = palloc0(sizeof(GateannVectorWork));
	VectorShared layout;

	layout_shared(&layout, n, pq->dims, pq->m);
	w->pcxt = gateann_parallel_begin("gateann_parallel_vectors_main", nworkers,
									 layout.total_size, PARALLEL_KEY_VECTORS,
									 (void **) &w->sh);
	if (w->pcxt == NULL)
	{
		pfree(w);
		return NULL;
	}
	*w->sh = layout;
	pg_atomic_init_u32(&w->sh->next, 0);
	memcpy(GATEANN_SHARED_ARRAY(w->sh, float *, codebook_off), pq->centroids,
		   gateann_pq_codebook_bytes(pq->dims));
	memcpy(GATEANN_SHARED_ARRAY(w->sh, float *, vectors_off), vectors,
		   (Size) n * pq->dims * sizeof(float));
	return w;
}

void
gateann_vector_work_encode(GateannVectorWork *w, uint8 *codes, float *coarse_dist)
{
	VectorShared *sh = w->sh;

	sh->task = TASK_ENCODE;
	launch_task(w);
	memcpy(codes, GATEANN_SHARED_ARRAY(sh, uint8 *, codes_off),
		   (Size) sh->n * gateann_pq_code_bytes(sh->m));
	memcpy(coarse_dist, GATEANN_SHARED_ARRAY(sh, float *, coarse_dist_off),
		   (Size) sh->n * sizeof(float));
}

void
gateann_vector_work_order(GateannVectorWork *w, const uint8 *codes, uint64 seed, uint32 *order)
{
	VectorShared *sh = w->sh;
	GateannPQ	pq;
	Size		label_bytes = MAXALIGN((Size) sh->n);
	char	   *scratch = palloc_extended(label_bytes + (Size) sh->n * sizeof(uint32),
										  MCXT_ALLOC_HUGE);
	int			g;

	/* the first level, here: a counting sort */
	gateann_pq_attach(&pq, sh->dims, sh->m, GATEANN_SHARED_ARRAY(sh, float *, codebook_off));
	gateann_locality_first_level(pq.coarse, sh->dims, codes + sh->m,
								 gateann_pq_code_bytes(sh->m), sh->n,
								 GATEANN_SHARED_ARRAY(sh, uint32 *, order_off),
								 (uint8 *) scratch, (uint32 *) (scratch + label_bytes), sh->top);
	pfree(scratch);
	sh->largest = 0;
	for (g = 0; g < GATEANN_ORDER_GROUPS; g++)
		sh->largest = Max(sh->largest, sh->top[g + 1] - sh->top[g]);
	sh->seed = seed;
	sh->task = TASK_SPLIT_GROUPS;
	launch_task(w);
	memcpy(order, GATEANN_SHARED_ARRAY(sh, uint32 *, order_off), (Size) sh->n * sizeof(uint32));
}

void
gateann_vector_work_end(GateannVectorWork *w)
{
	gateann_parallel_end(w->pcxt);
	pfree(w);
}
