/*
 * build.h — index build helpers used outside build.c.
 */
#ifndef GATEANN_BUILD_H
#define GATEANN_BUILD_H

#include "gateann.h"

#include "common/relpath.h"

extern void gateann_write_meta_page(Relation index, ForkNumber fork,
									const GateannMetaPageData *meta);

#endif							/* GATEANN_BUILD_H */
