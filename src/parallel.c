/*
 * parallel.c — parallel Vamana construction.
 *
 * The leader copies the vectors, and writes their 8-bit copy (graph.h), into
 * a dynamic shared memory segment next to the adjacency arrays and one
 * spinlock per node, then runs each stretch of visits the build's plan
 * gives (gateann_graph_next_step: one pass, or two) with its workers: every
 * participant claims chunks of the shared visiting order from an atomic
 * counter and runs the same gateann_graph_visit() the serial build uses.
 * Between stretches the workers are relaunched: the leader alone probes
 * the graph (and may empty it) in between, and a second pass must see the
 * whole first-pass graph.  A last stretch finishes the lists (their last
 * prune and tunneling order: each node's own list, by node id); the leader
 * then makes every node reachable alone.  Workers only compute: they touch
 * no relation and write no WAL.
 */
#include "postgres.h"

#include "parallel.h"
#include "distance.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shm_toc.h"

#define PARALLEL_KEY_GRAPH		UINT64CONST(0x6761746561000001)

/* Nodes a participant claims at a time */
#define CLAIM_CHUNK		64

typedef struct GraphShared
{
	uint32		n;
	int			dims;
	int			R;
	int			L;				/* the build's list: scratch sizes */
	int			step_L;			/* the current stretch's list */
	float		alpha;			/* of the current stretch */
	int			pass;
	uint32		to;				/* the current stretch ends before order[to] */
	bool		finishing;		/* the stretch finishes lists (node ids from
								 * next to `to`) instead of visiting */
	int			r_max;			/* of gateann_graph_finish */
	uint32		medoid;
	int			nentries;
	uint32		entries[GATEANN_MAX_ENTRIES];
	pg_atomic_uint32 next;		/* next index into order[] to claim */
	pg_atomic_uint32 done;		/* order[] up to here visited, less claims
								 * in flight */

	/* array offsets from the start of this struct */
	Size		vectors_off;
	Size		sq_codes_off;	/* n * dims */
	Size		sq_low_off;		/* dims */
	Size		sq_step_off;	/* dims */
	Size		adj_off;
	Size		degree_off;
	Size		order_off;
	Size		twin_off;
	Size		locks_off;
	Size		total_size;
} GraphShared;

PGDLLEXPORT void gateann_parallel_graph_main(dsm_segment *seg, shm_toc *toc);

ParallelContext *
gateann_parallel_begin(const char *function, int nworkers, Size bytes, uint64 key,
					   void **shared)
{
	ParallelContext *pcxt;

	EnterParallelMode();
	pcxt = CreateParallelContext("gateann", function, nworkers);
	shm_toc_estimate_chunk(&pcxt->estimator, bytes);
	shm_toc_estimate_keys(&pcxt->estimator, 1);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return NULL;
	}
	*shared = shm_toc_allocate(pcxt->toc, bytes);
	shm_toc_insert(pcxt->toc, key, *shared);
	return pcxt;
}

void
gateann_parallel_end(ParallelContext *pcxt)
{
	DestroyParallelContext(pcxt);
	ExitParallelMode();
}

static void
layout_shared(GraphShared *sh, const GateannGraph *g)
{
	Size		off = BUFFERALIGN(sizeof(GraphShared));
	int			cap = gateann_graph_capacity(g->R);

	memset(sh, 0, sizeof(GraphShared));

	sh->vectors_off = off;
	off += BUFFERALIGN((Size) g->n * g->dims * sizeof(float));
	sh->sq_codes_off = off;
	off += BUFFERALIGN((Size) g->n * g->dims);
	sh->sq_low_off = off;
	off += BUFFERALIGN(sizeof(float) * g->dims);
	sh->sq_step_off = off;
	off += BUFFERALIGN(sizeof(float) * g->dims);
	sh->adj_off = off;
	off += BUFFERALIGN((Size) g->n * cap * sizeof(uint32));
	sh->degree_off = off;
	off += BUFFERALIGN((Size) g->n * sizeof(uint16));
	sh->order_off = off;
	off += BUFFERALIGN((Size) g->n * sizeof(uint32));
	sh->twin_off = off;
	off += BUFFERALIGN((Size) g->n * sizeof(uint32));
	sh->locks_off = off;
	off += BUFFERALIGN((Size) g->n * sizeof(slock_t));
	sh->total_size = off;
}

Size
gateann_parallel_graph_bytes(const GateannGraph *graph)
{
	GraphShared sh;

	layout_shared(&sh, graph);
	return sh.total_size;
}

/* A GateannGraph whose arrays point into the shared segment */
static void
attach_graph(GraphShared *sh, GateannGraph *g)
{
	char	   *base = (char *) sh;

	memset(g, 0, sizeof(*g));
	g->n = sh->n;
	g->dims = sh->dims;
	g->R = sh->R;
	g->capacity = gateann_graph_capacity(sh->R);
	g->vectors = (const float *) (base + sh->vectors_off);
	g->sq_codes = (const uint8 *) (base + sh->sq_codes_off);
	g->sq_low = (const float *) (base + sh->sq_low_off);
	g->sq_step = (const float *) (base + sh->sq_step_off);
	g->adj = (uint32 *) (base + sh->adj_off);
	g->degree = (uint16 *) (base + sh->degree_off);
	g->order = (uint32 *) (base + sh->order_off);
	g->twin = (uint32 *) (base + sh->twin_off);
	g->locks = (slock_t *) (base + sh->locks_off);
	g->medoid = sh->medoid;
	g->nentries = sh->nentries;
	memcpy(g->entries, sh->entries, sizeof(uint32) * sh->nentries);
}

static void
run_pass(GraphShared *sh, GateannGraph *g, GateannGraphScratch *s,
		 void (*progress) (int pass, uint32 done, uint32 total))
{
	for (;;)
	{
		uint32		start = pg_atomic_fetch_add_u32(&sh->next, CLAIM_CHUNK);
		uint32		end;
		uint32		i;
		uint32		done;

		if (start >= sh->to)
			break;
		end = Min(start + CLAIM_CHUNK, sh->to);
		if (sh->finishing)
			gateann_graph_finish(g, s, sh->alpha, sh->r_max, start, end);
		else
			for (i = start; i < end; i++)
				gateann_graph_visit(g, s, g->order[i], sh->step_L, sh->alpha);
		done = pg_atomic_add_fetch_u32(&sh->done, end - start);
		if (progress && !sh->finishing)
			progress(sh->pass, done, sh->n);
		else
			CHECK_FOR_INTERRUPTS();
	}
	if (!sh->finishing)
		elog(DEBUG1, "gateann build: this process has redone " UINT64_FORMAT " prunes of lists another changed meanwhile",
			 gateann_graph_prunes_redone(s));
}

void
gateann_parallel_graph_main(dsm_segment *seg, shm_toc *toc)
{
	GraphShared *sh = shm_toc_lookup(toc, PARALLEL_KEY_GRAPH, false);
	GateannGraph g;
	GateannGraphScratch *s;

	gateann_distance_init();
	attach_graph(sh, &g);
	s = gateann_graph_scratch_create(&g, sh->L);
	run_pass(sh, &g, s, NULL);
}

/*
 * Launch the workers (again, after a first stretch) on order[from..to) or,
 * finishing, node ids from..to-1, take part, and wait for them
 */
static void
run_stretch(ParallelContext *pcxt, GraphShared *sh, GateannGraph *g, GateannGraphScratch *s,
			uint32 from, uint32 to, bool relaunch,
			void (*progress) (int pass, uint32 done, uint32 total))
{
	sh->to = to;
	pg_atomic_write_u32(&sh->next, from);
	pg_atomic_write_u32(&sh->done, from);
	if (relaunch)
		ReinitializeParallelDSM(pcxt);
	LaunchParallelWorkers(pcxt);
	elog(DEBUG1, "gateann: building the graph, %s %d (nodes %u to %u), with %d of %d parallel workers launched",
		 sh->finishing ? "finishing after pass" : "pass", sh->pass, from, to,
		 pcxt->nworkers_launched, pcxt->nworkers);
	if (progress && !sh->finishing)
		progress(sh->pass, from, sh->n);
	run_pass(sh, g, s, progress);
	WaitForParallelWorkersToFinish(pcxt);
}

bool
gateann_graph_build_parallel(GateannGraph *graph, const uint32 *entries, int nentries,
							 int L, float alpha, int r_max, bool choose_r_max, int nworkers,
							 void (*progress) (int pass, uint32 done, uint32 total))
{
	ParallelContext *pcxt;
	GraphShared layout;
	GraphShared *sh;
	GateannGraph g;
	GateannGraphScratch *s;
	GateannGraphStep step = {0};
	bool		launched = false;
	int			cap = gateann_graph_capacity(graph->R);

	layout_shared(&layout, graph);
	pcxt = gateann_parallel_begin("gateann_parallel_graph_main", nworkers, layout.total_size,
								  PARALLEL_KEY_GRAPH, (void **) &sh);
	if (pcxt == NULL)
		return false;
	*sh = layout;
	sh->n = graph->n;
	sh->dims = graph->dims;
	sh->R = graph->R;
	sh->L = L;
	pg_atomic_init_u32(&sh->next, 0);
	pg_atomic_init_u32(&sh->done, 0);
	memcpy((char *) sh + sh->vectors_off, graph->vectors,
		   (Size) graph->n * graph->dims * sizeof(float));
	attach_graph(sh, &g);
	g.foreign = graph->foreign; /* the leader's repair alone reads it */
	gateann_graph_quantize(&g, (uint8 *) sh + sh->sq_codes_off,
						   (float *) ((char *) sh + sh->sq_low_off),
						   (float *) ((char *) sh + sh->sq_step_off));
	gateann_graph_init(&g, entries, nentries);
	sh->medoid = g.medoid;
	sh->nentries = g.nentries;
	memcpy(sh->entries, g.entries, sizeof(uint32) * g.nentries);

	s = gateann_graph_scratch_create(&g, L);
	while (gateann_graph_next_step(&g, &step, L, alpha))
	{
		sh->pass = step.pass;
		sh->alpha = step.alpha;
		sh->step_L = step.L;
		run_stretch(pcxt, sh, &g, s, step.from, step.to, launched, progress);
		launched = true;
	}

	/* the lists' last prune and tunneling order, node by node, with the workers */
	sh->finishing = true;
	sh->alpha = alpha;
	sh->r_max = r_max;
	run_stretch(pcxt, sh, &g, s, 0, sh->n, launched, progress);
	gateann_graph_complete(&g, s, L, alpha, r_max, choose_r_max);

	/* hand the result back in private memory: the segment goes away */
	graph->capacity = cap;
	graph->r_max = g.r_max;
	graph->medoid = g.medoid;
	graph->nentries = g.nentries;
	memcpy(graph->entries, g.entries, sizeof(uint32) * g.nentries);
	graph->locks = NULL;
	graph->adj = palloc_extended((Size) graph->n * cap * sizeof(uint32), MCXT_ALLOC_HUGE);
	graph->degree = palloc_extended((Size) graph->n * sizeof(uint16), MCXT_ALLOC_HUGE);
	graph->order = NULL;
	memcpy(graph->adj, g.adj, (Size) graph->n * cap * sizeof(uint32));
	memcpy(graph->degree, g.degree, (Size) graph->n * sizeof(uint16));

	gateann_parallel_end(pcxt);
	return true;
}
