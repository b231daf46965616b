/* job.h: turns the command line into a ready sweep: catalogs loaded, the GPU and budget
 * resolved, models read (catalog ids or config.json files), plans built, rules bound, the
 * space enumerated. Shared by the sweep, explain and validate commands. */
#ifndef LLMEM_JOB_H
#define LLMEM_JOB_H

#include <stdbool.h>

#include "catalog.h"
#include "lengths.h"
#include "options.h"
#include "sweep.h"

struct job {
    struct options opt;
    struct catalog cat;
    struct gpu_spec gpu;
    bool budget_from_device; /* the budget is the local GPU's total memory */
    char gpu_note[200];      /* how the GPU was chosen, for reports */
    struct band_table band;  /* <data>/band.csv; empty when the folder has none */
    struct lengths lengths;  /* --lengths FILE; empty without it */
    struct length_costs lcost; /* the loss path replayed on them (sweep.lengths) */
    struct sweep sweep;
};

/* Resolves everything but the space (explain and validate build their own points).
 * Returns 0, or an exit code after printing the reason. */
int job_init(struct job *j, const struct options *o);
/* Enumerates the space of the options' axes (after options_default_axes). */
int job_build_space(struct job *j);
void job_free(struct job *j);

#endif
