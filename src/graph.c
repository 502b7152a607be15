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
 * With several processes (parallel.c) the arrays live in dynamic shared
 * memory and each neighbor list is guarded by a spinlock, held only to copy
 * a list out or to rewrite it (a reverse-edge prune computes under it: at
 * most R+1 candidates, microseconds).
 *
 * The graph is always built on squared L2 distance.  For cosine the vectors
 * are unit length, where L2 orders exactly like cosine; for inner product an
 * L2 graph is the usual practical choice (search still ranks by inner
 * product).
 */
#include "postgres.h"

#include "graph.h"
#include "distance.h"

#include "miscadmin.h"
#include "utils/float.h"

/* Neighbor lists may grow to R * SLACK before a reverse edge forces a prune */
#define GRAPH_SLACK_NUM		13
#define GRAPH_SLACK_DEN		10

typedef struct Candidate
{
	uint32		id;
	float		dist;
	uint32		tiebreak;		/* orders equal distances, see robust_prune */
	bool		expanded;
} Candidate;

struct GateannGraphScratch
{
	uint32	   *stamp;			/* n: visit epoch per node */
	uint32		epoch;
	Candidate  *pool;			/* L: sorted by dist */
	Candidate  *expanded;		/* max_expanded */
	int			max_expanded;
	Candidate  *prune_cands;	/* candidates for a prune */
	int			max_prune_cands;
	uint32	   *prune_out;		/* capacity */
	uint32	   *list_copy;		/* capacity: a neighbor list copied out */
};

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

static inline void
lock_node(const GateannGraph *g, uint32 id)
{
	if (g->locks)
		SpinLockAcquire(&g->locks[id]);
}

static inline void
unlock_node(const GateannGraph *g, uint32 id)
{
	if (g->locks)
		SpinLockRelease(&g->locks[id]);
}

/* Copy id's neighbor list into buf; returns its length. */
static int
copy_neighbors(const GateannGraph *g, uint32 id, uint32 *buf)
{
	int			deg;

	lock_node(g, id);
	deg = g->degree[id];
	memcpy(buf, neighbors_of(g, id), sizeof(uint32) * deg);
	unlock_node(g, id);
	return deg;
}

int
gateann_graph_capacity(int R)
{
	return (R * GRAPH_SLACK_NUM + GRAPH_SLACK_DEN - 1) / GRAPH_SLACK_DEN;
}

Size
gateann_graph_array_bytes(uint32 n, int R)
{
	return (Size) n * (gateann_graph_capacity(R) * sizeof(uint32) +
					   sizeof(uint16) + sizeof(uint32));
}

/* Insert c into the sorted pool of at most L entries: its position, or -1. */
static int
pool_insert(Candidate *pool, int *size, int L, Candidate c)
{
	int			lo = 0,
				hi = *size;

	if (*size == L && c.dist >= pool[L - 1].dist)
		return -1;
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
	return lo;
}

/*
 * Greedy search for `target`'s vector from the medoid with list size L.
 * Leaves the expanded nodes (with their distances to target) in
 * scratch->expanded and returns how many there are.
 */
static int
greedy_search(const GateannGraph *g, GateannGraphScratch *s, uint32 target, int L)
{
	const float *q = g->vectors + (Size) target * g->dims;
	int			psize = 0;
	int			nexp = 0;
	int			first = 0;
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
		int			deg;
		uint32		cur;

		while (first < psize && s->pool[first].expanded)
			first++;
		if (first >= psize)
			break;

		s->pool[first].expanded = true;
		cur = s->pool[first].id;
		if (nexp < s->max_expanded)
			s->expanded[nexp++] = s->pool[first];

		deg = copy_neighbors(g, cur, s->list_copy);
		for (i = 0; i < deg; i++)
		{
			uint32		nb = s->list_copy[i];
			Candidate	nc;
			int			pos;

			if (s->stamp[nb] == s->epoch)
				continue;
			s->stamp[nb] = s->epoch;
			nc.id = nb;
			nc.dist = gateann_l2sq(q, g->vectors + (Size) nb * g->dims, g->dims);
			nc.expanded = false;
			pos = pool_insert(s->pool, &psize, L, nc);
			/* an insertion before the scan point moves it back */
			if (pos >= 0 && pos < first)
				first = pos;
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
	if (ca->tiebreak != cb->tiebreak)
		return ca->tiebreak < cb->tiebreak ? -1 : 1;
	return (ca->id > cb->id) - (ca->id < cb->id);
}

/* A hash of (p, id): equal-distance candidates are ordered differently per p */
static inline uint32
tiebreak_hash(uint32 p, uint32 id)
{
	uint64		h = ((uint64) p << 32 | id) * UINT64CONST(0x9E3779B97F4A7C15);

	return (uint32) (h >> 32);
}

/*
 * Robust prune: from cands (distances to p), choose at most R neighbors for
 * p, dropping any candidate c' once a chosen c satisfies
 * alpha * d(c, c') <= d(p, c').  The result goes to s->prune_out; returns
 * its length.
 */
static int
robust_prune(const GateannGraph *g, GateannGraphScratch *s, uint32 p,
			 Candidate *cands, int ncands, float alpha, int R)
{
	int			i,
				j,
				nout = 0,
				nuniq = 0;

	/*
	 * Sort by distance; ties by a per-p hash, so that among identical
	 * vectors every node does not pick the same few ids (which would leave
	 * the rest without in-edges).
	 */
	for (i = 0; i < ncands; i++)
		cands[i].tiebreak = tiebreak_hash(p, cands[i].id);
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

	/*
	 * Equivalent to DiskANN's formulation (each chosen neighbor occludes
	 * the later candidates it dominates), but evaluated per candidate
	 * against the neighbors chosen so far, so it stops at the first
	 * occluder and never looks past the R-th choice.
	 */
	for (i = 0; i < nuniq && nout < R; i++)
	{
		const float *ci = g->vectors + (Size) cands[i].id * g->dims;
		bool		occluded = false;

		for (j = 0; j < nout; j++)
		{
			float		d = gateann_l2sq(g->vectors + (Size) s->prune_out[j] * g->dims,
										 ci, g->dims);

			/*
			 * An exact duplicate of p (distance 0) is never occluded:
			 * otherwise one chosen duplicate would occlude all others
			 * (alpha * 0 <= 0) and sets of identical vectors would end up
			 * unreachable from each other.
			 */
			if (cands[i].dist > 0 && alpha * d <= cands[i].dist)
			{
				occluded = true;
				break;
			}
		}
		if (!occluded)
			s->prune_out[nout++] = cands[i].id;
	}
	return nout;
}

/*
 * Put ids[0..n) into s->prune_cands from position `at` on, with their
 * distances to node p; returns the new candidate count.
 */
static int
add_candidates(const GateannGraph *g, GateannGraphScratch *s, uint32 p,
			   const uint32 *ids, int n, int at)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		s->prune_cands[at + i].id = ids[i];
		s->prune_cands[at + i].dist = vdist(g, p, ids[i]);
		s->prune_cands[at + i].expanded = false;
	}
	return at + n;
}

/* Add edge j -> p, pruning j's list when it is at capacity. */
static void
add_reverse_edge(GateannGraph *g, GateannGraphScratch *s, uint32 j, uint32 p,
				 float alpha)
{
	uint32	   *nbrs = neighbors_of(g, j);
	int			deg;
	int			i;
	int			nout;

	lock_node(g, j);
	deg = g->degree[j];
	for (i = 0; i < deg; i++)
	{
		if (nbrs[i] == p)
		{
			unlock_node(g, j);
			return;
		}
	}
	if (deg < g->capacity)
	{
		nbrs[deg] = p;
		g->degree[j] = deg + 1;
		unlock_node(g, j);
		return;
	}
	add_candidates(g, s, j, nbrs, deg, 0);
	add_candidates(g, s, j, &p, 1, deg);
	nout = robust_prune(g, s, j, s->prune_cands, deg + 1, alpha, g->R);
	memcpy(nbrs, s->prune_out, sizeof(uint32) * nout);
	g->degree[j] = (uint16) nout;
	unlock_node(g, j);
}

void
gateann_graph_visit(GateannGraph *g, GateannGraphScratch *s, uint32 p, int L, float alpha)
{
	int			nexp = greedy_search(g, s, p, L);
	int			deg;
	int			ncands = 0;
	int			i;
	int			nout;
	uint32		out[GATEANN_MAX_NEIGHBORS_LIMIT];

	for (i = 0; i < nexp && ncands < s->max_prune_cands; i++)
		s->prune_cands[ncands++] = s->expanded[i];
	deg = copy_neighbors(g, p, s->list_copy);
	ncands = add_candidates(g, s, p, s->list_copy,
							Min(deg, s->max_prune_cands - ncands), ncands);
	nout = robust_prune(g, s, p, s->prune_cands, ncands, alpha, g->R);
	memcpy(out, s->prune_out, sizeof(uint32) * nout);

	lock_node(g, p);
	memcpy(neighbors_of(g, p), out, sizeof(uint32) * nout);
	g->degree[p] = (uint16) nout;
	unlock_node(g, p);

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
gateann_graph_init(GateannGraph *g)
{
	uint64		rng = UINT64CONST(0x6761746561616e6e);	/* "gateaann" */
	uint32		i;

	Assert(g->R <= GATEANN_MAX_NEIGHBORS_LIMIT);
	g->capacity = gateann_graph_capacity(g->R);
	memset(g->degree, 0, sizeof(uint16) * g->n);
	if (g->locks)
		for (i = 0; i < g->n; i++)
			SpinLockInit(&g->locks[i]);
	if (g->n == 0)
	{
		g->medoid = InvalidNodeId;
		return;
	}
	g->medoid = find_medoid(g);

	/* deterministic Fisher-Yates permutation */
	for (i = 0; i < g->n; i++)
		g->order[i] = i;
	for (i = g->n - 1; i > 0; i--)
	{
		uint32		j = (uint32) (gateann_random_next(&rng) % (i + 1));
		uint32		t = g->order[i];

		g->order[i] = g->order[j];
		g->order[j] = t;
	}
}

GateannGraphScratch *
gateann_graph_scratch_create(const GateannGraph *g, int L)
{
	GateannGraphScratch *s = palloc0(sizeof(GateannGraphScratch));

	s->stamp = palloc_extended((Size) Max(g->n, 1) * sizeof(uint32),
							   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	s->epoch = 0;
	s->pool = palloc(sizeof(Candidate) * (L + 1));
	s->max_expanded = 8 * L;
	s->expanded = palloc(sizeof(Candidate) * s->max_expanded);
	s->max_prune_cands = s->max_expanded + g->capacity + 1;
	s->prune_cands = palloc(sizeof(Candidate) * s->max_prune_cands);
	s->prune_out = palloc(sizeof(uint32) * g->capacity);
	s->list_copy = palloc(sizeof(uint32) * g->capacity);
	return s;
}

/*
 * Put the neighbors tunneling will use first.  The in-memory neighbor store
 * keeps only the first R_max neighbors of each node, and a list kept in
 * distance order would give it only the shortest edges: on clustered data a
 * search that tunnels through non-matching nodes then cannot leave the
 * cluster it started in.  So the list starts with a robust prune at alpha 1
 * of the node's own neighbors (one edge per direction, long edges included:
 * a navigable subgraph), then the others, nearest first.  Reads still expand
 * the whole list, in any order.
 */
static void
order_for_tunneling(GateannGraph *g, GateannGraphScratch *s, uint32 i, int r_max)
{
	uint32	   *nbrs = neighbors_of(g, i);
	int			deg = g->degree[i];
	int			nsel,
				j,
				k,
				n = 0;

	if (deg <= r_max)
		return;
	add_candidates(g, s, i, nbrs, deg, 0);
	nsel = robust_prune(g, s, i, s->prune_cands, deg, 1.0f, r_max);
	/* prune_cands is now sorted by distance: append what was not selected */
	memcpy(s->list_copy, s->prune_out, sizeof(uint32) * nsel);
	n = nsel;
	for (j = 0; j < deg && n < deg; j++)
	{
		bool		chosen = false;

		for (k = 0; k < nsel && !chosen; k++)
			chosen = (s->prune_out[k] == s->prune_cands[j].id);
		if (!chosen && s->prune_cands[j].id != i)
			s->list_copy[n++] = s->prune_cands[j].id;
	}
	memcpy(nbrs, s->list_copy, sizeof(uint32) * n);
	g->degree[i] = (uint16) n;
}

void
gateann_graph_finish(GateannGraph *g, GateannGraphScratch *s, float alpha, int r_max)
{
	uint32		i;

	for (i = 0; i < g->n; i++)
	{
		int			deg = g->degree[i];
		uint32	   *nbrs = neighbors_of(g, i);
		int			nout;

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (deg > g->R)
		{
			add_candidates(g, s, i, nbrs, deg, 0);
			nout = robust_prune(g, s, i, s->prune_cands, deg, alpha, g->R);
			memcpy(nbrs, s->prune_out, sizeof(uint32) * nout);
			g->degree[i] = (uint16) nout;
		}
		order_for_tunneling(g, s, i, r_max);
	}
}

void
gateann_graph_build(GateannGraph *g, int L, float alpha, int r_max,
					void (*progress) (int pass, uint32 done, uint32 total))
{
	GateannGraphScratch *s;
	uint32		i;
	int			pass;

	g->capacity = gateann_graph_capacity(g->R);
	g->adj = palloc_extended((Size) Max(g->n, 1) * g->capacity * sizeof(uint32),
							 MCXT_ALLOC_HUGE);
	g->degree = palloc_extended((Size) Max(g->n, 1) * sizeof(uint16), MCXT_ALLOC_HUGE);
	g->order = palloc_extended((Size) Max(g->n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	g->locks = NULL;
	gateann_graph_init(g);
	if (g->n == 0)
		return;

	s = gateann_graph_scratch_create(g, L);
	for (pass = 1; pass <= 2; pass++)
	{
		float		a = (pass == 1) ? 1.0f : alpha;

		for (i = 0; i < g->n; i++)
		{
			if ((i & 255) == 0 && progress)
				progress(pass, i, g->n);
			gateann_graph_visit(g, s, g->order[i], L, a);
		}
		if (progress)
			progress(pass, g->n, g->n);
	}
	gateann_graph_finish(g, s, alpha, r_max);
}

/*
 * Choose a node's neighbors among candidates outside any built graph (an
 * insert into an existing index): a local graph holds the node as local id 0
 * and the candidates as 1..n, so the build's robust prune and tunneling
 * order apply unchanged.
 */
int
gateann_graph_prune_vectors(const float *self, const float *cand_vectors,
							const uint32 *cand_ids, int ncands, int dims,
							float alpha, int R, int r_max, uint32 *out)
{
	GateannGraph g;
	GateannGraphScratch *s;
	float	   *vectors;
	int			i,
				nout;

	if (ncands == 0)
		return 0;
	memset(&g, 0, sizeof(g));
	g.dims = dims;
	g.n = ncands + 1;
	g.R = R;
	g.capacity = gateann_graph_capacity(R);
	vectors = palloc(sizeof(float) * dims * (Size) g.n);
	memcpy(vectors, self, sizeof(float) * dims);
	memcpy(vectors + dims, cand_vectors, sizeof(float) * dims * (Size) ncands);
	g.vectors = vectors;
	g.adj = palloc(sizeof(uint32) * g.capacity * (Size) g.n);
	g.degree = palloc0(sizeof(uint16) * g.n);
	g.medoid = 0;
	s = gateann_graph_scratch_create(&g, ncands + 1);

	for (i = 0; i < ncands; i++)
	{
		s->prune_cands[i].id = (uint32) (i + 1);
		s->prune_cands[i].dist = vdist(&g, 0, (uint32) (i + 1));
		s->prune_cands[i].expanded = false;
	}
	nout = robust_prune(&g, s, 0, s->prune_cands, ncands, alpha, R);
	memcpy(g.adj, s->prune_out, sizeof(uint32) * nout);
	g.degree[0] = (uint16) nout;
	order_for_tunneling(&g, s, 0, r_max);

	nout = g.degree[0];
	for (i = 0; i < nout; i++)
		out[i] = cand_ids[g.adj[i] - 1];
	return nout;
}
