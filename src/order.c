/*
 * order.c — number the nodes of a new index cluster by cluster.
 *
 * A search reaches the in-memory stores at the ids of the nodes it crosses:
 * the PQ code of every new neighbor, the neighbor-store row and filter codes
 * of every node it tunnels through.  If ids follow the heap, those are
 * random accesses over arrays of many megabytes, each on a page of its own:
 * probably a TLB miss (in a virtual machine, a two-level page walk) and then
 * a cache miss, which prefetching did not hide.  Yet the
 * nodes one query crosses lie near each other in vector space.  Numbering
 * the nodes by k-means cluster puts them near each other in the arrays too,
 * so a query's accesses stay within the few pages of the clusters it passes
 * through; node records are written in the same order, so graph neighbors
 * also tend to share node pages.
 *
 * Two levels of 256 clusters: the first is the PQ's coarse quantizer (pq.h:
 * every code names its coarse centroid, so the groups come with the codes),
 * the second a k-means of its own inside each large first-level group.  At
 * a million nodes, groups of about 15 nodes, whose PQ codes share a few
 * cache lines, within first-level clusters whose codes span about 16
 * pages.  With one level a query's tunneling took about 15 % longer than
 * with two, and laying the groups out along a chain of nearest centroids
 * helped a little more (1M x 128, bench/RESULTS.md).
 */
#include "order.h"
#include "distance.h"
#include "pq.h"

#include <string.h>

#define ORDER_CLUSTERS GATEANN_PQ_CENTROIDS
_Static_assert(GATEANN_ORDER_GROUPS == ORDER_CLUSTERS,
			   "order.h's groups are the PQ's coarse centroids");
#define ORDER_ALIGN 64

/* a first-level group this large is split again (second level) */
#define ORDER_SPLIT_MIN		(2 * ORDER_CLUSTERS)
/* rows a second-level k-means trains on, at most */
#define ORDER_SPLIT_SAMPLE	(32 * ORDER_CLUSTERS)
#define ORDER_SPLIT_ITERATIONS	6

static size_t
align_up(size_t x)
{
	return (x + ORDER_ALIGN - 1) & ~((size_t) ORDER_ALIGN - 1);
}

size_t
gateann_locality_order_scratch_bytes(uint32_t n, int dims)
{
	/* the first level's labels and scratch are a split's, then its own */
	return gateann_locality_split_scratch_bytes(n, dims);
}

/*
 * The order the 256 groups are laid out in: a greedy nearest-neighbor chain
 * through the centroids (from centroid 0, always on to the nearest one not
 * yet placed), so that neighboring groups are near each other in space and
 * a query crossing from one group into the next stays in nearby memory.
 * rank[c] receives group c's position.
 */
int
gateann_nearest_unskipped(const float *centroids, int k, int dims, int from,
							  const uint8_t *skip)
{
	int			nearest = -1;
	float		best = 0.0f;
	int			c;

	for (c = 0; c < k; c++)
	{
		float		d;

		if (skip[c])
			continue;
		d = gateann_l2sq(centroids + (size_t) from * dims, centroids + (size_t) c * dims, dims);
		if (nearest < 0 || d < best)
		{
			nearest = c;
			best = d;
		}
	}
	return nearest;
}

static void
chain_centroids(const float *centroids, int dims, uint8_t rank[ORDER_CLUSTERS])
{
	uint8_t		placed[ORDER_CLUSTERS];
	int			cur = 0;
	int			pos;

	memset(placed, 0, sizeof(placed));
	for (pos = 0; pos < ORDER_CLUSTERS; pos++)
	{
		rank[cur] = (uint8_t) pos;
		placed[cur] = 1;
		cur = gateann_nearest_unskipped(centroids, ORDER_CLUSTERS, dims, cur, placed);
		if (cur < 0)
			break;
	}
}

/*
 * Group ids[0..n) by label[i] (the group of ids[i]), stably (counting
 * sort), groups in chain_centroids' order of `centroids`; start[g]
 * receives where the g-th group begins.
 */
static void
group_by_label(const float *centroids, int dims, uint32_t *ids, uint32_t n,
			   uint8_t *label, uint32_t *tmp, uint32_t start[ORDER_CLUSTERS + 1])
{
	uint8_t		rank[ORDER_CLUSTERS];
	uint32_t	next = 0;
	uint32_t	i;
	int			c;

	chain_centroids(centroids, dims, rank);
	memset(start, 0, sizeof(uint32_t) * (ORDER_CLUSTERS + 1));
	for (i = 0; i < n; i++)
	{
		label[i] = rank[label[i]];
		start[label[i]]++;
	}
	for (c = 0; c < ORDER_CLUSTERS; c++)
	{
		uint32_t	size = start[c];

		start[c] = next;
		next += size;
	}
	start[ORDER_CLUSTERS] = n;
	for (i = 0; i < n; i++)
		tmp[start[label[i]]++] = ids[i];
	/* the loop above advanced start[c] to the end of group c */
	for (c = ORDER_CLUSTERS; c > 0; c--)
		start[c] = start[c - 1];
	start[0] = 0;
	memcpy(ids, tmp, sizeof(uint32_t) * n);
}

/* Scratch of one group's split: its own centroids, sample, labels, k-means */
typedef struct SplitScratch
{
	size_t		centroids;		/* 256 * dims floats */
	size_t		rows;			/* ORDER_SPLIT_SAMPLE * dims floats */
	size_t		label;			/* max_size bytes */
	size_t		tmp;			/* max_size uint32 */
	size_t		kmeans;			/* gateann_kmeans scratch */
	size_t		total;
} SplitScratch;

static void
split_scratch_layout(uint32_t max_size, int dims, SplitScratch *l)
{
	size_t		off = 0;

	l->centroids = off;
	off = align_up(off + (size_t) ORDER_CLUSTERS * dims * sizeof(float));
	l->rows = off;
	off = align_up(off + (size_t) ORDER_SPLIT_SAMPLE * dims * sizeof(float));
	l->label = off;
	off = align_up(off + max_size);
	l->tmp = off;
	off = align_up(off + (size_t) max_size * sizeof(uint32_t));
	l->kmeans = off;
	off += gateann_kmeans_scratch_bytes(GATEANN_PQ_CENTROIDS, ORDER_SPLIT_SAMPLE, dims);
	l->total = off;
}

size_t
gateann_locality_split_scratch_bytes(uint32_t max_size, int dims)
{
	SplitScratch l;

	split_scratch_layout(max_size, dims, &l);
	return ORDER_ALIGN + l.total;
}

void
gateann_locality_first_level(const float *coarse, int dims, const uint8_t *group,
							 size_t group_stride, uint32_t n, uint32_t *order,
							 uint8_t *label, uint32_t *tmp, uint32_t top[ORDER_CLUSTERS + 1])
{
	uint32_t	i;

	for (i = 0; i < n; i++)
	{
		order[i] = i;
		label[i] = group[(size_t) i * group_stride];
	}
	group_by_label(coarse, dims, order, n, label, tmp, top);
}

/*
 * Second level: a large group (about 4,000 nodes per group at a million)
 * is still many pages of every store; split it into up to 256 again, on a
 * sample of its own rows spread over it.
 */
void
gateann_locality_split_group(const float *vectors, int dims, uint32_t *ids, uint32_t size,
							 uint64_t seed, int g, void *scratch,
							 void (*check_interrupts) (void))
{
	char	   *base = (char *) align_up((size_t) (uintptr_t) scratch);
	SplitScratch l;
	float	   *centroids;
	float	   *rows;
	uint8_t    *label;
	uint32_t	sub[ORDER_CLUSTERS + 1];
	int			ns = size < ORDER_SPLIT_SAMPLE ? (int) size : ORDER_SPLIT_SAMPLE;
	uint32_t	i;
	int			j;

	if (size < ORDER_SPLIT_MIN)
		return;
	split_scratch_layout(size, dims, &l);
	centroids = (float *) (base + l.centroids);
	rows = (float *) (base + l.rows);
	label = (uint8_t *) (base + l.label);
	for (j = 0; j < ns; j++)
		memcpy(rows + (size_t) j * dims,
			   vectors + (size_t) ids[(uint64_t) j * size / ns] * dims,
			   sizeof(float) * dims);
	gateann_kmeans(centroids, GATEANN_PQ_CENTROIDS, rows, ns, dims,
				   seed ^ ((uint64_t) (g + 1) * UINT64_C(0x9E3779B97F4A7C15)),
				   ORDER_SPLIT_ITERATIONS, base + l.kmeans, check_interrupts);
	for (i = 0; i < size; i++)
	{
		label[i] = (uint8_t) gateann_pq_nearest(centroids, vectors + (size_t) ids[i] * dims,
												dims, NULL);
		if (check_interrupts && (i & 4095) == 4095)
			check_interrupts();
	}
	group_by_label(centroids, dims, ids, size, label, (uint32_t *) (base + l.tmp), sub);
}

void
gateann_locality_order(const float *vectors, uint32_t n, int dims,
					   const float *coarse, const uint8_t *group, size_t group_stride,
					   uint64_t seed, uint32_t *order, void *scratch,
					   void (*check_interrupts) (void))
{
	char	   *base = (char *) align_up((size_t) (uintptr_t) scratch);
	SplitScratch l;
	uint32_t	top[ORDER_CLUSTERS + 1];
	int			g;

	split_scratch_layout(n, dims, &l);
	gateann_locality_first_level(coarse, dims, group, group_stride, n, order,
								 (uint8_t *) (base + l.label), (uint32_t *) (base + l.tmp), top);
	for (g = 0; g < ORDER_CLUSTERS; g++)
		gateann_locality_split_group(vectors, dims, order + top[g], top[g + 1] - top[g],
									 seed, g, scratch, check_interrupts);
}

void
gateann_permute_rows(char *rows, size_t row_bytes, uint32_t n,
					 const uint32_t *order, uint8_t *done, char *tmp)
{
	uint32_t	i;

	/* follow each cycle of the permutation once, holding its first row aside */
	for (i = 0; i < n; i++)
	{
		uint32_t	j = i;

		if (done[i >> 3] & (1 << (i & 7)))
			continue;
		memcpy(tmp, rows + (size_t) i * row_bytes, row_bytes);
		for (;;)
		{
			uint32_t	from = order[j];

			done[j >> 3] |= (uint8_t) (1 << (j & 7));
			if (from == i)
				break;
			memcpy(rows + (size_t) j * row_bytes, rows + (size_t) from * row_bytes,
				   row_bytes);
			j = from;
		}
		memcpy(rows + (size_t) j * row_bytes, tmp, row_bytes);
	}
}
