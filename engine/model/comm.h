/* comm.h: the cost of NCCL collectives over the ranks of one communicator (comm.c cites
 * NCCL's tuning.cc and nccl-tests). */
#ifndef LLMEM_COMM_H
#define LLMEM_COMM_H

#include "gpu.h"
#include "train.h"

/* NCCL's latency constants (src/graph/tuning.cc @5067397c, ncclTunerConstantsDefaults,
 * Simple protocol, microseconds): a collective's base latency 8.4 (ring and tree); per
 * step inside a node 3.4 over NVLink and 5.7 over PCIe for the ring, 4.0 for the tree;
 * per step across the network 14. */
#define NCCL_BASE_LAT 8.4e-6
#define NCCL_NET_LAT 14.0e-6
#define NCCL_TREE_INTRA_LAT 4.0e-6
/* NCCL's tree all-reduce bus bandwidth against the ring's (tuning.cc: busBw * .92) */
#define NCCL_TREE_BW 0.92

/* A communicator: n ranks, ppn of them in one node. Megatron and torchtitan order ranks
 * TP innermost, then DP, then PP (Megatron parallel_state "tp-cp-ep-dp-pp"): a TP group
 * sits in one node while tp <= the node's GPUs, a DP group has per_node / tp ranks in each
 * node (1 when tp fills the node), and the pipeline's neighbours are tp x dp ranks apart. */
struct comm_group {
    int n, ppn;
};

/* @return the GPUs a node holds (--gpus-per-node, else GPU_PER_NODE_DEFAULT) */
int comm_per_node(const struct gpu_spec *g);
/* @return c's data-parallel communicator (TP innermost in a node, DP across) */
struct comm_group comm_dp_group(const struct train_config *c, const struct gpu_spec *g);
/* @return c's tensor-parallel communicator */
struct comm_group comm_tp_group(const struct train_config *c, const struct gpu_spec *g);
/* @return the bus bandwidth (bytes/s) grp's collectives reach; *nodes gets the nodes it spans */
double comm_group_bw(struct comm_group grp, const struct gpu_spec *g, int *nodes);
/* @return the seconds of `count` collectives of grp moving `bytes` together: all-gathers or
 * reduce-scatters (steps 1) or all-reduces (steps 2), bandwidth and NCCL latency */
double comm_collective(double bytes, struct comm_group grp, double steps, double count,
                       const struct gpu_spec *g);

#endif
