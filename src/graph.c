/*
 * graph.c — Vamana graph construction in memory.
 *
 * DiskANN's build, with entry points: the medoid and the nodes nearest the
 * centroids of the PQ's 256 coarse groups (build.c) are the entry points;
 * every node is visited in a random order, once at the user's alpha (> 1
 * keeps longer edges and shortens search paths) where that is enough, else
 * twice -- first with alpha = 1 (a sparse, navigable graph), then with the
 * user's alpha (gateann_graph_next_step).  Each visit runs a greedy search for
 * the node from the entry points nearest it (ranking candidates by an 8-bit
 * copy of the vectors: GRAPH_SQ_LEVELS), robust-prunes the expanded set
 * (exact distances) into its out-neighbors (a saturating schedule:
 * robust_prune) and adds the reverse edges, pruning a neighbor's list only
 * once it outgrows a slack capacity (as DiskANN's GRAPH_SLACK_FACTOR does)
 * so the quadratic prune is amortised.  Finally every list is ordered for tunneling and every node
 * made reachable from the entry points (gateann_graph_connect).
 *
 * Why entry points: from the medoid alone, a search for a node of one of 50
 * well-separated clusters in 384 dimensions often never left the cluster
 * it first entered, and neither did queries (recall@10 0.26, and 0.03 when
 * the clusters were wide; bench/RESULTS.md).
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
#include "reach.h"
#include "search.h"

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "utils/float.h"
#include "utils/memutils.h"

/*
 * Neighbor lists may grow to R * SLACK before a reverse edge forces a prune.
 * A prune costs about as many distances as the list is long times R, and
 * comes once per (capacity - R) reverse edges: at 1.3 (DiskANN's factor)
 * they were a quarter of a 384-dimensional build.  100K rows of 50 wide
 * clusters in 384 dimensions built in 14 % less time at 1.6, 22 % at 2.0
 * (tight clusters of 128: 15 % at 2.0; an isotropic Gaussian 3 %, recall
 * 0.0035 higher; the same recall elsewhere).  Each step costs 4 R bytes per
 * node of maintenance_work_mem (at 2.0, 15 % fewer rows of 128 dimensions
 * fit in it before the build goes to partitions): 1.6 takes most of the
 * time for half the memory.
 */
#define GRAPH_SLACK_NUM		16
#define GRAPH_SLACK_DEN		10

/* cmp_vector_position's calls, to check for interrupts now and then */
static uint32 twin_compares = 0;

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
	const GateannGraph *graph;	/* the graph the search walks */
	GateannCandidate *pool;		/* L: the search's list (search.h) */
	uint32	   *nb_ids;			/* capacity: an expansion's new neighbors */
	float	   *nb_dists;		/* capacity: distances of an expansion's neighbors */
	const float *query;			/* the vector the search is for */
	bool		sq;				/* ranking by the 8-bit copy (query_low) */
	float	   *query_low;		/* dims: query less the copy's low values */
	int			nexp;			/* expanded nodes kept in `expanded` */
	Candidate  *expanded;		/* max_expanded */
	int			max_expanded;
	Candidate  *prune_cands;	/* candidates for a prune */
	int			max_prune_cands;
	float	   *occlusion;		/* per prune candidate: largest factor seen */
	int		   *checked;		/* per prune candidate: chosen ones compared */
	uint32	   *prune_out;		/* capacity */
	int		   *prune_pos;		/* capacity: sorted position of each choice */
	uint32	   *list_copy;		/* capacity: a neighbor list copied out */
	uint64		prunes_redone;	/* add_reverse_edge: lists changed meanwhile */
	Candidate  *seeds;			/* nentries: entry points by distance */
};

static inline float
vdist(const GateannGraph *g, uint32 a, uint32 b)
{
	return gateann_l2sq(g->vectors + (Size) a * g->dims,
						g->vectors + (Size) b * g->dims, g->dims);
}

/*
 * The 8-bit copy of the vectors.  The build's searches spent most of their
 * time waiting for vectors from memory (100K x 384: the fetches of
 * unmet_neighbors and the distances after them were about 60 % of a build);
 * a code is a quarter of the bytes.  Every node a search expands has its
 * distance recomputed exactly before the prune, which alone decides edges:
 * the copy only chooses which nodes the search looks at.
 */
#define GRAPH_SQ_LEVELS		255

/* The distance a search ranks node id by (see start_search) */
static inline float
search_dist(const GateannGraph *g, const GateannGraphScratch *s, uint32 id)
{
	if (s->sq)
		return gateann_l2sq_sq8(s->query_low, g->sq_codes + (Size) id * g->dims,
								g->sq_step, g->dims);
	return gateann_l2sq(s->query, g->vectors + (Size) id * g->dims, g->dims);
}

/* Where node id's row for the search is, and how many bytes it has */
static inline const void *
search_row(const GateannGraph *g, const GateannGraphScratch *s, uint32 id, Size *bytes)
{
	if (s->sq)
	{
		*bytes = g->dims;
		return g->sq_codes + (Size) id * g->dims;
	}
	*bytes = sizeof(float) * g->dims;
	return g->vectors + (Size) id * g->dims;
}

void
gateann_graph_quantize(GateannGraph *g, uint8 *codes, float *low, float *step)
{
	float	   *high = palloc(sizeof(float) * Max(g->dims, 1));
	uint32		i;
	int			d;

	for (d = 0; d < g->dims; d++)
	{
		low[d] = g->n > 0 ? get_float4_infinity() : 0.0f;
		high[d] = g->n > 0 ? -get_float4_infinity() : 0.0f;
	}
	for (i = 0; i < g->n; i++)
	{
		const float *v = g->vectors + (Size) i * g->dims;

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		for (d = 0; d < g->dims; d++)
		{
			low[d] = Min(low[d], v[d]);
			high[d] = Max(high[d], v[d]);
		}
	}
	for (d = 0; d < g->dims; d++)
		step[d] = (high[d] - low[d]) / GRAPH_SQ_LEVELS;
	for (i = 0; i < g->n; i++)
	{
		const float *v = g->vectors + (Size) i * g->dims;
		uint8	   *c = codes + (Size) i * g->dims;

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		for (d = 0; d < g->dims; d++)
		{
			float		level = step[d] > 0 ? rintf((v[d] - low[d]) / step[d]) : 0.0f;

			c[d] = (uint8) Max(0.0f, Min(level, (float) GRAPH_SQ_LEVELS));
		}
	}
	pfree(high);
	g->sq_codes = codes;
	g->sq_low = low;
	g->sq_step = step;
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
	/* adj, degree, order, twin */
	return (Size) n * (gateann_graph_capacity(R) * sizeof(uint32) +
					   sizeof(uint16) + 2 * sizeof(uint32));
}

/*
 * Seed the pool for a search towards s->query: the `nseeds` entry points
 * nearest it (by the search's distance).  Marks them visited.  Returns the
 * pool's size.
 */
static int
seed_pool(const GateannGraph *g, GateannGraphScratch *s, uint32 skip, int L, int nseeds)
{
	int			nent = 0;
	int			psize = 0;
	int			i;

	for (i = 0; i < g->nentries; i++)
	{
		uint32		e = g->entries[i];

		if (e == skip || s->stamp[e] == s->epoch)
			continue;
		s->seeds[nent].id = e;
		s->seeds[nent].dist = search_dist(g, s, e);
		s->seeds[nent].expanded = false;
		nent++;
	}
	/* (partial selection: nseeds is small) */
	for (i = 0; i < nent && i < nseeds; i++)
	{
		int			best = i;
		int			j;
		Candidate	t;

		for (j = i + 1; j < nent; j++)
			if (s->seeds[j].dist < s->seeds[best].dist ||
				(s->seeds[j].dist == s->seeds[best].dist && s->seeds[j].id < s->seeds[best].id))
				best = j;
		t = s->seeds[i];
		s->seeds[i] = s->seeds[best];
		s->seeds[best] = t;
		s->stamp[s->seeds[i].id] = s->epoch;
		gateann_candidate_insert(s->pool, &psize, L, s->seeds[i].id, s->seeds[i].dist);
	}
	return psize;
}

/*
 * Entry points a build search starts from: with one, a search for a node
 * whose nearest entry point PQ or chance put in the wrong place stayed
 * there, and the graph came out of islands (sentence embeddings: recall
 * 0.59 at L = 100, against 0.999 with four).
 */
#define GRAPH_BUILD_SEEDS	4

/*
 * Distances computed while the vectors this many ahead are fetched, whole
 * (up to this many bytes).  On 100K x 384 a build took 75.4 s without,
 * 61.1 s fetching 2 ahead, 54.8 s 4 ahead, 54.0 s 8 ahead; fetching only
 * the first 256 bytes 4 ahead, 71.1 s.  (8-bit codes, 30K x 384: 25.8 s 4
 * ahead, 25.2 s 8 ahead.)
 */
#define GRAPH_PREFETCH_AHEAD	8
#define GRAPH_PREFETCH_BYTES	4096

/*
 * Of list[0..deg), write the nodes the search has not met yet to ids, with
 * their distances to its query (search_dist), and mark them met; returns
 * how many.  The rows are far apart in memory, so each is fetched a few
 * distances ahead of its own: the first miss of each would otherwise stall
 * the loop.
 */
static int
unmet_neighbors(GateannGraphScratch *s, const uint32 *list, int deg, uint32_t *ids,
				float *dists)
{
	const GateannGraph *g = s->graph;
	Size		bytes;
	int			n = 0,
				i;

	for (i = 0; i < deg; i++)
	{
		uint32		nb = list[i];

		if (s->stamp[nb] == s->epoch)
			continue;
		s->stamp[nb] = s->epoch;
		if (n < GRAPH_PREFETCH_AHEAD)
		{
			const void *row = search_row(g, s, nb, &bytes);

			gateann_prefetch_range(row, Min(bytes, GRAPH_PREFETCH_BYTES));
		}
		ids[n++] = nb;
	}
	for (i = 0; i < n; i++)
	{
		if (i + GRAPH_PREFETCH_AHEAD < n)
		{
			const void *row = search_row(g, s, ids[i + GRAPH_PREFETCH_AHEAD], &bytes);

			gateann_prefetch_range(row, Min(bytes, GRAPH_PREFETCH_BYTES));
		}
		dists[i] = search_dist(g, s, ids[i]);
	}
	return n;
}

/* Keep an expanded node (with its distance to the target) for the caller */
static void
keep_expanded(GateannGraphScratch *s, uint32 id, float dist)
{
	if (s->nexp < s->max_expanded)
	{
		Candidate  *e = &s->expanded[s->nexp++];

		e->id = id;
		e->dist = dist;
		e->tiebreak = 0;
		e->expanded = true;
	}
}

/*
 * An expansion of the build's search: keep the node for the prune, and
 * return its neighbors not met yet, with their distances (search_dist).
 */
static int
expand_build(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	GateannGraphScratch *s = arg;
	int			deg;

	keep_expanded(s, id, dist);
	deg = copy_neighbors(s->graph, id, s->list_copy);
	return unmet_neighbors(s, s->list_copy, deg, ids, dists);
}

/*
 * The neighbor list the search will likely expand next: a list of a node
 * met long ago is rarely in cache, and copying it out stalled the build's
 * searches (15 % of a build of many copies of each vector).
 */
static void
prefetch_build(void *arg, uint32_t id)
{
	GateannGraphScratch *s = arg;

	gateann_prefetch(&s->graph->degree[id]);
	gateann_prefetch_range(neighbors_of(s->graph, id), sizeof(uint32) * s->graph->capacity);
}

/*
 * Start a search for `target`'s vector (or q, when target is InvalidNodeId):
 * a new visited set, the target never a candidate, the pool seeded with the
 * entry points nearest it.  Distances by the 8-bit copy when `quantized`
 * and the graph has one, else exact.  Returns the pool's size.
 */
static int
start_search(const GateannGraph *g, GateannGraphScratch *s, uint32 target,
			 const float *q, int L, bool quantized)
{
	if (target != InvalidNodeId)
		q = g->vectors + (Size) target * g->dims;
	s->sq = quantized && g->sq_codes != NULL;
	if (s->sq)
	{
		int			d;

		for (d = 0; d < g->dims; d++)
			s->query_low[d] = q[d] - g->sq_low[d];
	}
	if (++s->epoch == 0)
	{
		memset(s->stamp, 0, sizeof(uint32) * g->n);
		s->epoch = 1;
	}
	if (target != InvalidNodeId)
		s->stamp[target] = s->epoch;	/* never a candidate for itself */
	s->graph = g;
	s->query = q;
	s->nexp = 0;
	return seed_pool(g, s, target, L, GRAPH_BUILD_SEEDS);
}

/*
 * Greedy search for `target`'s vector (or q, when target is InvalidNodeId)
 * from the entry points nearest it, with list size L (search.c's walk),
 * ranking by the 8-bit copy.  Leaves the expanded nodes (with those
 * distances to the target) in scratch->expanded and returns how many there
 * are.
 */
static int
greedy_search(const GateannGraph *g, GateannGraphScratch *s, uint32 target,
			  const float *q, int L)
{
	int			psize = start_search(g, s, target, q, L, true);

	(void) gateann_best_first(s->pool, psize, L, -1, expand_build, prefetch_build, s,
							  s->nb_ids, s->nb_dists);
	return s->nexp;
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
 * p.  A candidate c' is occluded by a closer chosen c when
 * a * d(c, c') <= d(p, c') (squared distances).  The choice saturates: a
 * first round at a = 1 keeps one neighbor per direction (long edges among
 * them), then rounds at a = 1.2, 1.44, ... up to alpha fill the remaining
 * slots.  A single round at alpha would fill the list with the nearest
 * candidates wherever distances concentrate (high dimension, clusters:
 * almost no candidate is occluded at a > 1 there) and never reach the long
 * edges.  The result goes to s->prune_out in the order chosen; returns its
 * length.
 */
static int
robust_prune(const GateannGraph *g, GateannGraphScratch *s, uint32 p,
			 Candidate *cands, int ncands, float alpha, int R)
{
	int			i,
				j,
				nout = 0,
				nuniq = 0;
	float		a;

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
		cands[nuniq] = cands[i];
		s->occlusion[nuniq] = 0.0f;
		s->checked[nuniq] = 0;
		nuniq++;
	}

	/*
	 * Each candidate keeps the largest occlusion factor d(p, c') / d(c, c')
	 * over the chosen c closer to p than itself that it was compared with
	 * so far (DiskANN's formulation, evaluated lazily: comparisons stop
	 * once the factor exceeds the round's a, and resume in the next round).
	 * An exact duplicate of p (distance 0) is never occluded: otherwise one
	 * chosen duplicate would occlude all others, and sets of identical
	 * vectors would end up unreachable from each other.
	 */
	for (a = 1.0f;; a = Min(a * 1.2f, alpha))
	{
		for (i = 0; i < nuniq && nout < R; i++)
		{
			const float *ci = g->vectors + (Size) cands[i].id * g->dims;

			if (s->checked[i] < 0 || s->occlusion[i] > a)
				continue;		/* chosen, or occluded for good at this a */
			for (j = s->checked[i]; j < nout && s->occlusion[i] <= a; j++)
			{
				float		d;

				if (s->prune_pos[j] > i)
					continue;	/* chosen later in distance order */
				d = gateann_l2sq(g->vectors + (Size) s->prune_out[j] * g->dims, ci, g->dims);
				if (cands[i].dist > 0)
					s->occlusion[i] = Max(s->occlusion[i],
										  d > 0 ? cands[i].dist / d : get_float4_infinity());
			}
			s->checked[i] = j;
			if (s->occlusion[i] <= a)
			{
				s->prune_pos[nout] = i;
				s->prune_out[nout++] = cands[i].id;
				s->checked[i] = -1;
			}
		}
		if (nout >= R || a >= alpha)
			break;
	}
	return nout;
}

/*
 * Set the distance to node p of prune candidates cands[0..n), fetching
 * their vectors a few ahead (see unmet_neighbors): they are rarely in cache.
 */
static void
exact_distances(const GateannGraph *g, uint32 p, Candidate *cands, int n)
{
	Size		bytes = Min(sizeof(float) * g->dims, GRAPH_PREFETCH_BYTES);
	int			i;

	for (i = 0; i < Min(n, GRAPH_PREFETCH_AHEAD); i++)
		gateann_prefetch_range(g->vectors + (Size) cands[i].id * g->dims, bytes);
	for (i = 0; i < n; i++)
	{
		if (i + GRAPH_PREFETCH_AHEAD < n)
			gateann_prefetch_range(g->vectors +
								   (Size) cands[i + GRAPH_PREFETCH_AHEAD].id * g->dims,
								   bytes);
		cands[i].dist = vdist(g, p, cands[i].id);
	}
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
		s->prune_cands[at + i].expanded = false;
	}
	exact_distances(g, p, s->prune_cands + at, n);
	return at + n;
}

/*
 * Under node id's lock, put list[0..n) in as its list if its list is still
 * old[0..nold) (what the caller copied out and worked from with no lock
 * held); false if another process changed it meanwhile.
 */
static bool
put_list_if_unchanged(GateannGraph *g, uint32 id, const uint32 *old, int nold,
					  const uint32 *list, int n)
{
	uint32	   *nbrs = neighbors_of(g, id);
	bool		unchanged;

	lock_node(g, id);
	unchanged = (g->degree[id] == nold && memcmp(nbrs, old, sizeof(uint32) * nold) == 0);
	if (unchanged)
	{
		memcpy(nbrs, list, sizeof(uint32) * n);
		g->degree[id] = (uint16) n;
	}
	unlock_node(g, id);
	return unchanged;
}

/*
 * Add edge j -> p, pruning j's list when it is at capacity.
 *
 * In a parallel build the node's spinlock covers only copying the list out
 * and putting the new one in: the prune (distances, a sort) runs with no
 * lock held.  The list is put in only if it is still the one pruned;
 * otherwise another process changed it meanwhile, and the edge is added to
 * the list as it is now, from the start.
 */
static void
add_reverse_edge(GateannGraph *g, GateannGraphScratch *s, uint32 j, uint32 p,
				 float alpha)
{
	uint32	   *nbrs = neighbors_of(g, j);

	for (;;)
	{
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
		memcpy(s->list_copy, nbrs, sizeof(uint32) * deg);
		unlock_node(g, j);

		add_candidates(g, s, j, s->list_copy, deg, 0);
		add_candidates(g, s, j, &p, 1, deg);
		nout = robust_prune(g, s, j, s->prune_cands, deg + 1, alpha, g->R);
		if (put_list_if_unchanged(g, j, s->list_copy, deg, s->prune_out, nout))
			return;
		s->prunes_redone++;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The visit of a copy: p's vector is node t's, and t was visited first.  A
 * search for p would walk to t's neighbourhood and expand what t's search
 * expanded, and a prune would keep t's list with t added (a copy at
 * distance 0 is never occluded).  So p takes t and t's list as its own,
 * with no search and no prune, and t an edge to p: a query reaching the
 * vector reaches its copies through t.  (On 100K rows with every vector
 * stored twenty times, 95 % of the visits; distinct nodes whose prunes
 * choose a copy still give it in-edges.)  The edges p has already (reverse
 * edges of visits that chose it) stay after t's list, the whole within its
 * slack, which gateann_graph_finish prunes.  Returns false when t has no
 * list yet (in a parallel build another process may be visiting it): then
 * p searches.
 */
static bool
visit_copy(GateannGraph *g, GateannGraphScratch *s, uint32 p, uint32 t, float alpha)
{
	uint32	   *out = s->prune_out;
	uint32	   *had = s->nb_ids;
	int			tdeg = copy_neighbors(g, t, s->list_copy);
	int			nout,
				nhad,
				i,
				k;

	if (tdeg == 0)
		return false;
	for (;;)
	{
		nhad = copy_neighbors(g, p, had);
		nout = 0;
		out[nout++] = t;
		for (i = 0; i < tdeg && nout < g->R; i++)
			if (s->list_copy[i] != p)
				out[nout++] = s->list_copy[i];
		for (i = 0; i < nhad && nout < g->capacity; i++)
		{
			for (k = 0; k < nout && out[k] != had[i]; k++)
				;
			if (k == nout)
				out[nout++] = had[i];
		}
		if (put_list_if_unchanged(g, p, had, nhad, out, nout))
			break;
		CHECK_FOR_INTERRUPTS();
	}
	add_reverse_edge(g, s, t, p, alpha);
	return true;
}

/* The candidates of p's visit from a search for its vector */
static int
search_candidates(const GateannGraph *g, GateannGraphScratch *s, uint32 p, int L)
{
	int			nexp = greedy_search(g, s, p, NULL, L);
	int			ncands = 0;
	int			i;

	for (i = 0; i < nexp && ncands < s->max_prune_cands; i++)
		s->prune_cands[ncands++] = s->expanded[i];
	if (s->sq)
		exact_distances(g, p, s->prune_cands, ncands);
	return ncands;
}

void
gateann_graph_visit(GateannGraph *g, GateannGraphScratch *s, uint32 p, int L, float alpha)
{
	int			deg;
	int			ncands;
	int			i;
	int			nout;
	uint32		out[GATEANN_MAX_NEIGHBORS_LIMIT];

	if (g->twin != NULL && g->twin[p] != p && visit_copy(g, s, p, g->twin[p], alpha))
		return;
	ncands = search_candidates(g, s, p, L);
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

uint64
gateann_graph_prunes_redone(const GateannGraphScratch *s)
{
	return s->prunes_redone;
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

/*
 * Order visiting positions by their node's vector bytes, then by position:
 * the copies of a vector end up next to each other, the first visited
 * first.  (Bytes, not values: -0 and 0 are not copies, which costs only a
 * search.)
 */
static int
cmp_vector_position(const void *a, const void *b, void *arg)
{
	const GateannGraph *g = arg;
	uint32		pa = *(const uint32 *) a;
	uint32		pb = *(const uint32 *) b;
	int			c;

	/* (a sort of n positions makes about n log n calls) */
	if ((++twin_compares & 0xFFFF) == 0)
		CHECK_FOR_INTERRUPTS();
	c = memcmp(g->vectors + (Size) g->order[pa] * g->dims,
			   g->vectors + (Size) g->order[pb] * g->dims, sizeof(float) * g->dims);
	if (c != 0)
		return c;
	return (pa > pb) - (pa < pb);
}

/*
 * Each node's twin (graph.h), by sorting the visiting positions on their
 * vectors.  The sort runs in the adjacency array, which holds no list yet
 * and has room for at least one id a node: no memory beyond the twins.
 */
static void
find_twins(GateannGraph *g)
{
	uint32	   *sorted = g->adj;
	Size		bytes = sizeof(float) * g->dims;
	uint32		first = InvalidNodeId;
	uint32		i;

	for (i = 0; i < g->n; i++)
		sorted[i] = i;
	qsort_arg(sorted, g->n, sizeof(uint32), cmp_vector_position, g);
	for (i = 0; i < g->n; i++)
	{
		uint32		p = g->order[sorted[i]];

		if ((i & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		/* a run of equal vectors starts with the first visited */
		if (first == InvalidNodeId ||
			memcmp(g->vectors + (Size) p * g->dims,
				   g->vectors + (Size) first * g->dims, bytes) != 0)
			first = p;
		g->twin[p] = first;
	}
}

void
gateann_graph_init(GateannGraph *g, const uint32 *entries, int nentries)
{
	uint64		rng = UINT64CONST(0x6761746561616e6e);	/* "gateaann" */
	uint32		i;
	int			e;

	Assert(g->R <= GATEANN_MAX_NEIGHBORS_LIMIT);
	g->capacity = gateann_graph_capacity(g->R);
	memset(g->degree, 0, sizeof(uint16) * g->n);
	if (g->locks)
		for (i = 0; i < g->n; i++)
			SpinLockInit(&g->locks[i]);
	g->nentries = 0;
	if (g->n == 0)
	{
		g->medoid = InvalidNodeId;
		return;
	}
	g->medoid = (g->foreign != NULL && nentries > 0 && entries[0] < g->n) ?
		entries[0] : find_medoid(g);
	g->entries[g->nentries++] = g->medoid;
	for (e = 0; e < nentries && g->nentries < GATEANN_MAX_ENTRIES; e++)
	{
		int			k;

		if (entries[e] >= g->n)
			continue;
		for (k = 0; k < g->nentries && g->entries[k] != entries[e]; k++)
			;
		if (k == g->nentries)
			g->entries[g->nentries++] = entries[e];
	}

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
	if (g->twin != NULL)
		find_twins(g);
}

GateannGraphScratch *
gateann_graph_scratch_create(const GateannGraph *g, int L)
{
	GateannGraphScratch *s = palloc0(sizeof(GateannGraphScratch));

	s->stamp = palloc_extended((Size) Max(g->n, 1) * sizeof(uint32),
							   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	s->epoch = 0;
	s->pool = palloc(sizeof(GateannCandidate) * (L + 1));
	s->nb_ids = palloc(sizeof(uint32) * g->capacity);
	s->nb_dists = palloc(sizeof(float) * g->capacity);
	s->max_expanded = 8 * L;
	s->expanded = palloc(sizeof(Candidate) * s->max_expanded);
	s->max_prune_cands = s->max_expanded + g->capacity + 1;
	s->prune_cands = palloc(sizeof(Candidate) * s->max_prune_cands);
	s->occlusion = palloc(sizeof(float) * s->max_prune_cands);
	s->checked = palloc(sizeof(int) * s->max_prune_cands);
	s->prune_out = palloc(sizeof(uint32) * g->capacity);
	s->prune_pos = palloc(sizeof(int) * g->capacity);
	s->list_copy = palloc(sizeof(uint32) * g->capacity);
	s->seeds = palloc(sizeof(Candidate) * GATEANN_MAX_ENTRIES);
	s->query_low = palloc(sizeof(float) * Max(g->dims, 1));
	return s;
}

/*
 * A probe's scratch, given back when it is done: its visit stamps alone are
 * 4 bytes a node, and a build probes up to four times beside its own scratch
 */
static void
scratch_free(GateannGraphScratch *s)
{
	pfree(s->stamp);
	pfree(s->pool);
	pfree(s->nb_ids);
	pfree(s->nb_dists);
	pfree(s->expanded);
	pfree(s->prune_cands);
	pfree(s->occlusion);
	pfree(s->checked);
	pfree(s->prune_out);
	pfree(s->prune_pos);
	pfree(s->list_copy);
	pfree(s->seeds);
	pfree(s->query_low);
	pfree(s);
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
gateann_graph_finish(GateannGraph *g, GateannGraphScratch *s, float alpha, int r_max,
					 uint32 from, uint32 to)
{
	uint32		i;

	r_max = Max(1, Min(r_max, g->R));
	for (i = from; i < to; i++)
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

/* The repair's view of the build's graph (reach.h) */
typedef struct ConnectState
{
	GateannGraph *g;
	GateannGraphScratch *s;
	int			L;
	int			r_max;			/* the prefix: what tunneling follows */
} ConnectState;

static inline bool
is_foreign(const GateannGraph *g, uint32 id)
{
	return g->foreign != NULL && (g->foreign[id >> 3] & (1 << (id & 7))) != 0;
}

/*
 * What a walk follows from a node: the first r_max neighbors of its list;
 * nothing from a foreign member, whose prefix another partition chooses
 */
static int
prefix_neighbors(void *arg, uint32 id, uint32 *out, int max)
{
	const ConnectState *cs = arg;
	int			n = Min(Min((int) cs->g->degree[id], cs->r_max), max);

	if (is_foreign(cs->g, id))
		return 0;

	memcpy(out, neighbors_of(cs->g, id), sizeof(uint32) * n);
	return n;
}

/* Nodes near u: those a greedy search for it expands, nearest first */
static int
connect_near(void *arg, uint32 u, const uint8 *reached, uint32 *out, int max)
{
	ConnectState *cs = arg;
	int			nexp;
	int			i;

	if (is_foreign(cs->g, u))
		return -1;				/* its own partition links it */
	nexp = greedy_search(cs->g, cs->s, u, NULL, cs->L);

	qsort(cs->s->expanded, nexp, sizeof(Candidate), cmp_candidate);
	nexp = Min(nexp, max);
	for (i = 0; i < nexp; i++)
		out[i] = cs->s->expanded[i].id;
	return nexp;
}

static int
connect_can_link(void *arg, uint32 from, int need_room)
{
	ConnectState *cs = arg;

	if (is_foreign(cs->g, from))
		return 0;
	return !need_room || cs->g->degree[from] < cs->g->R;
}

static void
connect_link(void *arg, uint32 from, uint32 to, const uint32 *parent, uint32 parent_len)
{
	ConnectState *cs = arg;
	GateannGraph *g = cs->g;
	uint32		out[GATEANN_MAX_NEIGHBORS_LIMIT + 1];
	int			n = gateann_prefix_link(neighbors_of(g, from), g->degree[from], g->R, to,
										cs->r_max, from, parent, parent_len, out);

	if (n < 0)
		return;
	memcpy(neighbors_of(g, from), out, sizeof(uint32) * n);
	g->degree[from] = (uint16) n;
}

static int
connect_go_on(void *arg)
{
	CHECK_FOR_INTERRUPTS();
	return 1;
}

/*
 * Link every node the entry points do not reach over the first r_max
 * neighbors of each list (what tunneling follows) from reached nodes near
 * it: reach.c's repair, which never takes a way in from anyone.  Returns
 * how many nodes were linked.
 */
uint32
gateann_graph_connect(GateannGraph *g, GateannGraphScratch *s, int L, int r_max)
{
	GateannReachRepair rr;
	ConnectState cs;

	r_max = Max(1, Min(r_max, g->R));
	cs.g = g;
	cs.s = s;
	cs.L = L;
	cs.r_max = r_max;
	memset(&rr, 0, sizeof(rr));
	rr.nnodes = g->n;
	rr.roots = g->entries;
	rr.nroots = g->nentries;
	rr.prefix_len = r_max;
	rr.prefix = prefix_neighbors;
	rr.near = connect_near;
	rr.can_link = connect_can_link;
	rr.link = connect_link;
	rr.go_on = connect_go_on;
	rr.arg = &cs;
	rr.reached = palloc_extended(((Size) g->n + 7) / 8, MCXT_ALLOC_HUGE);
	rr.parent = palloc_extended(sizeof(uint32) * (Size) Max(g->n, 1), MCXT_ALLOC_HUGE);
	rr.queue = palloc_extended(sizeof(uint32) * (Size) Max(g->n, 1), MCXT_ALLOC_HUGE);
	rr.row = palloc(sizeof(uint32) * (r_max + 1));
	rr.max_candidates = s->max_expanded;
	rr.candidates = palloc(sizeof(uint32) * Max(rr.max_candidates, 1));
	(void) gateann_reach_repair(&rr);
	pfree(rr.reached);
	pfree(rr.parent);
	pfree(rr.queue);
	pfree(rr.row);
	pfree(rr.candidates);
	return rr.linked;
}

/*
 * How many neighbors of each list tunneling needs.  A filtered walk reads
 * the nodes that match (and follows their whole lists) and tunnels through
 * the others over the first r_max of theirs, the in-memory share.  Where
 * that share is a navigable subgraph, the walk finds what it would find
 * over whole lists; on data of high intrinsic dimension it is not (an
 * isotropic Gaussian at 384 dimensions: recall 0.987 with 32 of 64 against
 * 0.999 with all 64, 10 % filter, bench/RESULTS.md).  So the build measures
 * it: PROBE_QUERIES of its own nodes (each left out: it is neither a result
 * nor a candidate) are searched for with a filter that passes about one
 * node in PROBE_MATCH_EVERY, once tunneling over prefixes and once over
 * whole lists, with exact distances, and recall@10 is counted against the
 * exact answer.  The prefix is kept unless it loses more than
 * PROBE_MAX_LOSS of recall; then tunneling keeps whole lists (twice the
 * neighbor store).  Deterministic: the same rows give the same choice.
 * The lists must be ordered and connected for r_max.
 */
#define PROBE_MIN_NODES		2000
#define PROBE_QUERIES		GATEANN_GRAPH_PROBE_QUERIES
#define PROBE_MATCH_EVERY	10
/* the list a walk keeps: L = 100 at a 10 % filter */
#define PROBE_LIST			1000
#define PROBE_K				GATEANN_GRAPH_PROBE_K
#define PROBE_MAX_LOSS		0.005

typedef struct ProbeWalk
{
	GateannGraphScratch *s;
	bool		filtered;		/* false: every node matches */
	int			prefix;			/* neighbors followed from a node that fails */
} ProbeWalk;

static inline bool
probe_matches(uint32 id)
{
	return tiebreak_hash(0x70726f62, id) % PROBE_MATCH_EVERY == 0;
}

/*
 * The nodes a probe takes its queries and their true neighbors from: every
 * node, or (the build's first pass, gateann_graph_next_step) the ones
 * visited so far, order[0..n), with a bit set in `member` for each.
 */
typedef struct ProbeSet
{
	const uint32 *ids;			/* NULL: every node */
	uint32		n;
	const uint8 *member;		/* NULL: every node */
} ProbeSet;

static inline uint32
probe_set_id(const ProbeSet *set, uint32 k)
{
	return set->ids ? set->ids[k] : k;
}

static inline bool
probe_set_has(const ProbeSet *set, uint32 id)
{
	return set->member == NULL || (set->member[id >> 3] & (1 << (id & 7))) != 0;
}

/* The node a probe searches for as its j-th of nq: spread over the set */
static inline uint32
probe_query(const ProbeSet *set, int j, int nq)
{
	/* (the build numbered the nodes cluster by cluster) */
	return probe_set_id(set, (uint32) (((uint64) j * set->n) / nq));
}

static int
expand_probe(void *arg, uint32_t id, float dist, uint32_t *ids, float *dists)
{
	ProbeWalk  *w = arg;
	GateannGraphScratch *s = w->s;
	int			deg = s->graph->degree[id];

	if (!w->filtered || probe_matches(id))
		keep_expanded(s, id, dist);
	else
		deg = Min(deg, w->prefix);
	return unmet_neighbors(s, neighbors_of(s->graph, id), deg, ids, dists);
}

/*
 * The distance of each probe node's PROBE_K-th nearest other node (that
 * matches, when filtered), in one pass over the vectors: the probe nodes'
 * vectors stay in cache.
 */
static void
probe_kth_distances(const GateannGraph *g, const ProbeSet *set, int nq, bool filtered,
					float *kth)
{
	GateannCandidate *best = palloc(sizeof(GateannCandidate) * PROBE_K * nq);
	int		   *nbest = palloc0(sizeof(int) * nq);
	uint32		k;
	int			j;

	for (k = 0; k < set->n; k++)
	{
		uint32		i = probe_set_id(set, k);

		if ((k & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (filtered && !probe_matches(i))
			continue;
		for (j = 0; j < nq; j++)
		{
			uint32		q = probe_query(set, j, nq);
			GateannCandidate *b = best + (Size) j * PROBE_K;
			float		d;

			if (i == q)
				continue;
			d = vdist(g, q, i);
			if (!gateann_candidate_rejects(b, nbest[j], PROBE_K, d))
				(void) gateann_candidate_insert(b, &nbest[j], PROBE_K, i, d);
		}
	}
	for (j = 0; j < nq; j++)
		kth[j] = nbest[j] == PROBE_K ? best[(Size) j * PROBE_K + PROBE_K - 1].dist :
			get_float4_infinity();
	pfree(best);
	pfree(nbest);
}

/*
 * Of the true PROBE_K nearest matches of q (every node when !filtered), how
 * many a walk with a list of `list` finds.  A filtered walk leaves q out of
 * the graph: it compares two ways of tunneling, which the gap hurts alike.
 * An unfiltered one, whose recall is reported, walks through q without
 * counting it, as a search for a stored vector does: with q left out its
 * neighborhood is sparser than around a new vector (its neighbors dropped
 * edges among themselves that q covered), and the estimate came out far
 * too low (0.78 against 0.94 for the scan's queries, isotropic Gaussian,
 * 128 dimensions, 100K rows).
 */
static int
probe_hits(const GateannGraph *g, GateannGraphScratch *s, const ProbeSet *set, uint32 q,
		   bool filtered, int prefix, int list, float kth)
{
	ProbeWalk	w;
	int			psize;
	int			hits = 0;
	int			i;

	if (filtered)
		psize = start_search(g, s, q, NULL, list, false);
	else
		psize = start_search(g, s, InvalidNodeId, g->vectors + (Size) q * g->dims, list,
							 false);
	w.s = s;
	w.filtered = filtered;
	w.prefix = prefix;
	(void) gateann_best_first(s->pool, psize, list, -1, expand_probe, NULL, &w,
							  s->nb_ids, s->nb_dists);
	for (i = 0; i < s->nexp; i++)
		if (s->expanded[i].id != q && s->expanded[i].dist <= kth &&
			probe_set_has(set, s->expanded[i].id))
			hits++;
	return Min(hits, PROBE_K);
}

/*
 * r_max, or R when tunneling over the first r_max neighbors of each list
 * finds clearly less than over whole lists (above).
 */
static int
choose_tunnel_neighbors(const GateannGraph *g, int r_max)
{
	GateannGraphScratch *s;
	float	   *kth;
	int64		hits_prefix = 0,
				hits_whole = 0;
	int			nq = PROBE_QUERIES;
	int			j;
	ProbeSet	all = {NULL, g->n, NULL};
	instr_time	start,
				elapsed;

	if (r_max >= g->R || g->n < PROBE_MIN_NODES)
		return r_max;
	INSTR_TIME_SET_CURRENT(start);
	s = gateann_graph_scratch_create(g, PROBE_LIST);
	kth = palloc(sizeof(float) * nq);
	probe_kth_distances(g, &all, nq, true, kth);
	for (j = 0; j < nq; j++)
	{
		uint32		q = probe_query(&all, j, nq);

		CHECK_FOR_INTERRUPTS();
		hits_prefix += probe_hits(g, s, &all, q, true, r_max, PROBE_LIST, kth[j]);
		hits_whole += probe_hits(g, s, &all, q, true, g->R, PROBE_LIST, kth[j]);
	}
	pfree(kth);
	scratch_free(s);
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	elog(DEBUG1, "gateann build: tunneling over %d of %d neighbors finds %.3f of the nearest matches, over all %.3f (probe: %.3f s)",
		 r_max, g->R, (double) hits_prefix / (nq * PROBE_K),
		 (double) hits_whole / (nq * PROBE_K), INSTR_TIME_GET_DOUBLE(elapsed));
	if ((double) (hits_whole - hits_prefix) > PROBE_MAX_LOSS * nq * PROBE_K)
		return g->R;
	return r_max;
}

static int
probe_recall(const GateannGraph *g, const ProbeSet *set, const int *lists, int nlists,
			 double enough, double *recall)
{
	GateannGraphScratch *s;
	float	   *kth;
	int			nq = PROBE_QUERIES;
	int			maxlist = 0;
	int			tried;
	int			j;
	instr_time	start,
				elapsed;

	if (set->n < PROBE_MIN_NODES || nlists <= 0)
		return 0;
	INSTR_TIME_SET_CURRENT(start);
	for (j = 0; j < nlists; j++)
		maxlist = Max(maxlist, lists[j]);
	kth = palloc(sizeof(float) * nq);
	probe_kth_distances(g, set, nq, false, kth);
	s = gateann_graph_scratch_create(g, maxlist);
	for (tried = 0; tried < nlists; tried++)
	{
		int64		hits = 0;

		for (j = 0; j < nq; j++)
		{
			CHECK_FOR_INTERRUPTS();
			hits += probe_hits(g, s, set, probe_query(set, j, nq), false, g->R,
							   lists[tried], kth[j]);
		}
		recall[tried] = (double) hits / (nq * PROBE_K);
		if (recall[tried] >= enough)
		{
			tried++;
			break;
		}
	}
	INSTR_TIME_SET_CURRENT(elapsed);
	INSTR_TIME_SUBTRACT(elapsed, start);
	elog(DEBUG1, "gateann build: over %u of %u nodes, an unfiltered search with a list of %d finds %.3f of the nearest neighbors (%d lists tried, probe: %.3f s)",
		 set->n, g->n, lists[0], recall[0], tried, INSTR_TIME_GET_DOUBLE(elapsed));
	pfree(kth);
	scratch_free(s);
	return tried;
}

int
gateann_graph_probe_recall(const GateannGraph *g, const int *lists, int nlists,
						   double enough, double *recall)
{
	ProbeSet	all = {NULL, g->n, NULL};

	return probe_recall(g, &all, lists, nlists, enough, recall);
}

void
gateann_graph_complete(GateannGraph *g, GateannGraphScratch *s, int L, float alpha,
					   int r_max, bool choose_r_max)
{
	uint32		linked;

	r_max = Max(1, Min(r_max, g->R));
	linked = gateann_graph_connect(g, s, L, r_max);
	elog(DEBUG1, "gateann build: %u nodes linked to be reachable over %d neighbors",
		 linked, r_max);
	if (message_level_is_interesting(DEBUG1))
	{
		uint64		edges = 0;
		uint32		full = 0;
		uint32		i;

		for (i = 0; i < g->n; i++)
		{
			edges += g->degree[i];
			full += (g->degree[i] >= g->R);
		}
		elog(DEBUG1, "gateann build: %.1f neighbors per node on average, %u of %u lists full (%d)",
			 (double) edges / Max(g->n, 1), full, g->n, g->R);
	}

	/*
	 * The graph is the same whatever the choice: a node reachable over the
	 * first r_max of each list is reachable over whole lists, and an ALTER
	 * INDEX ... SET (tunnel_neighbors = r_max) later finds the prefixes
	 * ordered and connected for it.
	 */
	g->r_max = choose_r_max ? choose_tunnel_neighbors(g, r_max) : r_max;
}

/*
 * The build's passes.  One pass at alpha with half the build list gives
 * about as good a graph as DiskANN's two passes (alpha 1, then alpha, each
 * with the whole list) in a third to a half of the time (100K rows,
 * recall@10 at L = 20-100: within 0.001 on clustered, anisotropic and
 * bench/gateann_bench/gen.py's shapes, 0.002-0.004 lower on sentence
 * embeddings, higher on many copies of each vector, whose queries that
 * found none of their neighbors went from 7 to 1 of 200).  On data of high
 * intrinsic dimension it does not: an isotropic Gaussian of 128 dimensions
 * lost 0.015, which the two passes keep.  So a probe decides, twice: after a
 * quarter of the nodes (over those: hard data shows early, and little is
 * thrown away) and at the end of the pass (over all: a small graph is
 * easier than the whole, 5,000 of 20,000 isotropic 256-dimensional rows
 * passed where the whole did not).  A graph that finds GRAPH_ONE_PASS_RECALL
 * of the nearest neighbors at the session's list keeps its one pass (100K
 * rows: clusters, current, duplicates, anisotropic 0.999-1.000); one whose
 * first quarter falls short is emptied and built in the two passes
 * (isotropic Gaussian, 128 dimensions: 0.943 over the first quarter), the
 * first of them with half the list too: it only lays out what the second,
 * with the whole list, searches (isotropic 128-d, 100K: recall@10 at L =
 * 20 / 40 / 100 0.929 / 0.928 / 0.931 against 0.924 / 0.925 / 0.929 with
 * the whole list, in 40.8 s instead of 46.7; a quarter of the list lost
 * 0.01).  One whose quarter passed and whole did not has a whole pass's
 * lists already: it gets the second of the two passes only, on those lists
 * (1M tightly clustered rows, 0.979 over all: 576 s instead of 715,
 * recall@10 within 0.003).  A graph too small to
 * probe gets the two passes with the whole list (it is cheap).
 */
#define GRAPH_ONE_PASS_RECALL	0.98
#define GRAPH_HEAD_SHARE		4	/* the probe after 1/4 of the first pass */

typedef enum GraphStage
{
	STAGE_START = 0,			/* GateannGraphStep's zero: nothing visited */
	STAGE_ONE_HEAD,				/* one pass: its first quarter */
	STAGE_ONE_TAIL,				/* one pass: the rest */
	STAGE_TWO_FIRST,			/* two passes: alpha 1 */
	STAGE_TWO_SECOND			/* two passes: alpha */
} GraphStage;

static bool
set_step(GateannGraphStep *step, int stage, int pass, float alpha, int L, uint32 from,
		 uint32 to)
{
	step->stage = stage;
	step->pass = pass;
	step->alpha = alpha;
	step->L = L;
	step->from = from;
	step->to = to;
	elog(DEBUG1, "gateann build: pass %d, nodes %u to %u in visiting order, alpha %.2f, list %d",
		 pass, from, to, alpha, L);
	return true;
}

/* Of a one-pass graph's first `head` nodes: do they find enough? */
static bool
one_pass_is_enough(const GateannGraph *g, uint32 head)
{
	uint8	   *member = NULL;
	ProbeSet	set = {g->order, head, NULL};
	int			list = gateann_search_list_size;
	double		recall;
	uint32		k;

	/* (queries drawn from the visiting order either way; over all, no test) */
	if (head < g->n)
	{
		member = palloc0((g->n + 7) / 8);
		for (k = 0; k < head; k++)
			member[g->order[k] >> 3] |= 1 << (g->order[k] & 7);
		set.member = member;
	}
	if (probe_recall(g, &set, &list, 1, 1.0, &recall) == 0)
		recall = 0.0;
	if (member)
		pfree(member);
	if (recall < GRAPH_ONE_PASS_RECALL)
		elog(DEBUG1, "gateann build: two passes: one pass over %u of %u nodes finds %.3f of the nearest neighbors, under %.2f",
			 head, g->n, recall, GRAPH_ONE_PASS_RECALL);
	else if (head == g->n)
		elog(DEBUG1, "gateann build: one pass: it finds %.3f of the nearest neighbors", recall);
	return recall >= GRAPH_ONE_PASS_RECALL;
}

bool
gateann_graph_next_step(GateannGraph *g, GateannGraphStep *step, int L, float alpha)
{
	int			one_pass_list = Min(L, Max(L / 2, g->R));
	uint32		head = g->n / GRAPH_HEAD_SHARE;

	switch ((GraphStage) step->stage)
	{
		case STAGE_START:
			if (head >= PROBE_MIN_NODES)
				return set_step(step, STAGE_ONE_HEAD, 1, alpha, one_pass_list, 0, head);
			return set_step(step, STAGE_TWO_FIRST, 1, 1.0f, L, 0, g->n);
		case STAGE_ONE_HEAD:
			if (one_pass_is_enough(g, head))
				return set_step(step, STAGE_ONE_TAIL, 1, alpha, one_pass_list, head, g->n);
			break;
		case STAGE_ONE_TAIL:
			if (one_pass_is_enough(g, g->n))
				return false;
			/* the whole short where its quarter was not: refine, keep the lists */
			return set_step(step, STAGE_TWO_SECOND, 2, alpha, L, 0, g->n);
		case STAGE_TWO_FIRST:
			return set_step(step, STAGE_TWO_SECOND, step->pass + 1, alpha, L, 0, g->n);
		case STAGE_TWO_SECOND:
			return false;
	}
	/* one pass over the first quarter is not enough: empty the lists, two passes */
	memset(g->degree, 0, sizeof(uint16) * g->n);
	return set_step(step, STAGE_TWO_FIRST, 2, 1.0f, one_pass_list, 0, g->n);
}

void
gateann_graph_build(GateannGraph *g, const uint32 *entries, int nentries, int L, float alpha,
					int r_max, bool choose_r_max,
					void (*progress) (int pass, uint32 done, uint32 total))
{
	GateannGraphScratch *s;
	GateannGraphStep step = {0};
	uint32		i;

	g->capacity = gateann_graph_capacity(g->R);
	g->adj = palloc_extended((Size) Max(g->n, 1) * g->capacity * sizeof(uint32),
							 MCXT_ALLOC_HUGE);
	g->degree = palloc_extended((Size) Max(g->n, 1) * sizeof(uint16), MCXT_ALLOC_HUGE);
	g->order = palloc_extended((Size) Max(g->n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	g->twin = palloc_extended((Size) Max(g->n, 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	g->locks = NULL;
	g->r_max = Max(1, Min(r_max, g->R));
	gateann_graph_init(g, entries, nentries);
	if (g->n == 0)
		return;
	gateann_graph_quantize(g, palloc_extended((Size) g->n * g->dims, MCXT_ALLOC_HUGE),
						   palloc(sizeof(float) * g->dims),
						   palloc(sizeof(float) * g->dims));

	s = gateann_graph_scratch_create(g, L);
	while (gateann_graph_next_step(g, &step, L, alpha))
	{
		for (i = step.from; i < step.to; i++)
		{
			if ((i & 255) == 0 && progress)
				progress(step.pass, i, g->n);
			gateann_graph_visit(g, s, g->order[i], step.L, step.alpha);
		}
		if (progress)
			progress(step.pass, step.to, g->n);
	}
	gateann_graph_finish(g, s, alpha, r_max, 0, g->n);
	gateann_graph_complete(g, s, L, alpha, r_max, choose_r_max);
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
	g.nentries = 0;
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
