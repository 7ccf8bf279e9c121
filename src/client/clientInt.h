/* clientInt.h: what the rest of libzbso (the power-limit optimizer, power.c) uses of a
 * zbso_client beyond the public API: its transport and its trial's batch size. Private to
 * src/client. */
#ifndef ZBSO_CLIENT_CLIENTINT_H
#define ZBSO_CLIENT_CLIENTINT_H

#include <stdint.h>

#include "transport/transport.h"
#include "zbso/zbso.h"

/* The client's transport to its server (owned by the client). */
transport *client_transport(zbso_client *c);
/* The trial's batch size once get_batch_size succeeded, else 0; never asks the server. */
int64_t client_batch_size(const zbso_client *c);

#endif
