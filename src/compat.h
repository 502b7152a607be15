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

/* PG18: vacuum_delay_point() takes an is_analyze argument. */
#if PG_VERSION_NUM >= 180000
#define gateann_vacuum_delay_point()	vacuum_delay_point(false)
#else
#define gateann_vacuum_delay_point()	vacuum_delay_point()
#endif

#endif							/* GATEANN_COMPAT_H */
