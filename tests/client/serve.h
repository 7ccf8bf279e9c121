/* serve.h: a real `zbso serve` ($ZBSO_BIN) for the client tests, on an SQLite database in
 * the test's directory, on loopback. Test code: asserts through cmocka. */
#ifndef ZBSO_TESTS_SERVE_H
#define ZBSO_TESTS_SERVE_H

#include <sys/types.h>

/* Execs `zbso serve` on dir/db and port (0: a free one), appending its output to log,
 * without $ZEUS_BSO_API_TOKEN; never returns. */
void serve_exec(const char *dir, const char *db, int port, const char *log);

/* Starts serve_exec in a child and waits (10 s at most) for its "listening" line. Returns
 * the port it listens on; *pid is the child. */
int serve_start(const char *dir, const char *db, int port, pid_t *pid);

/* Sends sig to the server and reaps it. */
void serve_stop(pid_t pid, int sig);

/* Unsets what would steer a client test from outside: the Zeus client's variables
 * (server URL, job and trial the driver set, API token), the retry budget and
 * CUDA_VISIBLE_DEVICES. */
void serve_clean_env(void);

#endif
