#!/bin/bash
# run_loadgen_pg.sh: run_loadgen_db.sh on PostgreSQL (the command docs/BENCHMARKS.md names).
# usage: bench/run_loadgen_pg.sh [BUILD_DIR] [DURATION] [K] [LOG_LEVEL]
exec "$(dirname "$0")/run_loadgen_db.sh" pg "$@"
