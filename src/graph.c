/*
 * graph.c — Vamana graph construction in memory.
 *
 * DiskANN's build: choose the medoid as entry point, then visit every node in
 * a random order twice — first with alpha = 1 (a sparse, navigable graph),
 * then with the user's alpha (> 1 keeps longer edges and shortens search
 * paths).  Each visit runs a greedy search for the node from the medoid,
 * robust-prunes the expanded set into its out-neighbors and adds the reverse
 * edges, pruning a neighbor's list only once it outgrows a slack capacity
 * (as DiskANN's GRAPH_SLACK_FACTOR does) so the quadratic prune is
 * amortised.
 *
 * The graph is always built on squared L2 distance.  For cosine the vectors
 * are unit length, where L2 orders exactly like cosine; for inner product an
 * L2 graph is the usual practical choice (search still ranks by inner
 * product).
 */
#include "postgres.h"

#include "graph.h"
#include "distance.h"

#include "utils/float.h"

/* Neighbor lists may grow to R * SLACK before a reverse edge forces a prune */
#define GRAPH_SLACK_NUM		13
#define GRAPH_SLACK_DEN		10

typedef struct Candidate
{
	uint32		id;
	float		dist;
	bool		expanded;
} Candidate;

typedef struct GraphScratch
{
	uint32	   *stamp;			/* n: visit epoch per node */
	uint32		epoch;
	Candidate  *pool;			/* L: sorted by dist */
	Candidate  *expanded;		/* max_expanded */
	int			max_expanded;
	Candidate  *prune_cands;	/* candidates for a prune */
	int			max_prune_cands;
	bool	   *occluded;		/* parallel to prune_cands */
	uint32	   *prune_out;		/* capacity */
} GraphScratch;

static inline float
vdist(const GateannGraph *g, uint32 a, uint32 b)
{
	return gateann_l2sq(g->vectors + (Size) a * g->dims,
						g->vectors + (Size) b * g->dims, g->dims);
}

static inline uint32 *
neighbors_of(const GateannGraph *g, uint32 id)
{
	return g->adj + (Size) id * g->capacity;
}

static int
graph_capacity(int R)
{
	return (R * GRAPH_SLACK_NUM + GRAPH_SLACK_DEN - 1) / GRAPH_SLACK_DEN;
}

Size
gateann_graph_memory(uint32 n, int R, int L)
{
	int			cap = graph_capacity(R);
	Size		sz;

	sz = (Size) n * cap * sizeof(uint32);	/* adjacency */
	sz += (Size) n * sizeof(uint16);	/* degree */
	sz += (Size) n * sizeof(uint32);	/* visit stamps */
	sz += (Size) n * sizeof(uint32);	/* permutation */
	sz += (Size) (L + 8 * L + 9 * L + cap) * (sizeof(Candidate) + 1);
	return sz;
}

/* Insert c into the sorted pool of at most L entries; false if not kept. */
static bool
pool_insert(Candidate *pool, int *size, int L, Candidate c)
{
	int			lo = 0,
				hi = *size;

	if (*size == L && c.dist >= pool[L - 1].dist)
		return false;
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (pool[mid].dist <= c.dist)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (*size < L)
		(*size)++;
	memmove(&pool[lo + 1], &pool[lo], sizeof(Candidate) * (*size - 1 - lo));
	pool[lo] = c;
	return true;
}

/*
 * Greedy search for `target`'s vector from the medoid with list size L.
 * Leaves the expanded nodes (with their distances to target) in
 * scratch->expanded and returns how many there are.
 */
static int
greedy_search(const GateannGraph *g, GraphScratch *s, uint32 target, int L)
{
	const float *q = g->vectors + (Size) target * g->dims;
	int			psize = 0;
	int			nexp = 0;
	Candidate	c;

	if (++s->epoch == 0)
	{
		memset(s->stamp, 0, sizeof(uint32) * g->n);
		s->epoch = 1;
	}

	c.id = g->medoid;
	c.dist = gateann_l2sq(q, g->vectors + (Size) c.id * g->dims, g->dims);
	c.expanded = false;
	s->stamp[c.id] = s->epoch;
	s->stamp[target] = s->epoch;	/* never a candidate for itself */
	if (c.id != target)
		pool_insert(s->pool, &psize, L, c);

	for (;;)
	{
		int			i;
		int			best = -1;
		uint32	   *nbrs;
		int			deg;

		for (i = 0; i < psize; i++)
		{
			if (!s->pool[i].expanded)
			{
				best = i;
				break;
			}
		}
		if (best < 0)
			break;

		s->pool[best].expanded = true;
		if (nexp < s->max_expanded)
			s->expanded[nexp++] = s->pool[best];

		nbrs = neighbors_of(g, s->pool[best].id);
		deg = g->degree[s->pool[best].id];
		for (i = 0; i < deg; i++)
		{
			uint32		nb = nbrs[i];
			Candidate	nc;

			if (s->stamp[nb] == s->epoch)
				continue;
			s->stamp[nb] = s->epoch;
			nc.id = nb;
			nc.dist = gateann_l2sq(q, g->vectors + (Size) nb * g->dims, g->dims);
			nc.expanded = false;
			pool_insert(s->pool, &psize, L, nc);
		}
	}
	return nexp;
}

static int
cmp_candidate(const void *a, const void *b)
{
	const Candidate *ca = a;
	const Candidate *cb = b;

	if (ca->dist < cb->dist)
		return -1;
	if (ca->dist > cb->dist)
		return 1;
	return (ca->id > cb->id) - (ca->id < cb->id);
}

/*
 * Robust prune: from cands (distances to p), choose at most R neighbors for
 * p, dropping any candidate c' once a chosen c satisfies
 * alpha * d(c, c') <= d(p, c').  Writes them to p's list.
 */
static void
robust_prune(GateannGraph *g, GraphScratch *s, uint32 p, Candidate *cands,
			 int ncands, float alpha, int R)
{
	int			i,
				j,
				nout = 0,
				nuniq = 0;

	qsort(cands, ncands, sizeof(Candidate), cmp_candidate);
	/* drop p itself and duplicates (equal ids sort next to each other) */
	for (i = 0; i < ncands; i++)
	{
		if (cands[i].id == p)
			continue;
		if (nuniq > 0 && cands[nuniq - 1].id == cands[i].id)
			continue;
		cands[nuniq++] = cands[i];
	}
	memset(s->occluded, 0, sizeof(bool) * nuniq);

	for (i = 0; i < nuniq && nout < R; i++)
	{
		const float *ci;

		if (s->occluded[i])
			continue;
		s->prune_out[nout++] = cands[i].id;
		ci = g->vectors + (Size) cands[i].id * g->dims;
		for (j = i + 1; j < nuniq; j++)
		{
			float		d;

			if (s->occluded[j])
				continue;
			d = gateann_l2sq(ci, g->vectors + (Size) cands[j].id * g->dims, g->dims);
			if (alpha * d <= cands[j].dist)
				s->occluded[j] = true;
		}
	}
	memcpy(neighbors_of(g, p), s->prune_out, sizeof(uint32) * nout);
	g->degree[p] = (uint16) nout;
}

/* Add edge j -> p, pruning j's list when it is at capacity. */
static void
add_reverse_edge(GateannGraph *g, GraphScratch *s, uint32 j, uint32 p,
				 float alpha)
{
	uint32	   *nbrs = neighbors_of(g, j);
	int			deg = g->degree[j];
	int			i;

	for (i = 0; i < deg; i++)
		if (nbrs[i] == p)
			return;
	if (deg < g->capacity)
	{
		nbrs[deg] = p;
		g->degree[j] = deg + 1;
		return;
	}
	for (i = 0; i < deg; i++)
	{
		s->prune_cands[i].id = nbrs[i];
		s->prune_cands[i].dist = vdist(g, j, nbrs[i]);
	}
	s->prune_cands[deg].id = p;
	s->prune_cands[deg].dist = vdist(g, j, p);
	robust_prune(g, s, j, s->prune_cands, deg + 1, alpha, g->R);
}

static void
visit_node(GateannGraph *g, GraphScratch *s, uint32 p, int L, float alpha)
{
	int			nexp = greedy_search(g, s, p, L);
	uint32	   *nbrs = neighbors_of(g, p);
	int			deg = g->degree[p];
	int			ncands = 0;
	int			i;
	uint32		out[GATEANN_MAX_NEIGHBORS_LIMIT];
	int			nout;

	for (i = 0; i < nexp && ncands < s->max_prune_cands; i++)
		s->prune_cands[ncands++] = s->expanded[i];
	for (i = 0; i < deg && ncands < s->max_prune_cands; i++)
	{
		s->prune_cands[ncands].id = nbrs[i];
		s->prune_cands[ncands].dist = vdist(g, p, nbrs[i]);
		s->prune_cands[ncands].expanded = false;
		ncands++;
	}
	robust_prune(g, s, p, s->prune_cands, ncands, alpha, g->R);

	/* reverse edges; copy the list first: pruning a neighbor reuses scratch */
	nout = g->degree[p];
	memcpy(out, nbrs, sizeof(uint32) * nout);
	for (i = 0; i < nout; i++)
		add_reverse_edge(g, s, out[i], p, alpha);
}

static uint32
find_medoid(const GateannGraph *g)
{
	double	   *mean = palloc0(sizeof(double) * g->dims);
	float	   *meanf = palloc(sizeof(float) * g->dims);
	uint32		i,
				best = 0;
	float		bestd = get_float4_infinity();
	int			d;

	for (i = 0; i < g->n; i++)
	{
		const float *v = g->vectors + (Size) i * g->dims;

		for (d = 0; d < g->dims; d++)
			mean[d] += v[d];
	}
	for (d = 0; d < g->dims; d++)
		meanf[d] = (float) (mean[d] / g->n);
	for (i = 0; i < g->n; i++)
	{
		float		dist = gateann_l2sq(meanf, g->vectors + (Size) i * g->dims, g->dims);

		if (dist < bestd)
		{
			bestd = dist;
			best = i;
		}
	}
	pfree(mean);
	pfree(meanf);
	return best;
}

void
gateann_graph_build(GateannGraph *g, int L, float alpha,
					void (*progress) (int pass, uint32 done, uint32 total))
{
	GraphScratch s;
	uint32	   *order;
	uint64		rng = UINT64CONST(0x6761746561616e6e);	/* "gateaann" */
	uint32		i;
	int			pass;

	Assert(g->R <= GATEANN_MAX_NEIGHBORS_LIMIT);
	g->capacity = graph_capacity(g->R);
	g->adj = palloc_extended((Size) g->n * g->capacity * sizeof(uint32),
							 MCXT_ALLOC_HUGE);
	g->degree = palloc_extended((Size) g->n * sizeof(uint16),
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	if (g->n == 0)
	{
		g->medoid = InvalidNodeId;
		return;
	}
	g->medoid = find_medoid(g);

	s.stamp = palloc_extended((Size) g->n * sizeof(uint32),
							  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	s.epoch = 0;
	s.pool = palloc(sizeof(Candidate) * (L + 1));
	s.max_expanded = 8 * L;
	s.expanded = palloc(sizeof(Candidate) * s.max_expanded);
	s.max_prune_cands = s.max_expanded + g->capacity + 1;
	s.prune_cands = palloc(sizeof(Candidate) * s.max_prune_cands);
	s.occluded = palloc(sizeof(bool) * s.max_prune_cands);
	s.prune_out = palloc(sizeof(uint32) * g->capacity);

	/* deterministic Fisher-Yates permutation */
	order = palloc_extended((Size) g->n * sizeof(uint32), MCXT_ALLOC_HUGE);
	for (i = 0; i < g->n; i++)
		order[i] = i;
	for (i = g->n - 1; i > 0; i--)
	{
		uint32		j = (uint32) (gateann_random_next(&rng) % (i + 1));
		uint32		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}

	for (pass = 1; pass <= 2; pass++)
	{
		float		a = (pass == 1) ? 1.0f : alpha;

		for (i = 0; i < g->n; i++)
		{
			if ((i & 255) == 0 && progress)
				progress(pass, i, g->n);
			visit_node(g, &s, order[i], L, a);
		}
		if (progress)
			progress(pass, g->n, g->n);
	}

	/* lists may exceed R by the slack: prune them down for the disk format */
	for (i = 0; i < g->n; i++)
	{
		int			deg = g->degree[i];
		int			j;
		uint32	   *nbrs = neighbors_of(g, i);

		if (deg <= g->R)
			continue;
		for (j = 0; j < deg; j++)
		{
			s.prune_cands[j].id = nbrs[j];
			s.prune_cands[j].dist = vdist(g, i, nbrs[j]);
		}
		robust_prune(g, &s, i, s.prune_cands, deg, alpha, g->R);
	}

	pfree(order);
	pfree(s.stamp);
	pfree(s.pool);
	pfree(s.expanded);
	pfree(s.prune_cands);
	pfree(s.occluded);
	pfree(s.prune_out);
}
