/* test_jobs_fmt.c: the output formats of `zbso jobs` (src/cli/jobs_fmt.c) and the terminal
 * tables under them (src/cli/table.c), on literal documents of the inspection API's
 * shapes: exact expected text for tables, CSV and JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli/jobs_fmt.h"
#include "cli/table.h"

/* The output of fn on the parsed document text, as a malloc'd string. */
typedef int (*fmt_fn)(FILE *, jobs_format, const json_t *, zbso_err *);

static char *render(fmt_fn fn, jobs_format f, const char *text)
{
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (doc == NULL)
        fail_msg("bad test JSON: %s at %d", jerr.text, jerr.position);
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    zbso_err err;
    assert_int_equal(fn(m, f, doc, &err), 0);
    fclose(m);
    json_decref(doc);
    return out;
}

static void expect(fmt_fn fn, jobs_format f, const char *doc, const char *want)
{
    char *got = render(fn, f, doc);
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
}

static const char *const JOBS =
    "{\"jobs\":[{\"job_id\":\"bert-1\",\"job_id_prefix\":\"bert\",\"stage\":\"MAB\","
    "\"policy\":\"smart\","
    "\"created_at\":1700000000.5,\"updated_at\":1700003600.25,"
    "\"trials\":{\"total\":12,\"Dispatched\":1,\"Succeeded\":10,\"Failed\":1,"
    "\"by_stop_reason\":{\"target_reached\":8,\"cost_bound\":1,\"max_epochs\":1,"
    "\"ended\":1,\"lease_expired\":0,\"unknown\":0}},"
    "\"min_cost\":8260.4500000000007,\"min_cost_batch_size\":32,\"best_batch_size\":32,"
    "\"savings\":{\"finished_trials\":10,\"failed_trials\":1,"
    "\"spent\":{\"energy_j\":123456.78,\"time_s\":456.05000000000001,\"cost\":99999.5},"
    "\"default_batch_size\":16,\"default_runs\":2,"
    "\"default_expected\":{\"energy_j\":15000,\"time_s\":50,\"cost\":11000},"
    "\"saved\":{\"energy_j\":-3456.75,\"time_s\":12.5,\"cost\":-100,"
    "\"energy_kwh\":-0.0009765625},"
    "\"saved_pct\":{\"energy\":-2.25,\"time\":2.5,\"cost\":-0.125},"
    "\"break_even_recurrence\":17,\"best_batch_size\":32,\"best_expected_cost\":8260.5,"
    "\"regret\":1200.25}},"
    "{\"job_id\":\"new, \\\"odd\\\"\\u0007\",\"job_id_prefix\":\"new\",\"stage\":\"Pruning\","
    "\"policy\":\"zeus\","
    "\"created_at\":0,\"updated_at\":0,"
    "\"trials\":{\"total\":0,\"Dispatched\":0,\"Succeeded\":0,\"Failed\":0,"
    "\"by_stop_reason\":{\"target_reached\":0,\"cost_bound\":0,\"max_epochs\":0,"
    "\"ended\":0,\"lease_expired\":0,\"unknown\":0}},"
    "\"min_cost\":null,\"min_cost_batch_size\":8,\"best_batch_size\":8,"
    "\"savings\":{\"finished_trials\":0,\"failed_trials\":0,"
    "\"spent\":{\"energy_j\":0,\"time_s\":0,\"cost\":0},\"default_batch_size\":8,"
    "\"default_runs\":0,\"default_expected\":null,\"saved\":null,\"saved_pct\":null,"
    "\"break_even_recurrence\":null,\"best_batch_size\":null,\"best_expected_cost\":null,"
    "\"regret\":null}}],\"next\":null}";

static void test_list_table(void **state)
{
    (void)state;
    expect(jobs_fmt_list, JOBS_FMT_TABLE, JOBS,
           "job id          stage    cost saved (J)  cost saved  break-even  "
           "energy saved (kWh)  energy saved  time saved (s)  time saved  trials  running  "
           "failed  best bs  policy  updated (UTC)\n"
           "bert-1          MAB              -100.0       -0.1%  17                      "
           "-0.001         -2.2%            12.5        2.5%      12        1       1       32  "
           "smart   2023-11-14T23:13:20Z\n"
           "new, \"odd\"\\x07  Pruning               -           -  -                      "
           "      -             -               -           -       0        0       0        8  "
           "zeus    1970-01-01T00:00:00Z\n");
}

static void test_list_csv(void **state)
{
    (void)state;
    expect(jobs_fmt_list, JOBS_FMT_CSV, JOBS,
           "job_id,job_id_prefix,stage,created_at,updated_at,trials.total,trials.Dispatched,trial"
           "s.Succeeded,trials.Failed,min_cost,min_cost_batch_size,best_batch_size,savings.finish"
           "ed_trials,savings.failed_trials,savings.spent.energy_j,savings.spent.time_s,savings.s"
           "pent.cost,savings.default_batch_size,savings.default_runs,savings.default_expected.en"
           "ergy_j,savings.default_expected.time_s,savings.default_expected.cost,savings.saved.en"
           "ergy_j,savings.saved.time_s,savings.saved.cost,savings.break_even_recurrence,savings."
           "best_batch_size,savings.best_expected_cost,savings.regret,savings.saved_pct.cost,savi"
           "ngs.saved_pct.energy,savings.saved_pct.time,savings.spent.energy_kwh,savings.saved.en"
           "ergy_kwh,trials.by_stop_reason.target_reached,trials.by_stop_reason.cost_bound,trials"
           ".by_stop_reason.max_epochs,trials.by_stop_reason.ended,trials.by_stop_reason.lease_ex"
           "pired,trials.by_stop_reason.unknown,policy\r\n"
           "bert-1,bert,MAB,2023-11-14T22:13:20.500Z,2023-11-14T23:13:20.250Z,12,1,10,1,"
           "8260.4500000000007,32,32,10,1,12"
           "3456.78,456.05000000000001,99999.5,16,2,15000,50,11000,-3456.75,12.5,-100,17,32,8260."
           "5,1200.25,-0.125,-2.25,2.5,,-0.0009765625,8,1,1,1,0,0,smart\r\n"
           "\"new, \"\"odd\"\"\a\",new,Pruning,1970-01-01T00:00:00.000Z,"
           "1970-01-01T00:00:00.000Z,0,0,0,0,,8,8,0,0,0,0,0,8,0,,,,,,,,,,,,,,,,0,0,"
           "0,0,0,0,zeus\r\n");
}

static void test_list_json_is_the_document(void **state)
{
    (void)state;
    char *got = render(jobs_fmt_list, JOBS_FMT_JSON, JOBS);
    size_t n = strlen(JOBS);
    /* The document is already compact with 17 significant digits: it comes back as it
     * went in, on one line. */
    assert_int_equal(strlen(got), n + 1);
    assert_memory_equal(got, JOBS, n);
    assert_string_equal(got + n, "\n");
    free(got);
}

static const char *const TRIALS =
    "{\"job_id\":\"bert-1\",\"trials\":["
    "{\"trial_number\":1,\"batch_size\":16,\"type\":\"Exploration\",\"status\":\"Succeeded\","
    "\"start_time\":1700000000,\"end_time\":1700000100.75,\"lease_renewed_at\":1700000060,"
    "\"time_s\":100.25,\"energy_j\":25062.5,\"metric\":0.61,\"epochs\":2,\"cost\":17531.25,"
    "\"converged\":true,\"stop_reason\":\"target_reached\","
    "\"energy_kwh\":0.0068359375},"
    "{\"trial_number\":2,\"batch_size\":64,\"type\":\"MAB\",\"status\":\"Dispatched\","
    "\"start_time\":1700000200,\"end_time\":null,\"lease_renewed_at\":1700000200,"
    "\"time_s\":null,\"energy_j\":null,\"metric\":null,\"epochs\":null,\"cost\":null,"
    "\"converged\":false,\"stop_reason\":null}],\"next\":null}";

static void test_trials_table_and_csv(void **state)
{
    (void)state;
    expect(jobs_fmt_trials, JOBS_FMT_TABLE, TRIALS,
           "trial  bs  type         status      start (UTC)           end (UTC)             epoch"
           "s  time (s)  energy (J)  cost (J)  metric  converged  stop reason     energy (kWh)\n"
           "    1  16  Exploration  Succeeded   2023-11-14T22:13:20Z  2023-11-14T22:15:00Z       "
           "2     100.2     25062.5   17531.2    0.61  yes        target_reached         0.007\n"
           "    2  64  MAB          Dispatched  2023-11-14T22:16:40Z  -                          "
           "-         -           -         -       -  no         -                          -\n");
    expect(jobs_fmt_trials, JOBS_FMT_CSV, TRIALS,
           "trial_number,batch_size,type,status,start_time,end_time,lease_renewed_at,time_s,"
           "energy_j,metric,epochs,cost,converged,stop_reason,energy_kwh\r\n"
           "1,16,Exploration,Succeeded,2023-11-14T22:13:20.000Z,2023-11-14T22:15:00.750Z,"
           "2023-11-14T22:14:20.000Z,100.25,25062.5,"
           "0.60999999999999999,2,17531.25,true,target_reached,0.0068359375\r\n"
           "2,64,MAB,Dispatched,2023-11-14T22:16:40.000Z,,2023-11-14T22:16:40.000Z,,,,,,false,,"
           "\r\n");
}

static const char *const CURVE =
    "{\"trial_number\":1,\"batch_size\":16,\"type\":\"Exploration\",\"status\":\"Succeeded\","
    "\"start_time\":1700000000,\"end_time\":1700000100.75,\"lease_renewed_at\":1700000060,"
    "\"time_s\":100.25,\"energy_j\":25062.5,\"metric\":0.61,\"epochs\":2,\"cost\":17531.25,"
    "\"converged\":true,\"stop_reason\":\"cost_bound\",\"energy_kwh\":0.0068359375,"
    "\"job_id\":\"bert-1\",\"reports\":["
    "{\"epoch\":1,\"time_s\":50,\"energy_j\":12500,\"metric\":0.3,\"received_at\":1700000050},"
    "{\"epoch\":2,\"time_s\":100.25,\"energy_j\":25062.5,\"metric\":0.61,"
    "\"received_at\":1700000100.5}]}";

static void test_curve_table_and_csv(void **state)
{
    (void)state;
    expect(jobs_fmt_curve, JOBS_FMT_TABLE, CURVE,
           "job id               bert-1\n"
           "trial                1\n"
           "batch size           16\n"
           "type                 Exploration\n"
           "status               Succeeded\n"
           "start (UTC)          2023-11-14T22:13:20Z\n"
           "end (UTC)            2023-11-14T22:15:00Z\n"
           "lease renewed (UTC)  2023-11-14T22:14:20Z\n"
           "epochs               2\n"
           "time (s)             100.2\n"
           "energy (J)           25062.5\n"
           "cost (J)             17531.2\n"
           "metric               0.61\n"
           "converged            yes\n"
           "stop reason          cost_bound\n"
           "energy (kWh)         0.007\n"
           "\n"
           "reports (2)\n"
           "epoch  time (s)  energy (J)  metric  received (UTC)\n"
           "    1      50.0     12500.0     0.3  2023-11-14T22:14:10Z\n"
           "    2     100.2     25062.5    0.61  2023-11-14T22:15:00Z\n");
    expect(jobs_fmt_curve, JOBS_FMT_CSV, CURVE,
           "job_id,trial_number,epoch,time_s,energy_j,metric,received_at\r\n"
           "bert-1,1,1,50,12500,0.29999999999999999,2023-11-14T22:14:10.000Z\r\n"
           "bert-1,1,2,100.25,25062.5,0.60999999999999999,2023-11-14T22:15:00.500Z\r\n");
}

static const char *const JOB =
    "{\"job_id\":\"j\",\"job_id_prefix\":\"p\",\"stage\":\"MAB\",\"policy\":\"smart\","
    "\"created_at\":1,"
    "\"updated_at\":2,\"trials\":{\"total\":3,\"Dispatched\":0,\"Succeeded\":3,\"Failed\":0},"
    "\"min_cost\":10.5,\"min_cost_batch_size\":8,\"best_batch_size\":16,"
    "\"savings\":{\"finished_trials\":3,\"failed_trials\":0,"
    "\"spent\":{\"energy_j\":30,\"time_s\":3,\"cost\":31.5},\"default_batch_size\":8,"
    "\"default_runs\":1,\"default_expected\":{\"energy_j\":10,\"time_s\":1,\"cost\":10.5},"
    "\"saved\":{\"energy_j\":0,\"time_s\":0,\"cost\":0},\"break_even_recurrence\":null,"
    "\"best_batch_size\":8,\"best_expected_cost\":10.5,\"regret\":0},"
    "\"revision\":4,\"spec\":{\"job_id\":\"j\",\"batch_sizes\":[8,16],"
    "\"default_batch_size\":8,\"beta_knob\":null,\"mab_seed\":7,\"policy\":\"smart\","
    "\"warm_start\":true,\"prior_jobs\":[\"j-h100\",\"j-a40\"]},"
    "\"exploration\":{\"rounds\":[{\"round\":0,\"default_batch_size\":8,\"explored\":[8,16],"
    "\"converged\":[8,16],\"pruned\":[],\"complete\":true}]},"
    "\"arms\":[{\"batch_size\":8,\"mean\":-10.5,\"precision\":null,\"sd\":0,"
    "\"observations\":1},{\"batch_size\":16,\"mean\":-11.25,\"precision\":0.015625,"
    "\"sd\":8,\"observations\":2}],"
    "\"counts\":{\"Exploration\":{\"Dispatched\":0,\"Succeeded\":2,\"Failed\":0},"
    "\"Concurrent\":{\"Dispatched\":0,\"Succeeded\":0,\"Failed\":0},"
    "\"MAB\":{\"Dispatched\":0,\"Succeeded\":1,\"Failed\":0}}}";

static void test_job_table(void **state)
{
    (void)state;
    char *got = render(jobs_fmt_job, JOBS_FMT_TABLE, JOB);
    /* Spot checks of each part; the parts' layout is the table code's, tested above. */
    static const char *const lines[] = {
        "job id               j\n",
        "batch sizes          8,16\n",
        "best batch size      16\n",
        "min cost (J)         10.5\n",
        "beta                 -\n",
        "MAB seed             7\n",
        "policy               smart\n",
        "warm start           yes\n",
        "prior jobs           j-h100,j-a40\n",
        "GPU model            -\n",
        "\nsavings\nfinished trials               3\n",
        "default expected cost (J)     10.5\n",
        "break-even recurrence         -\n",
        "\nexploration\nround  default bs  explored  converged  pruned  complete\n"
        "    0           8  8,16      8,16       -       yes\n",
        "\narms\nbs  mean reward (J)  sd (J)  precision (1/J^2)  observations\n"
        " 8            -10.5     0.0                  -             1\n"
        "16            -11.2     8.0           0.015625             2\n",
        "\ntrials by type\ntype         dispatched  succeeded  failed\n"
        "Exploration           0          2       0\n"
        "Concurrent            0          0       0\n"
        "MAB                   0          1       0\n",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        if (strstr(got, lines[i]) == NULL)
            fail_msg("missing:\n%s\nin:\n%s", lines[i], got);
    free(got);
}

static void test_job_csv_flattens_every_field(void **state)
{
    (void)state;
    char *got = render(jobs_fmt_job, JOBS_FMT_CSV, JOB);
    static const char *const rows[] = {
        "field,value\r\njob_id,j\r\njob_id_prefix,p\r\nstage,MAB\r\n",
        "\r\ntrials.Succeeded,3\r\n",
        "\r\nmin_cost,10.5\r\n",
        "\r\nsavings.spent.cost,31.5\r\n",
        "\r\nsavings.saved,\r\n" /* never: saved is an object here */,
        "\r\nsavings.break_even_recurrence,\r\n",
        "\r\nspec.batch_sizes,\"[8,16]\"\r\n",
        "\r\nspec.beta_knob,\r\n",
        "\r\nexploration.rounds.0.pruned,[]\r\n",
        "\r\narms.0.precision,\r\n",
        "\r\narms.1.precision,0.015625\r\n",
        "\r\ncounts.MAB.Succeeded,1\r\n",
        "\r\npolicy,smart\r\n",
        "\r\nspec.prior_jobs,\"[\"\"j-h100\"\",\"\"j-a40\"\"]\"\r\n",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        bool want = i != 4;
        if ((strstr(got, rows[i]) != NULL) != want)
            fail_msg("%s:\n%s\nin:\n%s", want ? "missing" : "unexpected", rows[i], got);
    }
    assert_non_null(strstr(got, "\r\nsavings.saved.energy_j,0\r\n"));
    free(got);
}

static void test_export(void **state)
{
    (void)state;
    json_t *job = json_loads(JOB, 0, NULL);
    json_t *curve = json_loads(CURVE, 0, NULL);
    json_t *bare = json_loads(CURVE, 0, NULL);
    json_object_set_new(bare, "trial_number", json_integer(2));
    json_object_set_new(bare, "reports", json_array());
    json_t *trials = json_pack("[O,O]", curve, bare);
    char *out = NULL;
    size_t len = 0;
    zbso_err err;

    FILE *m = open_memstream(&out, &len);
    assert_int_equal(jobs_fmt_export(m, JOBS_FMT_CSV, job, trials, &err), 0);
    fclose(m);
    assert_string_equal(out,
        "job_id,trial_number,batch_size,type,status,start_time,end_time,lease_renewed_at,"
        "time_s,energy_j,metric,epochs,cost,converged,stop_reason,energy_kwh,report_epoch,"
        "report_time_s,report_energy_j,report_metric,report_received_at\r\n"
        "j,1,16,Exploration,Succeeded,2023-11-14T22:13:20.000Z,2023-11-14T22:15:00.750Z,"
        "2023-11-14T22:14:20.000Z,100.25,25062.5,"
        "0.60999999999999999,2,17531.25,true,cost_bound,0.0068359375,1,50,12500,"
        "0.29999999999999999,2023-11-14T22:14:10.000Z\r\n"
        "j,1,16,Exploration,Succeeded,2023-11-14T22:13:20.000Z,2023-11-14T22:15:00.750Z,"
        "2023-11-14T22:14:20.000Z,100.25,25062.5,"
        "0.60999999999999999,2,17531.25,true,cost_bound,0.0068359375,2,100.25,25062.5,"
        "0.60999999999999999,2023-11-14T22:15:00.500Z\r\n"
        "j,2,16,Exploration,Succeeded,2023-11-14T22:13:20.000Z,2023-11-14T22:15:00.750Z,"
        "2023-11-14T22:14:20.000Z,100.25,25062.5,"
        "0.60999999999999999,2,17531.25,true,cost_bound,0.0068359375,,,,,\r\n");
    free(out);

    m = open_memstream(&out, &len);
    assert_int_equal(jobs_fmt_export(m, JOBS_FMT_JSON, job, trials, &err), 0);
    fclose(m);
    json_t *doc = json_loads(out, 0, NULL);
    assert_non_null(doc);
    assert_true(json_equal(json_object_get(doc, "job"), job));
    assert_true(json_equal(json_object_get(doc, "trials"), trials));
    assert_int_equal(json_object_size(doc), 2);
    assert_non_null(strchr(out, '\n'));
    assert_string_equal(strchr(out, '\n'), "\n");
    json_decref(doc);
    free(out);

    m = open_memstream(&out, &len);
    assert_int_equal(jobs_fmt_export(m, JOBS_FMT_TABLE, job, trials, &err), ZBSO_EINVAL);
    fclose(m);
    assert_string_equal(out, "");
    free(out);
    json_decref(trials);
    json_decref(bare);
    json_decref(curve);
    json_decref(job);
}

/* Job ids (and any string) that a spreadsheet would run as a formula get OWASP's leading
 * quote in CSV, wherever they appear (list, show, export); numbers, negative ones
 * included, are written as they are; JSON keeps every byte. */
static const char *const HOSTILE =
    "{\"jobs\":[{\"job_id\":\"=HYPERLINK(\\\"http://x\\\",\\\"y\\\")\",\"stage\":\"MAB\","
    "\"min_cost\":-2.5},"
    "{\"job_id\":\"+1+cmd|' /C calc'!A0\",\"stage\":\"@SUM(A1)\",\"min_cost\":null},"
    "{\"job_id\":\"-1\",\"stage\":\"\\tTAB\",\"min_cost\":3},"
    "{\"job_id\":\"\\r=1\",\"stage\":\"a=b\",\"min_cost\":-0.5}],\"next\":null}";

static void test_csv_formula_cells(void **state)
{
    (void)state;
    char *got = render(jobs_fmt_list, JOBS_FMT_CSV, HOSTILE);
    /* The rows' first cells (job_id, job_id_prefix, stage, ...): check each line start. */
    static const char *const rows[] = {
        "\r\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",,MAB,",
        "\r\n'+1+cmd|' /C calc'!A0,,'@SUM(A1),",
        "\r\n'-1,,'\tTAB,",
        "\r\n\"'\r=1\",,a=b,",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strstr(got, rows[i]) == NULL)
            fail_msg("missing:\n%s\nin:\n%s", rows[i], got);
    /* min_cost (a number) keeps its sign: -2.5 and -0.5, never '-2.5. */
    assert_non_null(strstr(got, ",-2.5,"));
    assert_non_null(strstr(got, ",-0.5,"));
    assert_null(strstr(got, "'-2.5"));
    free(got);

    got = render(jobs_fmt_list, JOBS_FMT_JSON, HOSTILE);
    assert_int_equal(strlen(got), strlen(HOSTILE) + 1);
    assert_memory_equal(got, HOSTILE, strlen(HOSTILE));
    free(got);

    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    jobs_csv_field(m, "=1", true);
    fputc('|', m);
    jobs_csv_field(m, "-1", false);
    fputc('|', m);
    jobs_csv_field(m, "", true);
    fputc('|', m);
    jobs_csv_field(m, "a-b", true);
    fputc('|', m);
    jobs_csv_field(m, "@a,b", true);
    fclose(m);
    assert_string_equal(out, "'=1|-1||a-b|\"'@a,b\"");
    free(out);
}

/* Issue 25: a job behind the default says "not yet"; CO2e and price columns appear only
 * when the documents have them (a server with --carbon-intensity and --energy-price). */
static const char *const FOOTPRINT_JOBS =
    "{\"jobs\":[{\"job_id\":\"a\",\"stage\":\"MAB\",\"updated_at\":0,"
    "\"trials\":{\"total\":2,\"Dispatched\":0,\"Succeeded\":2,\"Failed\":0},"
    "\"best_batch_size\":8,\"savings\":{\"spent\":{\"energy_j\":3600000,\"time_s\":1,"
    "\"cost\":1,\"energy_kwh\":1,\"co2e_g\":400,\"price\":0.25},"
    "\"saved\":{\"energy_j\":-3600000,\"time_s\":-10,"
    "\"cost\":-50.5,\"energy_kwh\":-1,\"co2e_g\":-400,\"price\":-0.25},"
    "\"saved_pct\":{\"energy\":-50,\"time\":-10,\"cost\":-12.5},"
    "\"break_even_recurrence\":null,\"currency\":\"EUR\"}}],\"next\":null}";

static void test_list_not_broken_even_and_footprint(void **state)
{
    (void)state;
    char *got = render(jobs_fmt_list, JOBS_FMT_TABLE, FOOTPRINT_JOBS);
    const char *want_head = "job id  stage  cost saved (J)  cost saved  break-even  "
                            "energy saved (kWh)  energy saved  time saved (s)  "
                            "time saved  CO2e saved (g)  price saved  trials";
    if (strncmp(got, want_head, strlen(want_head)) != 0)
        fail_msg("got:\n%s", got);
    assert_non_null(strstr(got, "\na       MAB             -50.5      -12.5%  not yet   "
                                "              -1.000        -50.0%           -10.0"
                                "      -10.0%          -400.0        -0.25       2"));
    free(got);
    got = render(jobs_fmt_list, JOBS_FMT_CSV, FOOTPRINT_JOBS);
    assert_non_null(strstr(got, ",savings.spent.co2e_g,savings.saved.co2e_g,"
                                "savings.spent.price,savings.saved.price,savings.currency,"));
    assert_non_null(strstr(got, ",1,-1,400,-400,0.25,-0.25,EUR,"));
    free(got);
    /* ... and none of them without (JOBS has no CO2e or price) */
    got = render(jobs_fmt_list, JOBS_FMT_CSV, JOBS);
    assert_null(strstr(got, "co2e"));
    assert_null(strstr(got, "price"));
    assert_null(strstr(got, "currency"));
    free(got);
    got = render(jobs_fmt_list, JOBS_FMT_TABLE, JOBS);
    assert_null(strstr(got, "CO2e"));
    assert_null(strstr(got, "price"));
    free(got);
}

/* The projection sentence at the top of `zbso jobs show`, and its absence explained. */
static void test_job_projection(void **state)
{
    (void)state;
    static const char *const doc =
        "{\"job_id\":\"j\",\"savings\":{\"default_batch_size\":16},"
        "\"projection\":{\"batch_size\":32,\"cost\":1650,\"cost_sd\":12.5,\"energy_j\":1800000,"
        "\"time_s\":6,\"runs\":3,\"saving_per_run\":{\"cost\":3350},"
        "\"saving_per_run_pct\":{\"cost\":67}},\"projection_reason\":null,"
        "\"trials\":{\"by_stop_reason\":{\"target_reached\":3,\"ended\":1}}}";
    char *got = render(jobs_fmt_job, JOBS_FMT_TABLE, doc);
    assert_int_equal(strncmp(got, "Projection: use batch size 32: expected cost 1650.0 J (sd "
                                  "12.5) per run, 3350.0 J (67.0%) less than the default batch "
                                  "size 16; energy 0.500 kWh, time 6.0 s per run (from 3 runs)."
                                  "\n\n", 180), 0);
    assert_non_null(strstr(got, "\ntrials by stop reason\nstop reason     trials\n"
                                "target_reached       3\nended                1\n"));
    free(got);
    got = render(jobs_fmt_job, JOBS_FMT_TABLE,
                 "{\"projection\":null,\"projection_reason\":\"the job is still pruning\"}");
    assert_int_equal(strncmp(got, "Projection: none yet (the job is still pruning).\n\n", 49),
                     0);
    free(got);
}

/* zbso jobs compare: one row per job document. */
static void test_compare(void **state)
{
    (void)state;
    static const char *const docs =
        "[{\"job_id\":\"m-a100\",\"stage\":\"MAB\",\"best_batch_size\":32,"
        "\"spec\":{\"gpu_model\":\"A100\",\"number_of_gpus\":1},"
        "\"savings\":{\"finished_trials\":10,\"default_batch_size\":16,"
        "\"default_expected\":{\"cost\":5000,\"energy_j\":4000,\"time_s\":20},"
        "\"saved\":{\"cost\":1000.5,\"energy_j\":10,\"time_s\":2,\"energy_kwh\":0.25},"
        "\"saved_pct\":{\"cost\":2,\"energy\":1,\"time\":1},\"break_even_recurrence\":4},"
        "\"projection\":{\"batch_size\":32,\"cost\":1650,\"saving_per_run_pct\":{\"cost\":67}}},"
        "{\"job_id\":\"m-v100\",\"stage\":\"Pruning\",\"best_batch_size\":16,"
        "\"spec\":{\"gpu_model\":\"V100\",\"number_of_gpus\":2},"
        "\"savings\":{\"finished_trials\":1,\"default_batch_size\":16,"
        "\"default_expected\":null,\"saved\":null,\"saved_pct\":null,"
        "\"break_even_recurrence\":null},\"projection\":null}]";
    char *got = render(jobs_fmt_compare, JOBS_FMT_TABLE, docs);
    static const char *const want =
        "job id  GPU   GPUs  stage    finished  default bs  best bs  cost/run at default (J)"
        "  projected bs  projected cost/run (J)  projected saving/run  cost saved (J)"
        "  cost saved  break-even  energy saved (kWh)  time saved (s)\n"
        "m-a100  A100     1  MAB            10          16       32                   5000.0"
        "            32                  1650.0                 67.0%          1000.5"
        "        2.0%  4                        0.250             2.0\n"
        "m-v100  V100     2  Pruning         1          16       16                        -"
        "             -                       -                     -               -"
        "           -  -                            -               -\n";
    if (strcmp(got, want) != 0)
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
    got = render(jobs_fmt_compare, JOBS_FMT_CSV, docs);
    assert_int_equal(strncmp(got, "job_id,spec.gpu_model,spec.number_of_gpus,stage,", 48), 0);
    assert_non_null(strstr(got, "\r\nm-a100,A100,1,MAB,10,16,32,5000,4000,20,32,1650,,,,,67,"
                                "1000.5,2,10,0.25,1,2,1,4\r\n"));
    assert_non_null(strstr(got, "\r\nm-v100,V100,2,Pruning,1,16,16,,,,,,,,,,,,,,,,,,\r\n"));
    assert_null(strstr(got, "co2e"));
    free(got);
    got = render(jobs_fmt_compare, JOBS_FMT_JSON, docs);
    json_t *d = json_loads(got, 0, NULL), *want_docs = json_loads(docs, 0, NULL);
    assert_true(json_equal(json_object_get(d, "jobs"), want_docs));
    json_decref(d);
    json_decref(want_docs);
    free(got);
}

static void test_format_parse(void **state)
{
    (void)state;
    jobs_format f = JOBS_FMT_TABLE;
    zbso_err err;
    assert_int_equal(jobs_format_parse("csv", &f, &err), 0);
    assert_int_equal(f, JOBS_FMT_CSV);
    assert_int_equal(jobs_format_parse("json", &f, &err), 0);
    assert_int_equal(f, JOBS_FMT_JSON);
    assert_int_equal(jobs_format_parse("table", &f, &err), 0);
    assert_int_equal(f, JOBS_FMT_TABLE);
    assert_int_equal(jobs_format_parse("yaml", &f, &err), ZBSO_EINVAL);
    assert_non_null(strstr(err.msg, "'yaml'"));
    assert_int_equal(f, JOBS_FMT_TABLE);
}

static void test_table_escapes_and_widths(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    cli_table *t = cli_table_new(3, "lrl");
    cli_table_cell(t, "name");
    cli_table_cell(t, "n");
    cli_table_end_row(t); /* padded with "" */
    cli_table_cell(t, "\xc3\xa9t\xc3\xa9");   /* "été": 3 characters, 5 bytes */
    cli_table_cellf(t, "%d", 12345);
    cli_table_cell(t, "x");
    cli_table_end_row(t);
    cli_table_cell(t, "a\x1b[2Jb\xff\xc2\x9b\xed\xa0\x80");  /* ESC, bad byte, C1, surrogate */
    cli_table_cellf(t, "%d", 7);
    cli_table_cell(t, "\xf0\x9f\x98\x80");   /* one 4-byte character */
    cli_table_end_row(t);
    assert_int_equal(cli_table_print(t, m), 0);
    cli_table_free(t);
    fclose(m);
    assert_string_equal(out,
        "name                                   n\n"
        "\xc3\xa9t\xc3\xa9                                12345  x\n"
        "a\\x1b[2Jb\\xff\\xc2\\x9b\\xed\\xa0\\x80      7  \xf0\x9f\x98\x80\n");
    free(out);
}

/* Ids that differ only by invisible characters (bidi controls, zero-width ones) differ
 * on screen: each such character is shown as \uXXXX, and a right-to-left override cannot
 * reorder the rest of the line. Visible non-ASCII text stays as it is. */
static void test_table_escapes_invisible_characters(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&out, &len);
    cli_table *t = cli_table_new(1, "l");
    static const char *const ids[] = {
        "job-a",
        "job-\xe2\x80\xae" "a",          /* U+202E RIGHT-TO-LEFT OVERRIDE */
        "job\xe2\x80\x8b-a",             /* U+200B ZERO WIDTH SPACE */
        "job-a\xe2\x81\xa6",             /* U+2066 LEFT-TO-RIGHT ISOLATE */
        "\xef\xbb\xbfjob-a",             /* U+FEFF BOM */
        "job-a\xf3\xa0\x80\x81",         /* U+E0001 LANGUAGE TAG */
        "job-\xc3\xa9\xe2\x80\x8d",      /* é, then U+200D ZERO WIDTH JOINER */
        "job-a\xc2\xad",                 /* U+00AD SOFT HYPHEN */
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        cli_table_cell(t, ids[i]);
        cli_table_end_row(t);
    }
    assert_int_equal(cli_table_print(t, m), 0);
    cli_table_free(t);
    fclose(m);
    assert_string_equal(out,
        "job-a\n"
        "job-\\u202ea\n"
        "job\\u200b-a\n"
        "job-a\\u2066\n"
        "\\ufeffjob-a\n"
        "job-a\\U000e0001\n"
        "job-\xc3\xa9\\u200d\n"
        "job-a\\u00ad\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_table),
        cmocka_unit_test(test_list_csv),
        cmocka_unit_test(test_list_json_is_the_document),
        cmocka_unit_test(test_trials_table_and_csv),
        cmocka_unit_test(test_curve_table_and_csv),
        cmocka_unit_test(test_job_table),
        cmocka_unit_test(test_job_csv_flattens_every_field),
        cmocka_unit_test(test_export),
        cmocka_unit_test(test_csv_formula_cells),
        cmocka_unit_test(test_list_not_broken_even_and_footprint),
        cmocka_unit_test(test_job_projection),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_format_parse),
        cmocka_unit_test(test_table_escapes_and_widths),
        cmocka_unit_test(test_table_escapes_invisible_characters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
