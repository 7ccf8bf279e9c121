/* fake_nvml.c: a stand-in for libnvidia-ml.so.1 that tests load through
 * ZBSO_NVML_LIBRARY. Exports only the NVML functions zbso uses (the monitor, the
 * power-limit actuator); never touches a GPU.
 *
 * Scripted by environment variables, read when nvmlInit_v2 starts the library (reference
 * count 0 -> 1; each nvmlShutdown pairs with one init):
 *   FAKE_NVML_INIT_FAIL=1          nvmlInit_v2 fails with "Driver Not Loaded" (9)
 *   FAKE_NVML_GPUS=N               number of GPUs, 0..64 (default 1)
 *   FAKE_NVML_MODELS=A,B,...       model name per GPU; the last one repeats (default
 *                                  "NVIDIA H200")
 *   FAKE_NVML_POWER_MW=P,...       constant power per GPU in mW; the last repeats (300000)
 *   FAKE_NVML_NO_ENERGY=i,j,...    GPUs whose energy counter is NOT_SUPPORTED (3)
 *   FAKE_NVML_ENERGY_DELAY_MS=D    each energy-counter call sleeps D ms (default 0)
 *   FAKE_NVML_MAX_LIMIT_MW=M       max power limit (700000); FAKE_NVML_MIN_LIMIT_MW (100000)
 *   FAKE_NVML_FAIL_AFTER=energy:K,power:K
 *                                  after K successful calls of that kind (all GPUs
 *                                  together), every later one fails with "GPU is lost" (15)
 *   FAKE_NVML_CONTROL=PATH         a file re-read on every energy and power call. Tokens
 *                                  separated by spaces, commas or newlines: "energy" or
 *                                  "power" make that call fail on every GPU with "GPU is
 *                                  lost"; "energy:I" / "power:I" only on GPU I. A missing
 *                                  or empty file fails nothing.
 *   FAKE_NVML_ENERGY_STEPS_MJ=S0,S1,...
 *                                  the energy counters ignore the clock: GPU i's k-th
 *                                  successful counter read since init (k from 0, counted
 *                                  per GPU) is 1e6 mJ + S0 + ... + S(k-1), the list
 *                                  repeating, so a window from one read to the next
 *                                  measures S(k) whatever the timing (for tests that
 *                                  compare decisions made from energies)
 *   FAKE_NVML_LIMIT_MW=L           every GPU's power limit at start (default: the max limit)
 *   FAKE_NVML_DEFAULT_LIMIT_MW=D   nvmlDeviceGetPowerManagementDefaultLimit (default: the
 *                                  max limit)
 *   GPU i's UUID (nvmlDeviceGetUUID) is GPU-fa4e<8 hex>-0000-4000-8000-<i as 12 digits>,
 *   the 8 hex digits a hash of FAKE_NVML_STATE (the processes sharing a fake GPU see one
 *   UUID) or, without it, of the process id: fake GPUs of unrelated tests running at the
 *   same time never share a UUID, hence never a record of their original limits.
 *   FAKE_NVML_STATE=PATH           power limits shared by every process using the fake (a
 *                                  GPU that outlives a process): each successful set call
 *                                  appends "set GPU MW PID" to PATH, and a GPU's limit is
 *                                  the last line for it (else FAKE_NVML_LIMIT_MW). Without
 *                                  it the limits live in the process. Tests read the lines
 *                                  for the sequence and the count of set calls.
 *   FAKE_NVML_SET_FAIL=noperm      nvmlDeviceSetPowerManagementLimit fails with
 *                                  "Insufficient Permissions" (4), as for a process without
 *                                  CAP_SYS_ADMIN
 *   FAKE_NVML_STEP_MS=S            a training step's time at full power (default 10)
 * The power model: GPU i draws P = min(limit, power_i), power_i being its
 * FAKE_NVML_POWER_MW (what it would draw unlimited), and a training step takes
 * S * sqrt(power_i / P) ms: at a lower limit steps are slower and use less energy
 * (S * sqrt(power_i * P) per step). fake_nvml_step_time_s and fake_nvml_step (not NVML
 * functions) give a test's training loop that time. The energy counter of GPU i is 1e6 mJ
 * plus the integral of P over the seconds since init, so with the limit unchanged it is
 * 1e6 mJ + power_i * seconds, and the counter and an integral of power samples agree. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_GPUS_MAX 64
#define FAKE_NAME_MAX 96
#define FAKE_STEPS_MAX 64

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_GPU_IS_LOST = 15,
};

typedef int nvmlReturn_t;

struct nvmlDevice_st {
    unsigned index;
    char name[FAKE_NAME_MAX];
    unsigned power_mw;
    int no_energy;
    atomic_ulong reads;   /* successful counter reads, for FAKE_NVML_ENERGY_STEPS_MJ */
    /* Guarded by g.mu: the limit in force since changed_s, and the energy (mJ) drawn
     * before changed_s. */
    unsigned limit_mw;
    double changed_s;
    double drawn_mj;
};
typedef struct nvmlDevice_st *nvmlDevice_t;

/* The exported NVML functions (prototypes for -Wmissing-prototypes). */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                 unsigned long long *energy);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *min_limit,
                                                          unsigned int *max_limit);
nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit);
nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit);
nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *limit);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length);
const char *nvmlErrorString(nvmlReturn_t result);
/* Not NVML: the test's training step at GPU index's current limit. */
double fake_nvml_step_time_s(unsigned index);
int fake_nvml_step(unsigned index);

/* The script, fixed between init and shutdown; call counters are atomic because the
 * monitor calls from several threads. */
static struct {
    int refs;
    unsigned n_gpus;
    struct nvmlDevice_st gpus[FAKE_GPUS_MAX];
    double start_s;
    double energy_delay_ms;
    unsigned min_limit_mw, max_limit_mw;
    long energy_fail_after, power_fail_after; /* -1: never */
    char control[512];
    unsigned n_steps;     /* FAKE_NVML_ENERGY_STEPS_MJ given: 1..FAKE_STEPS_MAX */
    unsigned long long steps_mj[FAKE_STEPS_MAX];
    unsigned long long steps_total_mj;
    unsigned start_limit_mw;
    unsigned default_limit_mw;
    uint32_t uuid_hash;
    char state[512];
    int set_fail;
    double step_s;
    pthread_mutex_t mu;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};
static atomic_long energy_calls, power_calls;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The k-th comma-separated item of list (the last one when the list is shorter) copied
 * into out; returns 0, or -1 when list is empty. */
static int list_item(const char *list, unsigned k, char *out, size_t out_len)
{
    const char *p = list;
    const char *item = list;
    for (unsigned i = 0; i <= k; i++) {
        item = p;
        const char *comma = strchr(p, ',');
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    size_t len = strcspn(item, ",");
    if (len == 0)
        return -1;
    if (len >= out_len)
        len = out_len - 1;
    memcpy(out, item, len);
    out[len] = '\0';
    return 0;
}

/* Whether index i appears in the comma list of integers list. */
static int list_has(const char *list, unsigned i)
{
    char buf[32];
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        if (len > 0 && len < sizeof buf) {
            memcpy(buf, p, len);
            buf[len] = '\0';
            if (strtoul(buf, NULL, 10) == i)
                return 1;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Reads "kind:K" from FAKE_NVML_FAIL_AFTER; -1 when kind is not listed. */
static long fail_after(const char *kind)
{
    const char *spec = env_or("FAKE_NVML_FAIL_AFTER", "");
    size_t klen = strlen(kind);
    for (const char *p = spec; *p;) {
        if (strncmp(p, kind, klen) == 0 && p[klen] == ':')
            return strtol(p + klen + 1, NULL, 10);
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    return -1;
}

/* Whether the control file says calls of kind on GPU index fail now. */
static int control_fails(const char *kind, unsigned index)
{
    char buf[1024];
    if (g.control[0] == '\0')
        return 0;
    FILE *f = fopen(g.control, "r");
    if (f == NULL)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    size_t klen = strlen(kind);
    char *save = NULL;
    for (char *tok = strtok_r(buf, " ,\t\r\n", &save); tok;
         tok = strtok_r(NULL, " ,\t\r\n", &save)) {
        if (strncmp(tok, kind, klen) != 0)
            continue;
        if (tok[klen] == '\0')
            return 1;
        if (tok[klen] == ':' && strtoul(tok + klen + 1, NULL, 10) == index)
            return 1;
    }
    return 0;
}

static void sleep_ms(double ms)
{
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* GPU i's limit as FAKE_NVML_STATE says (the last "set i MW" line), else dflt. */
static unsigned state_limit(unsigned i, unsigned dflt)
{
    char line[128];
    unsigned limit = dflt;
    if (g.state[0] == '\0')
        return dflt;
    FILE *f = fopen(g.state, "r");
    if (f == NULL)
        return dflt;
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned gpu, mw;
        if (sscanf(line, "set %u %u", &gpu, &mw) == 2 && gpu == i)
            limit = mw;
    }
    fclose(f);
    return limit;
}

/* The power device d draws at its limit (mW). */
static double drawn_mw(const struct nvmlDevice_st *d)
{
    return d->limit_mw < d->power_mw ? (double)d->limit_mw : (double)d->power_mw;
}

/* Under g.mu: takes the limit another process set (FAKE_NVML_STATE) as in force from
 * now, t seconds after init. */
static void refresh_limit(struct nvmlDevice_st *d, double t)
{
    unsigned limit = state_limit(d->index, d->limit_mw);
    if (limit == d->limit_mw)
        return;
    d->drawn_mj += drawn_mw(d) * (t - d->changed_s);
    d->changed_s = t;
    d->limit_mw = limit;
}

nvmlReturn_t nvmlInit_v2(void)
{
    char item[FAKE_NAME_MAX];
    if (strcmp(env_or("FAKE_NVML_INIT_FAIL", "0"), "0") != 0)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    if (g.refs++ > 0)
        return NVML_SUCCESS;
    unsigned long n = strtoul(env_or("FAKE_NVML_GPUS", "1"), NULL, 10);
    g.n_gpus = n > FAKE_GPUS_MAX ? FAKE_GPUS_MAX : (unsigned)n;
    const char *models = env_or("FAKE_NVML_MODELS", "NVIDIA H200");
    const char *powers = env_or("FAKE_NVML_POWER_MW", "300000");
    const char *no_energy = env_or("FAKE_NVML_NO_ENERGY", "");
    for (unsigned i = 0; i < g.n_gpus; i++) {
        struct nvmlDevice_st *d = &g.gpus[i];
        d->index = i;
        if (list_item(models, i, d->name, sizeof d->name) < 0)
            snprintf(d->name, sizeof d->name, "NVIDIA H200");
        d->power_mw = list_item(powers, i, item, sizeof item) < 0
                          ? 300000u
                          : (unsigned)strtoul(item, NULL, 10);
        d->no_energy = list_has(no_energy, i);
        atomic_store(&d->reads, 0);
    }
    g.n_steps = 0;
    g.steps_total_mj = 0;
    const char *steps = env_or("FAKE_NVML_ENERGY_STEPS_MJ", "");
    for (const char *p = steps; *p && g.n_steps < FAKE_STEPS_MAX;) {
        g.steps_mj[g.n_steps] = strtoull(p, NULL, 10);
        g.steps_total_mj += g.steps_mj[g.n_steps++];
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    g.energy_delay_ms = strtod(env_or("FAKE_NVML_ENERGY_DELAY_MS", "0"), NULL);
    g.max_limit_mw = (unsigned)strtoul(env_or("FAKE_NVML_MAX_LIMIT_MW", "700000"), NULL, 10);
    g.min_limit_mw = (unsigned)strtoul(env_or("FAKE_NVML_MIN_LIMIT_MW", "100000"), NULL, 10);
    g.energy_fail_after = fail_after("energy");
    g.power_fail_after = fail_after("power");
    snprintf(g.control, sizeof g.control, "%s", env_or("FAKE_NVML_CONTROL", ""));
    g.start_limit_mw = (unsigned)strtoul(env_or("FAKE_NVML_LIMIT_MW", "0"), NULL, 10);
    if (g.start_limit_mw == 0)
        g.start_limit_mw = g.max_limit_mw;
    g.default_limit_mw =
        (unsigned)strtoul(env_or("FAKE_NVML_DEFAULT_LIMIT_MW", "0"), NULL, 10);
    {
        char pid[32];
        const char *key = env_or("FAKE_NVML_STATE", "");
        if (key[0] == '\0') {
            snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
            key = pid;
        }
        g.uuid_hash = 2166136261u;   /* FNV-1a */
        for (const char *p = key; *p; p++)
            g.uuid_hash = (g.uuid_hash ^ (unsigned char)*p) * 16777619u;
    }
    if (g.default_limit_mw == 0)
        g.default_limit_mw = g.max_limit_mw;
    snprintf(g.state, sizeof g.state, "%s", env_or("FAKE_NVML_STATE", ""));
    g.set_fail = strcmp(env_or("FAKE_NVML_SET_FAIL", ""), "noperm") == 0;
    g.step_s = strtod(env_or("FAKE_NVML_STEP_MS", "10"), NULL) / 1000.0;
    atomic_store(&energy_calls, 0);
    atomic_store(&power_calls, 0);
    g.start_s = now_s();
    for (unsigned i = 0; i < g.n_gpus; i++) {
        g.gpus[i].limit_mw = g.start_limit_mw;
        g.gpus[i].changed_s = 0;
        g.gpus[i].drawn_mj = 0;
    }
    pthread_mutex_lock(&g.mu);
    for (unsigned i = 0; i < g.n_gpus; i++)
        g.gpus[i].limit_mw = state_limit(i, g.start_limit_mw);
    pthread_mutex_unlock(&g.mu);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    g.refs--;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (count == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = g.n_gpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || index >= g.n_gpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g.gpus[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || name == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(device->name) >= length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(name, device->name, strlen(device->name) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                 unsigned long long *energy)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || energy == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (device->no_energy)
        return NVML_ERROR_NOT_SUPPORTED;
    double t = now_s() - g.start_s;
    if (g.energy_delay_ms > 0)
        sleep_ms(g.energy_delay_ms);
    long done = atomic_fetch_add(&energy_calls, 1);
    if ((g.energy_fail_after >= 0 && done >= g.energy_fail_after) ||
        control_fails("energy", device->index))
        return NVML_ERROR_GPU_IS_LOST;
    if (g.n_steps > 0) {
        /* Counted atomically: two monitors in one process may read one GPU at once. */
        unsigned long k = atomic_fetch_add(&device->reads, 1);
        unsigned long long sum = (k / g.n_steps) * g.steps_total_mj;
        for (unsigned j = 0; j < k % g.n_steps; j++)
            sum += g.steps_mj[j];
        *energy = 1000000ull + sum;
        return NVML_SUCCESS;
    }
    pthread_mutex_lock(&g.mu);
    refresh_limit(device, t);
    double mj = device->drawn_mj + drawn_mw(device) * (t - device->changed_s);
    pthread_mutex_unlock(&g.mu);
    *energy = 1000000ull + (unsigned long long)mj;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || power == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    long done = atomic_fetch_add(&power_calls, 1);
    if ((g.power_fail_after >= 0 && done >= g.power_fail_after) ||
        control_fails("power", device->index))
        return NVML_ERROR_GPU_IS_LOST;
    pthread_mutex_lock(&g.mu);
    refresh_limit(device, now_s() - g.start_s);
    *power = (unsigned)drawn_mw(device);
    pthread_mutex_unlock(&g.mu);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                          unsigned int *min_limit,
                                                          unsigned int *max_limit)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || min_limit == NULL || max_limit == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *min_limit = g.min_limit_mw;
    *max_limit = g.max_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || limit == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    pthread_mutex_lock(&g.mu);
    refresh_limit(device, now_s() - g.start_s);
    *limit = device->limit_mw;
    pthread_mutex_unlock(&g.mu);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t device, unsigned int limit)
{
    char line[96];
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || limit < g.min_limit_mw || limit > g.max_limit_mw)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (g.set_fail)
        return NVML_ERROR_NO_PERMISSION;
    pthread_mutex_lock(&g.mu);
    double t = now_s() - g.start_s;
    refresh_limit(device, t);
    device->drawn_mj += drawn_mw(device) * (t - device->changed_s);
    device->changed_s = t;
    device->limit_mw = limit;
    if (g.state[0] != '\0') {
        /* One write(2) to an O_APPEND file: lines of concurrent processes never mix. */
        int fd = open(g.state, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        int n = snprintf(line, sizeof line, "set %u %u %ld\n", device->index, limit,
                         (long)getpid());
        if (fd >= 0) {
            if (write(fd, line, (size_t)n) != n)
                fprintf(stderr, "fake_nvml: cannot write %s\n", g.state);
            close(fd);
        }
    }
    pthread_mutex_unlock(&g.mu);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                      unsigned int *limit)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || limit == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    *limit = g.default_limit_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    if (g.refs == 0)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || uuid == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    int n = snprintf(uuid, length, "GPU-fa4e%08x-0000-4000-8000-%012u", (unsigned)g.uuid_hash,
                     device->index);
    return n < 0 || (unsigned)n >= length ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
}

double fake_nvml_step_time_s(unsigned index)
{
    if (g.refs == 0 || index >= g.n_gpus)
        return -1;
    struct nvmlDevice_st *d = &g.gpus[index];
    pthread_mutex_lock(&g.mu);
    refresh_limit(d, now_s() - g.start_s);
    double s = g.step_s * sqrt((double)d->power_mw / drawn_mw(d));
    pthread_mutex_unlock(&g.mu);
    return s;
}

int fake_nvml_step(unsigned index)
{
    double s = fake_nvml_step_time_s(index);
    if (s < 0)
        return -1;
    sleep_ms(s * 1000.0);
    return 0;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
    }
}
