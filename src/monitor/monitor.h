/* monitor.h: what in-tree code (src/client, src/run) uses of the monitor besides the public
 * zbso_monitor_* API of include/zbso/zbso.h. Pure helpers; no NVML here. */
#ifndef ZBSO_MONITOR_MONITOR_H
#define ZBSO_MONITOR_MONITOR_H

/* A job spec's max_power in W for n_gpus GPUs whose largest power limit is
 * max_power_limit_mw, as the Zeus client computes it (seed 000): the limit in whole watts
 * (floor of mW / 1000) times the GPU count. */
double mon_job_max_power_w(unsigned max_power_limit_mw, unsigned n_gpus);

#endif
