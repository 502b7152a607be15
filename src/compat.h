/*
 * compat.h — the one place where PostgreSQL version differences live.
 *
 * Supported: PostgreSQL 15 to 18.
 */
#ifndef GATEANN_COMPAT_H
#define GATEANN_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "gateann requires PostgreSQL 15 or later"
#endif

/* PG16 renamed RelFileNode to RelFileLocator (rd_node -> rd_locator). */
#if PG_VERSION_NUM >= 160000
#define GATEANN_REL_FILENUMBER(rel)		((rel)->rd_locator.relNumber)
#define GATEANN_REL_TABLESPACE(rel)		((rel)->rd_locator.spcOid)
#define GATEANN_REL_DATABASE(rel)		((rel)->rd_locator.dbOid)
#else
#define GATEANN_REL_FILENUMBER(rel)		((rel)->rd_node.relNode)
#define GATEANN_REL_TABLESPACE(rel)		((rel)->rd_node.spcNode)
#define GATEANN_REL_DATABASE(rel)		((rel)->rd_node.dbNode)
#endif

/* BufFileWrite takes a const pointer from PG16 on, a plain one before */
#define gateann_buffile_write(file, ptr, size) \
	BufFileWrite((file), (void *) (ptr), (size))

/* PG18: vacuum_delay_point() takes an is_analyze argument. */
#if PG_VERSION_NUM >= 180000
#define gateann_vacuum_delay_point()	vacuum_delay_point(false)
#else
#define gateann_vacuum_delay_point()	vacuum_delay_point()
#endif

/*
 * --- io.c: path of a relation's main fork, relative to the data directory
 * (palloc'd).  PG16 passes a RelFileLocator instead of a RelFileNode; PG18's
 * relpathbackend() returns a RelPathStr by value instead of a palloc'd
 * string.
 */
#if PG_VERSION_NUM >= 180000
#define gateann_relpath_main(rel) \
	pstrdup(relpathbackend((rel)->rd_locator, (rel)->rd_backend, MAIN_FORKNUM).str)
#elif PG_VERSION_NUM >= 160000
#define gateann_relpath_main(rel) \
	relpathbackend((rel)->rd_locator, (rel)->rd_backend, MAIN_FORKNUM)
#else
#define gateann_relpath_main(rel) \
	relpathbackend((rel)->rd_node, (rel)->rd_backend, MAIN_FORKNUM)
#endif
/*
 * --- io.c: a buffer tag for a block of the relation's main fork, and
 * ReadRecentBuffer(), which take a RelFileLocator from PG16 on.
 */
#if PG_VERSION_NUM >= 160000
#define gateann_buffer_tag(tag, rel, blkno) \
	InitBufferTag((tag), &(rel)->rd_locator, MAIN_FORKNUM, (blkno))
#define gateann_read_recent_buffer(rel, blkno, buffer) \
	ReadRecentBuffer((rel)->rd_locator, MAIN_FORKNUM, (blkno), (buffer))
#else
#define gateann_buffer_tag(tag, rel, blkno) \
	INIT_BUFFERTAG(*(tag), (rel)->rd_node, MAIN_FORKNUM, (blkno))
#define gateann_read_recent_buffer(rel, blkno, buffer) \
	ReadRecentBuffer((rel)->rd_node, MAIN_FORKNUM, (blkno), (buffer))
#endif
/* --- end io.c */

/* PG16 replaced pg_class_ownercheck() by object_ownercheck(). */
#if PG_VERSION_NUM >= 160000
#define gateann_relation_owned_by(relid, role) \
	object_ownercheck(RelationRelationId, (relid), (role))
#else
#define gateann_relation_owned_by(relid, role)	pg_class_ownercheck((relid), (role))
#endif

/*
 * Before PG17 the planner keeps "= ANY" on a later index column (and, in
 * PG15 at least, a bare boolean column) out of an ordered index scan
 * (planner.c adds them).
 */
#if PG_VERSION_NUM < 170000
#define GATEANN_NEEDS_SAOP_ORDERED_PATHS	1
#endif

/* PG17 added the pg_maintain role. */
#if PG_VERSION_NUM >= 170000
#define GATEANN_HAVE_PG_MAINTAIN	1
#endif

/* PG17 moved the local transaction id into PGPROC.vxid. */
#if PG_VERSION_NUM >= 170000
#define GATEANN_MY_LXID()	(MyProc->vxid.lxid)
#else
#define GATEANN_MY_LXID()	(MyProc->lxid)
#endif

/*
 * PG16 added ExtendBufferedRel(), which takes the relation extension lock
 * itself; before, P_NEW needs the caller to hold it (page.c).
 */
#if PG_VERSION_NUM >= 160000
#define GATEANN_HAVE_EXTEND_BUFFERED_REL	1
#endif

/*
 * PG18 compares a path's disabled_nodes before its cost (cost.c marks the
 * path it cannot use that way too).
 */
#if PG_VERSION_NUM >= 180000
#define GATEANN_HAVE_DISABLED_NODES	1
#endif

/*
 * PG17 added amcanbuildparallel: index_build() then asks the planner for the
 * number of parallel workers (plan_create_index_workers(), which honours the
 * table's parallel_workers option and returns 0 when the caller wants a
 * serial build) and passes it in ii_ParallelWorkers.  Before, it did so only
 * for btree, so the AM asks the planner itself (build.c).
 */
#if PG_VERSION_NUM >= 170000
#define GATEANN_HAVE_AMCANBUILDPARALLEL	1
#endif

#endif							/* GATEANN_COMPAT_H */
