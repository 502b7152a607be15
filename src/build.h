/*
 * build.h — index build helpers used outside build.c.
 */
#ifndef GATEANN_BUILD_H
#define GATEANN_BUILD_H

#include "gateann.h"

#include "common/relpath.h"

/* PQ training, for builds and retraining (retrain.c) alike */
#define GATEANN_PQ_TRAIN_SAMPLE		32768
#define GATEANN_PQ_TRAIN_ITERATIONS	12
#define GATEANN_PQ_SEED				UINT64CONST(0x5051736565640001)

/* A build id that differs between any two builds of any index. */
extern uint64 gateann_new_build_id(Relation index);

extern void gateann_write_meta_page(Relation index, ForkNumber fork,
									const GateannMetaPageData *meta);

#endif							/* GATEANN_BUILD_H */
