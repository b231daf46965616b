/* comm.c: what one collective costs on a GPU's topology (NCCL's ring and tree, its
 * latency model, the intra- and inter-node links); the speed model (speed.c) sums them. */
#include "comm.h"

#include <math.h>
#include <string.h>

#include "speed.h" /* SPEED_LINK_EFF */

int comm_per_node(const struct gpu_spec *g)
{
    return g->gpus_per_node > 0 ? g->gpus_per_node : GPU_PER_NODE_DEFAULT;
}

struct comm_group comm_dp_group(const struct train_config *c, const struct gpu_spec *g)
{
    const int per_node = comm_per_node(g);
    int ppn = c->tp >= per_node ? 1 : per_node / c->tp;
    return (struct comm_group){c->dp, ppn < c->dp ? ppn : c->dp};
}

struct comm_group comm_tp_group(const struct train_config *c, const struct gpu_spec *g)
{
    const int per_node = comm_per_node(g);
    return (struct comm_group){c->tp, c->tp < per_node ? c->tp : per_node};
}

/* The bus bandwidth a group's collective reaches (bytes/s, at SPEED_LINK_EFF of the link).
 * Inside a node: the GPU's link; GPUs on PCIe without peer-to-peer (GeForce: NVIDIA
 * disables P2P on consumer boards) go through host memory, NCCL's SHM transport copies each
 * byte over PCIe twice. Across nodes NCCL builds one ring (or tree) per NIC, each leaving
 * the node through its own NIC, so the ppn ranks of the group in a node share ppn NICs:
 * min(intra-node link, ppn x the per-GPU network bandwidth) (NCCL tuning.cc: busBw =
 * nChannels x bwInter across nodes; nccl-tests doc/PERFORMANCE.md defines the bus
 * bandwidth, algbw x 2 (n-1)/n for an all-reduce, (n-1)/n for all-gather and
 * reduce-scatter, as the figure to compare with the hardware's link). */
double comm_group_bw(struct comm_group grp, const struct gpu_spec *g, int *nodes)
{
    const int ppn = grp.ppn > 0 ? grp.ppn : 1;
    double link = g->interconnect_gbs * 1e9;
    if (!strncmp(g->name, "RTX", 3))
        link *= 0.5;
    *nodes = (grp.n + ppn - 1) / ppn;
    if (*nodes > 1 && g->internode_gbs > 0) {
        double net = (double)ppn * g->internode_gbs * 1e9;
        link = net < link ? net : link;
    }
    return link * SPEED_LINK_EFF;
}

/* `count` collectives of a group carrying `bytes` together: all-gathers or reduce-scatters
 * (steps 1: each rank moves (n-1)/n of the data) or all-reduces (steps 2), at the bus
 * bandwidth of group_bw plus NCCL's latency model (tuning.cc): a ring of n ranks over
 * `nodes` nodes takes steps (n-1) hops, steps (nodes-1) of them across the network; an
 * all-reduce over several nodes may run as NCCL's tree instead (a chain inside each node,
 * a binary tree across nodes: 2 ((ppn-1) intra + log2(nodes) network) hops, at 0.92 of the
 * ring's bandwidth), and NCCL's tuner takes the faster. Ring all-reduce moves 2 (n-1)/n of
 * the data (Patarasuk & Yuan 2009). */
double comm_collective(double bytes, struct comm_group grp, double steps, double count,
                         const struct gpu_spec *g)
{
    const int n = grp.n;
    if (n < 2)
        return 0;
    int nodes;
    const double bw = comm_group_bw(grp, g, &nodes);
    const double intra = g->interconnect_gbs < 64 ? 5.7e-6 : 3.4e-6;
    const double data = steps * bytes * (double)(n - 1) / (double)n;
    const double net_steps = nodes > 1 ? steps * (double)(nodes - 1) : 0;
    const double ring_lat = NCCL_BASE_LAT + (steps * (double)(n - 1) - net_steps) * intra +
                            net_steps * NCCL_NET_LAT;
    double t = data / bw + count * ring_lat;
    if (steps == 2.0 && nodes > 1) {
        const int ppn = grp.ppn > 0 ? grp.ppn : 1;
        const double tree_lat = NCCL_BASE_LAT + 2.0 * ((double)(ppn - 1) * NCCL_TREE_INTRA_LAT +
                                                       log2((double)nodes) * NCCL_NET_LAT);
        const double tree = data / (bw * NCCL_TREE_BW) + count * tree_lat;
        t = tree < t ? tree : t;
    }
    return t;
}
