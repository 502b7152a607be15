/*
 * pq_parallel.c — the build's PQ training with its parallel workers.
 *
 * gateann_pq_train's parts (pq.h) spread over the leader and the workers of
 * one parallel context, giving the codebook the serial training gives:
 *
 *  - the coarse k-means: each Lloyd iteration's assignment is shared out in
 *    chunks of rows claimed from an atomic counter (a row's nearest
 *    centroid does not depend on who computes it); the participant the
 *    barrier elects then moves the centroids alone, over all rows in row
 *    order, exactly as the serial code does;
 *  - the residuals: chunks of rows again, once the coarse centroids are
 *    final;
 *  - the subspaces: each participant claims whole subspaces and trains each
 *    in scratch of its own (a subspace's k-means is seeded by its number).
 *
 * The barrier's phases alternate: an even phase is work everybody shares
 * (which work: `stage`, written only during an odd phase), an odd phase is
 * the elected participant's serial step while the others wait.  A worker
 * that starts late attaches at the current phase and joins in (during an
 * odd phase it only waits); one that starts after the residuals finds
 * subspaces left, or none.  The subspace stage needs no barrier: the
 * leader waits for the workers to exit.  A worker's error reaches the
 * leader through the interrupts it checks while it waits.  Workers only
 * compute: they touch no relation and write no WAL.
 */
#include "postgres.h"

#include "gateann.h"
#include "parallel.h"
#include "distance.h"
#include "pq.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/barrier.h"
#include "storage/shm_toc.h"

#define PARALLEL_KEY_PQ			UINT64CONST(0x6761746561000002)

typedef enum PQTrainStage
{
	STAGE_ASSIGN,				/* a coarse k-means iteration's assignment */
	STAGE_RESIDUALS,			/* sample rows become residuals */
	STAGE_SUBSPACES				/* subspace k-means, claimed one by one */
} PQTrainStage;

typedef struct PQTrainShared
{
	int			n;
	int			dims;
	int			m;
	int			iterations;
	uint64		seed;

	/* written by the elected participant in an odd phase */
	PQTrainStage stage;
	int			iteration;		/* coarse iterations done */

	Barrier		barrier;
	pg_atomic_uint32 next_row;	/* next sample row to claim */
	pg_atomic_uint32 changed;	/* assignments changed this iteration */
	pg_atomic_uint32 next_subspace;

	/* array offsets from the start of this struct */
	Size		sample_off;		/* n * dims floats */
	Size		codebook_off;	/* gateann_pq_codebook_bytes(dims) */
	Size		assign_off;		/* n ints */
	Size		dist_off;		/* n floats */
	Size		sums_off;		/* 256 * dims doubles */
	Size		counts_off;		/* 256 ints */
	Size		total_size;
} PQTrainShared;

PGDLLEXPORT void gateann_parallel_pq_main(dsm_segment *seg, shm_toc *toc);

static void
layout_shared(PQTrainShared *sh, int n, int dims)
{
	Size		off = BUFFERALIGN(sizeof(PQTrainShared));

	memset(sh, 0, sizeof(PQTrainShared));
	sh->sample_off = off;
	off += BUFFERALIGN((Size) n * dims * sizeof(float));
	sh->codebook_off = off;
	off += BUFFERALIGN(gateann_pq_codebook_bytes(dims));
	sh->assign_off = off;
	off += BUFFERALIGN((Size) n * sizeof(int));
	sh->dist_off = off;
	off += BUFFERALIGN((Size) n * sizeof(float));
	sh->sums_off = off;
	off += BUFFERALIGN((Size) GATEANN_PQ_CENTROIDS * dims * sizeof(double));
	sh->counts_off = off;
	off += BUFFERALIGN((Size) GATEANN_PQ_CENTROIDS * sizeof(int));
	sh->total_size = off;
}

Size
gateann_parallel_pq_bytes(int n, int dims)
{
	PQTrainShared sh;

	layout_shared(&sh, n, dims);
	return sh.total_size;
}

/* Claim chunks of rows until none are left; the assignment or residuals */
static void
share_rows(PQTrainShared *sh, const GateannPQ *pq)
{
	float	   *sample = GATEANN_SHARED_ARRAY(sh, float *, sample_off);

	for (;;)
	{
		uint32		from = pg_atomic_fetch_add_u32(&sh->next_row, GATEANN_PARALLEL_ROW_CHUNK);
		int			to;

		if (from >= (uint32) sh->n)
			break;
		to = (int) Min(from + GATEANN_PARALLEL_ROW_CHUNK, (uint32) sh->n);
		if (sh->stage == STAGE_ASSIGN)
		{
			int			changed = gateann_kmeans_assign(pq->coarse, GATEANN_PQ_CENTROIDS,
														sample, sh->dims, (int) from, to,
														GATEANN_SHARED_ARRAY(sh, int *, assign_off),
														GATEANN_SHARED_ARRAY(sh, float *, dist_off));

			pg_atomic_fetch_add_u32(&sh->changed, (uint32) changed);
		}
		else
			gateann_pq_residuals(pq, sample, (int) from, to);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The elected participant's step between two shared ones: the end of a
 * coarse iteration (as gateann_kmeans: stop when nothing changed or after
 * `iterations` updates), or the move from residuals to subspaces.
 */
static void
serial_step(PQTrainShared *sh, GateannPQ *pq)
{
	if (sh->stage == STAGE_ASSIGN)
	{
		if (pg_atomic_read_u32(&sh->changed) == 0)
			sh->stage = STAGE_RESIDUALS;	/* converged */
		else
		{
			gateann_kmeans_update(pq->coarse, GATEANN_PQ_CENTROIDS,
								  GATEANN_SHARED_ARRAY(sh, float *, sample_off), sh->n, sh->dims,
								  GATEANN_SHARED_ARRAY(sh, int *, assign_off),
								  GATEANN_SHARED_ARRAY(sh, float *, dist_off),
								  GATEANN_SHARED_ARRAY(sh, double *, sums_off),
								  GATEANN_SHARED_ARRAY(sh, int *, counts_off));
			if (++sh->iteration >= sh->iterations)
				sh->stage = STAGE_RESIDUALS;
		}
	}
	else
		sh->stage = STAGE_SUBSPACES;
	pg_atomic_write_u32(&sh->changed, 0);
	pg_atomic_write_u32(&sh->next_row, 0);
}

/* Train the subspaces this participant claims, in scratch of its own */
static void
train_subspaces(PQTrainShared *sh, GateannPQ *pq)
{
	void	   *scratch = NULL;

	for (;;)
	{
		uint32		s = pg_atomic_fetch_add_u32(&sh->next_subspace, 1);

		if (s >= (uint32) sh->m)
			break;
		if (scratch == NULL)
			scratch = palloc_extended(gateann_pq_subspace_scratch_bytes(sh->n, sh->dims, sh->m),
									  MCXT_ALLOC_HUGE);
		gateann_pq_train_subspace(pq, GATEANN_SHARED_ARRAY(sh, float *, sample_off), sh->n, sh->seed,
								  sh->iterations, (int) s, scratch, gateann_check_interrupts);
	}
	if (scratch != NULL)
		pfree(scratch);
}

/* A participant's part, from wherever the training is when it attaches */
static void
participate(PQTrainShared *sh)
{
	GateannPQ	pq;

	gateann_pq_attach(&pq, sh->dims, sh->m, GATEANN_SHARED_ARRAY(sh, float *, codebook_off));
	BarrierAttach(&sh->barrier);
	for (;;)
	{
		if (BarrierPhase(&sh->barrier) % 2 == 1)
		{
			/* attached during a serial step: wait for its end */
			BarrierArriveAndWait(&sh->barrier, PG_WAIT_EXTENSION);
			continue;
		}
		if (sh->stage == STAGE_SUBSPACES)
			break;
		share_rows(sh, &pq);
		if (BarrierArriveAndWait(&sh->barrier, PG_WAIT_EXTENSION))
			serial_step(sh, &pq);
		BarrierArriveAndWait(&sh->barrier, PG_WAIT_EXTENSION);
	}
	BarrierDetach(&sh->barrier);
	train_subspaces(sh, &pq);
}

void
gateann_parallel_pq_main(dsm_segment *seg, shm_toc *toc)
{
	PQTrainShared *sh = shm_toc_lookup(toc, PARALLEL_KEY_PQ, false);

	gateann_distance_init();
	participate(sh);
}

bool
gateann_pq_train_parallel(GateannPQ *pq, const float *sample, int n, uint64 seed,
						  int iterations, int nworkers)
{
	ParallelContext *pcxt;
	PQTrainShared layout;
	PQTrainShared *sh;
	GateannPQ	shared_pq;
	uint64		rng = gateann_pq_coarse_seed(seed);

	Assert(n >= GATEANN_PQ_CENTROIDS && nworkers > 0);
	layout_shared(&layout, n, pq->dims);
	pcxt = gateann_parallel_begin("gateann_parallel_pq_main", nworkers, layout.total_size,
								  PARALLEL_KEY_PQ, (void **) &sh);
	if (pcxt == NULL)
		return false;
	*sh = layout;
	sh->n = n;
	sh->dims = pq->dims;
	sh->m = pq->m;
	sh->iterations = iterations;
	sh->seed = seed;
	sh->stage = iterations > 0 ? STAGE_ASSIGN : STAGE_RESIDUALS;
	sh->iteration = 0;
	BarrierInit(&sh->barrier, 0);
	pg_atomic_init_u32(&sh->next_row, 0);
	pg_atomic_init_u32(&sh->changed, 0);
	pg_atomic_init_u32(&sh->next_subspace, 0);
	memcpy(GATEANN_SHARED_ARRAY(sh, float *, sample_off), sample, (Size) n * pq->dims * sizeof(float));
	memset(GATEANN_SHARED_ARRAY(sh, char *, codebook_off), 0, gateann_pq_codebook_bytes(pq->dims));
	gateann_pq_attach(&shared_pq, pq->dims, pq->m, GATEANN_SHARED_ARRAY(sh, float *, codebook_off));
	gateann_kmeans_start(shared_pq.coarse, GATEANN_PQ_CENTROIDS,
						 GATEANN_SHARED_ARRAY(sh, float *, sample_off), n, pq->dims, &rng,
						 GATEANN_SHARED_ARRAY(sh, int *, assign_off),
						 GATEANN_SHARED_ARRAY(sh, int *, counts_off));	/* the seed rows */

	LaunchParallelWorkers(pcxt);
	elog(DEBUG1, "gateann: training the PQ codebook on %d rows with %d of %d parallel workers launched",
		 n, pcxt->nworkers_launched, pcxt->nworkers);
	participate(sh);
	WaitForParallelWorkersToFinish(pcxt);

	memcpy(pq->centroids, GATEANN_SHARED_ARRAY(sh, float *, codebook_off),
		   gateann_pq_codebook_bytes(pq->dims));
	gateann_parallel_end(pcxt);
	return true;
}
