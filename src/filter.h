/*
 * filter.h — filter columns (the second and later index columns): their
 * layout inside node records and their serialisation during a build.
 *
 * This issue stores exact copies of the values in each record; evaluating
 * predicates against them (and the in-memory filter store) builds on this.
 */
#ifndef GATEANN_FILTER_H
#define GATEANN_FILTER_H

#include "gateann.h"

#include "access/skey.h"
#include "utils/jsonb.h"
#include "utils/jsonpath.h"

/* Varlena values longer than this are flagged overflowed, not copied. */
#define GATEANN_FILTER_MAX_INLINE	256
/* Slot payload for a variable-width column that had no values at build */
#define GATEANN_FILTER_DEFAULT_INLINE	32

typedef struct GateannFilterLayout
{
	int			ncols;
	GateannFilterColumn cols[GATEANN_MAX_FILTER_COLS];
	uint32		max_varlena[GATEANN_MAX_FILTER_COLS];	/* seen during build */
} GateannFilterLayout;

/* Serialised filter values of every node collected during a build. */
typedef struct GateannFilterArena
{
	char	   *data;
	Size		used;
	Size		allocated;
	Size	   *node_offset;	/* per node */
	uint32		nnodes;
	uint32		node_capacity;
} GateannFilterArena;

extern GateannFilterLayout *gateann_filter_layout_create(Relation index);

/* How a column of this type is kept in the filter store (GATEANN_FILTER_KIND_*) */
extern uint8 gateann_filter_column_kind(Oid typid);
extern void gateann_filter_arena_init(GateannFilterArena *arena,
									  const GateannFilterLayout *layout);
extern void gateann_filter_arena_add(GateannFilterArena *arena,
									 GateannFilterLayout *layout,
									 Datum *values, bool *isnull);
extern Size gateann_filter_arena_bytes(const GateannFilterArena *arena);

/* Decide slot widths and offsets; fills meta->nfilter, filter[], filter_size. */
extern void gateann_filter_layout_to_meta(const GateannFilterLayout *layout,
										  GateannMetaPageData *meta);

/* Write node `id`'s filter area (meta->filter_size bytes at dst). */
extern void gateann_filter_write_record(const GateannMetaPageData *meta,
										const GateannFilterArena *arena,
										uint32 id, uint8 *dst);

/*
 * What a record's copy of a filter column holds.  A copy read from disk is
 * checked before its bytes are used as a datum (a damaged varlena header
 * could send detoasting anywhere): DAMAGED says it failed.
 */
typedef enum GateannSlot
{
	GATEANN_SLOT_NULL,
	GATEANN_SLOT_VALUE,			/* *value is set */
	GATEANN_SLOT_OVERFLOW,		/* too long to copy: the executor decides */
	GATEANN_SLOT_DAMAGED
} GateannSlot;

/* Element type of an array filter column, looked up once (for the checks) */
typedef struct GateannSlotType
{
	bool		is_jsonb;
	Oid			elemtype;		/* InvalidOid: not an array */
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
} GateannSlotType;

extern void gateann_filter_slot_types(const GateannMetaPageData *meta,
									  GateannSlotType *types);

/* ERROR: column col's copy in a record of index_name is damaged */
extern void gateann_filter_report_damage(const char *index_name, int col);

/*
 * Read column `col` back from a record's filter area (types: from
 * gateann_filter_slot_types).  Pointers into `area` are returned for
 * by-reference types.
 */
extern GateannSlot gateann_filter_read(const GateannMetaPageData *meta, const uint8 *area,
									   int col, const GateannSlotType *types, Datum *value);

/* ---- the in-memory filter store ------------------------------------------
 *
 * Per filter column, per node:
 *   scalar columns: one byte.  With a dictionary of every distinct value
 *     (at most GATEANN_FILTER_BUCKETS) it is the value's code: exact.
 *     Otherwise it is the node's equi-depth bucket (bucket i holds values in
 *     (bound[i-1], bound[i]], the last one values above every bound):
 *     approximate.  GATEANN_CODE_NULL marks NULL, GATEANN_CODE_UNKNOWN a
 *     value not in the record (too long) or not in the dictionary: it always
 *     passes.
 *   array columns (label sets): 64 Bloom bits, 2 per element.
 *   jsonb columns: 256 Bloom bits, 3 per leaf (path and scalar) and per
 *     top-level key (filter_jsonb.c): a document holds more items than a
 *     label set, and one key of a query is often all it asks for (a dozen
 *     items pass a one-leaf query falsely 0.2 % of the time; in 128 bits,
 *     1.5 %, as much as a 1 % filter passes).
 * Approximate never means a false negative: whatever passes is verified
 * exactly against the record's copy before it can be a result.
 */
#define GATEANN_FILTER_KIND_SCALAR	1
#define GATEANN_FILTER_KIND_BLOOM	2
#define GATEANN_FILTER_KIND_JSONB	3	/* 256 Bloom bits: filter_jsonb.c */

/* Strategy numbers of the filter operator families (sql/gateann--*.sql) */
#define STRAT_LT		1
#define STRAT_LE		2
#define STRAT_EQ		3
#define STRAT_GE		4
#define STRAT_GT		5
#define STRAT_OVERLAP	6
#define STRAT_CONTAINS	7
#define STRAT_CONTAINED	8
#define STRAT_EXISTS	9		/* jsonb ? text */
#define STRAT_EXISTS_ANY 10		/* jsonb ?| text[] */
#define STRAT_EXISTS_ALL 11		/* jsonb ?& text[] */
#define STRAT_PATH_MATCH 12		/* jsonb @@ jsonpath */
#define STRAT_PATH_EXISTS 13	/* jsonb @? jsonpath */
#define GATEANN_FILTER_BUCKETS		254
#define GATEANN_CODE_UNKNOWN		254
#define GATEANN_CODE_NULL			255

/* Bytes per node of a column in the filter store */
extern int	gateann_filter_store_width(const GateannFilterColumn *col);

/*
 * At build time: choose each scalar column's dictionary (every distinct
 * value, or equi-depth bounds) from the collected values and serialise all
 * dictionaries into one palloc'd region (*out, returned length); fills the
 * kind and dictionary fields of meta->filter[].
 */
extern Size gateann_filter_build_dictionaries(Relation index, GateannMetaPageData *meta,
											  const GateannFilterLayout *layout,
											  const GateannFilterArena *arena,
											  uint32 nnodes, char **out);

/*
 * The same from n nodes' record filter areas (meta->filter_size bytes each,
 * one after the other): an index retraining itself (retrain.c).  Values too
 * long for their slot are left out.
 */
extern Size gateann_filter_dictionaries_from_records(Relation index, GateannMetaPageData *meta,
													 const uint8 *areas, uint32 n, char **out);

/* Upper bound of the bytes of dictionaries made from record filter areas */
extern Size gateann_filter_dictionaries_max_bytes(const GateannMetaPageData *meta);

/* Computing nodes' filter-store entries from their records */
typedef struct GateannFilterCoder GateannFilterCoder;

extern GateannFilterCoder *gateann_filter_coder_create(Relation index,
													   const GateannMetaPageData *meta,
													   const char *dict);

/* Write node id's entry of every column: column c at cols[c] + id * width */
extern void gateann_filter_coder_code(GateannFilterCoder *coder, const uint8 *filter_area,
									  uint32 id, uint8 *const *cols);

/* ---- scan keys ---------------------------------------------------------- */

typedef struct GateannFilter GateannFilter;

typedef enum GateannFilterResult
{
	GATEANN_FILTER_FAIL,
	GATEANN_FILTER_PASS,
	GATEANN_FILTER_UNKNOWN		/* cannot tell from the record: recheck */
} GateannFilterResult;

/*
 * Compile the scan keys once per scan.  *never is set when they can never
 * match (e.g. col = NULL).  Keys on the vector column (IS [NOT] NULL) are
 * kept apart: gateann_filter_vector_nulls.
 */
extern GateannFilter *gateann_filter_compile(Relation index, const GateannMetaPageData *meta,
											 ScanKey keys, int nkeys, const char *dict,
											 bool *never);

/* Does the filter have any key on a filter column? */
extern bool gateann_filter_active(const GateannFilter *filter);

/* What the keys on the vector column ask of it */
typedef enum GateannVectorNulls
{
	GATEANN_VECTOR_ANY,			/* no key */
	GATEANN_VECTOR_NOT_NULL,	/* IS NOT NULL */
	GATEANN_VECTOR_NULL_ONLY,	/* IS NULL */
	GATEANN_VECTOR_NONE			/* both: no row */
} GateannVectorNulls;

extern GateannVectorNulls gateann_filter_vector_nulls(const GateannFilter *filter);

/* Keys the record check cannot decide (types we do not evaluate) */
extern bool gateann_filter_needs_recheck(const GateannFilter *filter);

/*
 * Does the filter store prove that no node matches: a key on a scalar column
 * whose passing codes are none, or only "a value the dictionary does not
 * know" while no node of the first `capacity` has such a value?  (Codes of
 * nodes not present are 0, a value the dictionary knows.)
 */
extern bool gateann_filter_matches_nothing(const GateannFilter *filter,
										   const uint8 *const *cols, uint32 capacity);

/* In-memory check of node id (O(number of keys)); no false negatives. */
extern bool gateann_filter_store_pass(const GateannFilter *filter,
									  const uint8 *const *cols, uint32 id);

/*
 * The node ids in lo..hi-1 that pass the in-memory check, written to out
 * (room for hi - lo ids) in increasing order; returns their number.  Ids
 * are not checked against the store's present/deleted bits.
 */
extern int	gateann_filter_store_select(const GateannFilter *filter,
										const uint8 *const *cols,
										uint32 lo, uint32 hi, uint32 *out);

/* Exact check against a fetched record's filter-column copies. */
extern GateannFilterResult gateann_filter_record_check(const GateannFilter *filter,
													   const GateannMetaPageData *meta,
													   const char *record);

/*
 * Between filter_store.c and filter_scan.c: a column as the coder and the
 * scan keys read it (its dictionary, comparison or element hash).
 */
typedef struct GateannCoderColumn
{
	const GateannFilterColumn *col;
	int			width;
	Datum	   *dict;			/* scalar: dictionary / bounds */
	FmgrInfo   *cmp;
	Oid			collation;
	/* bloom */
	Oid			elemtype;
	int16		elemlen;
	bool		elembyval;
	char		elemalign;
	FmgrInfo   *hash;
} GateannCoderColumn;

/* Bloom words per node of a column of this kind (not scalar) */
#define GATEANN_JSONB_BLOOM_WORDS	4
static inline int
gateann_filter_bloom_words(uint8 kind)
{
	return kind == GATEANN_FILTER_KIND_JSONB ? GATEANN_JSONB_BLOOM_WORDS : 1;
}

/* jsonb columns (filter_jsonb.c): three bits of 256 for a hash */
static inline void
gateann_filter_jsonb_bloom_add(uint64 *bits, uint32 h)
{
	int			i;

	for (i = 0; i < 3; i++, h >>= 8)
		bits[(h >> 6) & 3] |= UINT64CONST(1) << (h & 63);
}

/* OR into bits (GATEANN_JSONB_BLOOM_WORDS) those of j; a key's existence hash */
extern void gateann_filter_jsonb_bits(Jsonb *j, bool existence, uint64 *bits);

/*
 * The bits of the leaves a value must hold to match jsonpath jp (`predicate`:
 * jsonb @@ jp, else jsonb @? jp), as alternatives: a value matches only if
 * it holds every bit of one of the masks (GATEANN_JSONB_BLOOM_WORDS each,
 * at most GATEANN_JSONPATH_ALTERNATIVES, zeroed by the caller).  Returns
 * how many; 0 when jp requires none we know.
 */
#define GATEANN_JSONPATH_ALTERNATIVES	8
extern int	gateann_filter_jsonpath_bits(JsonPath *jp, bool predicate, uint64 *masks);
extern uint32 gateann_filter_jsonb_key_hash(const char *key, int len);

/*
 * jsonb_path_match(value, jp, vars) as value @@ jp': jp with each $variable
 * written in as its value in vars (a string, number, boolean or null), for
 * the paths whose matches @@ can check: comparisons, &&, ||, !, exists and
 * filters over key and [*] steps.  NULL for any other path, a variable
 * vars lacks or holds an object or array, or vars not an object.
 */
extern JsonPath *gateann_jsonpath_bind_vars(JsonPath *jp, Jsonb *vars);

extern void gateann_filter_coder_column_init(GateannCoderColumn *cc,
											 const GateannFilterColumn *col,
											 Oid collation, const char *dict);
extern uint64 gateann_filter_bloom_of_element(const GateannCoderColumn *cc, Datum elem);
extern Datum *gateann_filter_dictionary_values(const GateannFilterColumn *col,
											   const char *dict);
extern char *gateann_filter_dictionary_problem(Relation index,
											   const GateannMetaPageData *meta,
											   int c, const char *dict);

#endif							/* GATEANN_FILTER_H */
