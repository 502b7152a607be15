/*
 * test_reach.c — reachability over prefixes (src/reach.c): the walk, a link
 * into a prefix, the repair of build and VACUUM.
 *
 * The bugs these guard against: an edge to be linked into a list shorter
 * than the prefix was not added at all (VACUUM left nodes unreachable with
 * max_neighbors = tunnel_neighbors); linking pushed out of a prefix the
 * entry that was some node's only way in, and the repair that chose that
 * entry by in-degree (a node with two in-edges, one of them from a node it
 * alone leads to, looked safe) linked and stranded nodes in turn until a
 * cap on tries left some unreachable after a build.
 */
#include "test_common.h"
#include "reach.h"

#include <stdlib.h>
#include <string.h>

#define MAXDEG 8

static int
pos_of(const uint32_t *l, int n, uint32_t x)
{
	int			i;

	for (i = 0; i < n; i++)
		if (l[i] == x)
			return i;
	return -1;
}

static void
case_short_list_appends(void)
{
	uint32_t	list[] = {5, 6};
	uint32_t	out[MAXDEG + 1];
	int			n = gateann_prefix_link(list, 2, MAXDEG, 9, 4, 0, NULL, 0, out);

	CHECK(n == 3 && out[2] == 9, "got %d: %s\n", n, test_show_ids(out, n));
}

static void
case_in_prefix_unchanged(void)
{
	uint32_t	list[] = {5, 6, 7, 8, 9};
	uint32_t	out[MAXDEG + 1];

	CHECK(gateann_prefix_link(list, 5, MAXDEG, 7, 4, 0, NULL, 0, out) == -1,
		  "an entry already in the prefix changed the list\n");
}

static void
case_past_prefix_moved_in(void)
{
	uint32_t	list[] = {1, 2, 3, 4, 5, 6};
	uint32_t	out[MAXDEG + 1];
	int			n = gateann_prefix_link(list, 6, MAXDEG, 6, 3, 0, NULL, 0, out);

	CHECK(n == 6, "length %d\n", n);
	CHECK(pos_of(out, n, 6) >= 0 && pos_of(out, n, 6) < 3, "6 not in the prefix: %s\n",
		  test_show_ids(out, n));
	CHECK(pos_of(out, n, 3) == 3, "the entry pushed out is not just past the prefix: %s\n",
		  test_show_ids(out, n));
}

/* the entry that leaves a full prefix is the last one that is no tree edge */
static void
case_victim_not_tree_edge(void)
{
	uint32_t	list[] = {10, 11, 12, 13};
	uint32_t	parent[20];
	uint32_t	out[MAXDEG + 1];
	int			n;

	memset(parent, 0xFF, sizeof(parent));
	parent[10] = 1;				/* 1 -> 10 and 1 -> 12 are tree edges */
	parent[11] = 5;
	parent[12] = 1;
	n = gateann_prefix_link(list, 4, 4, 15, 3, 1, parent, 20, out);
	CHECK(n == 4, "length %d (a full list keeps max_n)\n", n);
	CHECK(pos_of(out, n, 15) >= 0 && pos_of(out, n, 15) < 3, "new entry not in prefix: %s\n",
		  test_show_ids(out, n));
	CHECK(pos_of(out, n, 11) == 3, "11 (no tree edge) should have left the prefix: %s\n",
		  test_show_ids(out, n));
	CHECK(pos_of(out, n, 10) < 3 && pos_of(out, n, 12) < 3, "10, 12 should stay: %s\n",
		  test_show_ids(out, n));
	CHECK(pos_of(out, n, 13) == -1, "a full list loses its last entry: %s\n", test_show_ids(out, n));
	/* every entry a tree edge: the last one leaves; ids past parent_len are no tree edges */
	parent[11] = 1;
	n = gateann_prefix_link(list, 4, MAXDEG, 15, 3, 1, parent, 20, out);
	CHECK(pos_of(out, n, 12) == 3, "all tree edges: the last should leave: %s\n", test_show_ids(out, n));
	n = gateann_prefix_link(list, 4, MAXDEG, 15, 3, 1, parent, 11, out);
	CHECK(pos_of(out, n, 12) == 3 && pos_of(out, n, 11) < 3,
		  "ids past parent_len were read: %s\n", test_show_ids(out, n));
}

/* a walk over a small graph with a refused node */
typedef struct
{
	int			deg[6];
	uint32_t	adj[6][MAXDEG];
	int			refused;
} Tiny;

static int
tiny_neighbors(void *arg, uint32_t id, uint32_t *out, int max)
{
	Tiny	   *t = (Tiny *) arg;
	int			n = t->deg[id] < max ? t->deg[id] : max;

	if ((int) id == t->refused)
		return -1;
	memcpy(out, t->adj[id], sizeof(uint32_t) * n);
	return n;
}

static void
case_reach(void)
{
	Tiny		t = {{2, 1, 1, 0, 1, 0}, {{1, 2}, {3}, {4}, {0}, {5}, {0}}, 2};
	uint8_t		reached[1] = {0};
	uint32_t	queue[6],
				parent[6],
				row[MAXDEG];
	uint32_t	n = gateann_reach(6, 0, tiny_neighbors, &t, MAXDEG, reached, NULL, queue, row);

	/* 0 -> 1 -> 3; 0 -> 2 (refused: marked, not walked) -/-> 4 -> 5 */
	CHECK(n == 3, "walked %u nodes, want 3\n", n);
	CHECK(gateann_reached(reached, 2) && !gateann_reached(reached, 4) &&
		  !gateann_reached(reached, 5), "reached bits 0x%02x\n", reached[0]);
	/* a prefix of 1 neighbor: only 0 -> 1 -> 3, and the tree of that walk */
	reached[0] = 0;
	t.refused = -1;
	memset(parent, 0xFF, sizeof(parent));
	n = gateann_reach(6, 0, tiny_neighbors, &t, 1, reached, parent, queue, row);
	CHECK(n == 3 && !gateann_reached(reached, 2), "prefix walk reached %u (0x%02x)\n", n,
		  reached[0]);
	CHECK(parent[0] == GATEANN_NO_PARENT && parent[1] == 0 && parent[3] == 1 &&
		  parent[2] == GATEANN_NO_PARENT, "tree %u %u %u %u\n", parent[0], parent[1], parent[3],
		  parent[2]);
}

/* ---- the repair ---------------------------------------------------------- */

#define G_MAX_NODES 600
#define G_R 8

typedef struct
{
	uint32_t	n;
	int			R;
	int			prefix_len;
	int			deg[G_MAX_NODES];
	uint32_t	adj[G_MAX_NODES][G_R];
	int			dead[G_MAX_NODES];	/* no live node: needs no link, takes none */
	int			stop_after;		/* go_on calls before it says stop (< 0 never) */
	int			go_on_calls;
	uint32_t	links_made;
} Graph;

static uint32_t rng_state;

static uint32_t
rng(void)
{
	rng_state = rng_state * 1664525u + 1013904223u;
	return rng_state >> 8;
}

static int
g_prefix(void *arg, uint32_t id, uint32_t *out, int max)
{
	Graph	   *g = arg;
	int			n = g->deg[id];

	if (n > g->prefix_len)
		n = g->prefix_len;
	if (n > max)
		n = max;
	memcpy(out, g->adj[id], sizeof(uint32_t) * n);
	return n;
}

/* "near": ids by distance on a ring (the test's own metric) */
static int
g_near(void *arg, uint32_t id, const uint8_t *reached, uint32_t *out, int max)
{
	Graph	   *g = arg;
	int			k = 0;
	uint32_t	d;

	(void) reached;
	if (g->dead[id])
		return -1;
	for (d = 1; d < g->n && k < max; d++)
	{
		out[k++] = (id + d) % g->n;
		if (k < max)
			out[k++] = (id + g->n - d) % g->n;
	}
	return k;
}

static int
g_can_link(void *arg, uint32_t from, int need_room)
{
	Graph	   *g = arg;

	return !g->dead[from] && (!need_room || g->deg[from] < g->R);
}

static void
g_link(void *arg, uint32_t from, uint32_t to, const uint32_t *parent, uint32_t parent_len)
{
	Graph	   *g = arg;
	uint32_t	out[G_R + 1];
	int			n = gateann_prefix_link(g->adj[from], g->deg[from], g->R, to, g->prefix_len,
										from, parent, parent_len, out);

	if (n < 0)
		return;
	memcpy(g->adj[from], out, sizeof(uint32_t) * n);
	g->deg[from] = n;
	g->links_made++;
}

static int
g_go_on(void *arg)
{
	Graph	   *g = arg;

	return g->stop_after < 0 || g->go_on_calls++ < g->stop_after;
}

typedef struct
{
	uint8_t		reached[(G_MAX_NODES + 7) / 8];
	uint32_t	parent[G_MAX_NODES];
	uint32_t	queue[G_MAX_NODES];
	uint32_t	row[G_R + 1];
	uint32_t	candidates[16];
} Buffers;

static void
setup_repair(GateannReachRepair *rr, Graph *g, Buffers *b, const uint32_t *roots, int nroots)
{
	memset(rr, 0, sizeof(*rr));
	rr->nnodes = g->n;
	rr->roots = roots;
	rr->nroots = nroots;
	rr->prefix_len = g->prefix_len;
	rr->prefix = g_prefix;
	rr->near = g_near;
	rr->can_link = g_can_link;
	rr->link = g_link;
	rr->go_on = g_go_on;
	rr->arg = g;
	rr->reached = b->reached;
	rr->parent = b->parent;
	rr->queue = b->queue;
	rr->row = b->row;
	rr->candidates = b->candidates;
	rr->max_candidates = 16;
}

/* live nodes a fresh walk from the roots does not reach */
static uint32_t
count_unreached(Graph *g, const uint32_t *roots, int nroots)
{
	Buffers    *b = calloc(1, sizeof(Buffers));
	uint32_t	i,
				left = 0;
	int			e;

	for (e = 0; e < nroots; e++)
		(void) gateann_reach(g->n, roots[e], g_prefix, g, g->prefix_len, b->reached, NULL,
							 b->queue, b->row);
	for (i = 0; i < g->n; i++)
		if (!gateann_reached(b->reached, i) && !g->dead[i])
			left++;
	free(b);
	return left;
}

/*
 * Random graphs built to strand many nodes: small cycles (each node's one
 * other way in comes from the node it leads to), full lists, prefixes of 1
 * to 8: one repair must reach every live node, link no node twice and
 * leave lists within R.
 */
static void
case_repair_random(void)
{
	Graph	   *g = calloc(1, sizeof(Graph));
	Buffers    *b = calloc(1, sizeof(Buffers));
	int			round;

	rng_state = 12345;
	for (round = 0; round < 200; round++)
	{
		GateannReachRepair rr;
		uint32_t	roots[3];
		int			nroots = 1 + (int) (rng() % 3);
		uint32_t	i,
					before;
		int			e,
					j;

		memset(g, 0, sizeof(*g));
		g->n = 20 + rng() % (G_MAX_NODES - 20);
		g->R = 1 + (int) (rng() % G_R);
		g->prefix_len = 1 + (int) (rng() % g->R);
		g->stop_after = -1;
		for (i = 0; i < g->n; i++)
		{
			/* the cycle of 3 i belongs to first, then random ids, then none */
			uint32_t	base = i - i % 3;
			int			want = (int) (rng() % (g->R + 1));

			if (base + 2 < g->n && want > 0)
				g->adj[i][g->deg[i]++] = base + (i - base + 1) % 3;
			while (g->deg[i] < want)
			{
				uint32_t	to = rng() % g->n;

				if (to != i && pos_of(g->adj[i], g->deg[i], to) < 0)
					g->adj[i][g->deg[i]++] = to;
			}
			g->dead[i] = (rng() % 10 == 0);
		}
		for (e = 0; e < nroots; e++)
		{
			roots[e] = rng() % g->n;
			g->dead[roots[e]] = 0;
		}
		before = count_unreached(g, roots, nroots);
		setup_repair(&rr, g, b, roots, nroots);
		CHECK(gateann_reach_repair(&rr) == 1, "round %d: stopped\n", round);
		CHECK(rr.left == 0 && count_unreached(g, roots, nroots) == 0,
			  "round %d (n %u, R %d, prefix %d): %u left, %u unreached after the repair\n",
			  round, g->n, g->R, g->prefix_len, rr.left, count_unreached(g, roots, nroots));
		CHECK(rr.linked <= before && rr.links <= 2 * rr.linked && g->links_made <= rr.links,
			  "round %d: %u unreached before, %u linked, %u links (%u made)\n", round, before,
			  rr.linked, rr.links, g->links_made);
		for (i = 0; i < g->n; i++)
		{
			CHECK(g->deg[i] <= g->R, "round %d: node %u has %d entries\n", round, i, g->deg[i]);
			for (j = 0; j < g->deg[i]; j++)
				CHECK(pos_of(g->adj[i], j, g->adj[i][j]) < 0, "round %d: node %u: %s\n",
					  round, i, test_show_ids(g->adj[i], g->deg[i]));
		}
		/* a second repair has nothing to do */
		setup_repair(&rr, g, b, roots, nroots);
		(void) gateann_reach_repair(&rr);
		CHECK(rr.linked == 0 && rr.links == 0, "round %d: a second repair linked %u\n", round,
			  rr.linked);
	}
	free(g);
	free(b);
}

/*
 * The case the in-degree rule got wrong: 0 -> 1 -> 2 -> 1 with prefixes and
 * lists of 1.  Node 1 has two in-edges, but the one from 2 exists only
 * through 1: pushing 1 out of 0's list strands both.  The repair must link
 * 3 from 2 (a leaf of the walk's tree, whose entry is no tree edge).
 */
static void
case_repair_two_in_edges(void)
{
	Graph	   *g = calloc(1, sizeof(Graph));
	Buffers    *b = calloc(1, sizeof(Buffers));
	GateannReachRepair rr;
	uint32_t	root = 0;

	g->n = 4;
	g->R = 1;
	g->prefix_len = 1;
	g->stop_after = -1;
	g->deg[0] = g->deg[1] = g->deg[2] = 1;
	g->adj[0][0] = 1;
	g->adj[1][0] = 2;
	g->adj[2][0] = 1;
	setup_repair(&rr, g, b, &root, 1);
	(void) gateann_reach_repair(&rr);
	CHECK(rr.linked == 1 && count_unreached(g, &root, 1) == 0 && g->adj[2][0] == 3 &&
		  g->adj[0][0] == 1 && g->adj[1][0] == 2,
		  "linked %u; lists 0:%u 1:%u 2:%u\n", rr.linked, g->adj[0][0], g->adj[1][0],
		  g->adj[2][0]);
	free(g);
	free(b);
}

/* go_on's answer stops the repair */
static void
case_repair_stops(void)
{
	Graph	   *g = calloc(1, sizeof(Graph));
	Buffers    *b = calloc(1, sizeof(Buffers));
	GateannReachRepair rr;
	uint32_t	root = 0;

	g->n = 10;
	g->R = 2;
	g->prefix_len = 2;
	g->stop_after = 1;
	setup_repair(&rr, g, b, &root, 1);
	CHECK(gateann_reach_repair(&rr) == 0, "not stopped\n");
	CHECK(rr.linked <= 1, "linked %u after the stop\n", rr.linked);
	free(g);
	free(b);
}

void
run_reach_tests(void)
{
	RUN_CASE("reach: a list shorter than the prefix gets the link", case_short_list_appends());
	RUN_CASE("reach: an entry in the prefix leaves the list alone", case_in_prefix_unchanged());
	RUN_CASE("reach: an entry past the prefix is moved in", case_past_prefix_moved_in());
	RUN_CASE("reach: the entry leaving a full prefix is no tree edge",
			 case_victim_not_tree_edge());
	RUN_CASE("reach: breadth-first walk, refused nodes, prefixes, its tree", case_reach());
	RUN_CASE("reach: repair of random stranding graphs reaches every live node",
			 case_repair_random());
	RUN_CASE("reach: repair where an in-edge comes from the node it leads to",
			 case_repair_two_in_edges());
	RUN_CASE("reach: go_on stops the repair", case_repair_stops());
}
