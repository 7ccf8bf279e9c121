"""test_api.py: every rule of SPEC §2 against a real `zbso serve`: paths, statuses, body
shapes, each validation rule, the report flow, trial ending, deletion, auth, SIGTERM."""

import re
import signal
import unittest

from zbsoserver import Server, ServerTestCase, job_spec

DEFAULTS = {
    "eta_knob": 0.5,
    "beta_knob": 2.0,
    "target_metric": 0.5,
    "higher_is_better_metric": True,
    "max_epochs": 100,
    "num_pruning_rounds": 2,
    "window_size": 0,
    "mab_prior_mean": 0.0,
    "mab_prior_precision": 0.0,
    "mab_num_explorations": 2,
    "mab_seed": None,
}


def expected_echo(job_id, **overrides):
    spec = job_spec(**overrides)
    out = dict(DEFAULTS)
    out.update(spec)
    out["job_id"] = job_id
    out["batch_sizes"] = sorted(out["batch_sizes"])
    return out


class RegisterTest(ServerTestCase):
    def test_new_job_201_echoes_spec_with_defaults_sorted(self):
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-a"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json, expected_echo("itest-a"))

    def test_identical_reregistration_is_200(self):
        first = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-a"))
        self.assertEqual(first.status, 201, first)
        # Same config, batch sizes in another order: compared sorted, so identical.
        again = self.srv.request("POST", "/jobs",
                                 body=job_spec(job_id="itest-a", batch_sizes=[16, 32, 8]))
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json, expected_echo("itest-a"))
        # Defaults written out explicitly are the same config too.
        explicit = job_spec(job_id="itest-a", **DEFAULTS)
        self.assertEqual(self.srv.request("POST", "/jobs", body=explicit).status, 200)

    def test_different_config_is_409(self):
        self.assertEqual(
            self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-a")).status, 201)
        for name, change in [("eta", {"eta_knob": 0.7}), ("bs", {"batch_sizes": [8, 16]}),
                             ("gpus", {"number_of_gpus": 2}), ("seed", {"mab_seed": 1})]:
            with self.subTest(name):
                r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-a", **change))
                self.assertEqual(r.status, 409, r)
                self.assertEqual(list(r.json.keys()), ["message"], r)
                self.assertIn("itest-a", r.json["message"])

    def test_generated_ids_are_prefix_dash_8_hex_and_unique(self):
        ids = set()
        for _ in range(6):
            r = self.srv.request("POST", "/jobs", body=job_spec())
            self.assertEqual(r.status, 201, r)
            self.assertRegex(r.json["job_id"], r"^itest-[0-9a-f]{8}$")
            self.assertEqual(r.json, expected_echo(r.json["job_id"]))
            ids.add(r.json["job_id"])
        self.assertEqual(len(ids), 6)
        # A generated id works like any other.
        jid = sorted(ids)[0]
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        self.assertEqual(r.json, {"job_id": jid, "batch_size": 16, "trial_number": 1})

    def test_job_id_null_means_generated(self):
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id=None))
        self.assertEqual(r.status, 201, r)
        self.assertRegex(r.json["job_id"], r"^itest-[0-9a-f]{8}$")

    def test_integral_float_accepted_and_unknown_fields_ignored(self):
        body = job_spec(job_id="itest-u", max_epochs=7.0, unknown_field=1,
                        nested={"a": [1, 2]})
        r = self.srv.request("POST", "/jobs", body=body)
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json, expected_echo("itest-u", max_epochs=7))


def invalid_cases():
    """(name, body, field): each body breaks exactly one rule about field."""
    cases = []
    for field in ["job_id_prefix", "batch_sizes", "default_batch_size", "max_power",
                  "number_of_gpus", "gpu_model"]:
        body = job_spec()
        del body[field]
        cases.append((f"missing {field}", body, field))
    cases += [
        ("empty prefix", job_spec(job_id_prefix=""), "job_id_prefix"),
        ("prefix over 300 bytes", job_spec(job_id_prefix="p" * 301), "job_id_prefix"),
        ("empty batch sizes", job_spec(batch_sizes=[]), "batch_sizes"),
        ("duplicate batch sizes", job_spec(batch_sizes=[8, 16, 16]), "batch_sizes"),
        ("zero batch size", job_spec(batch_sizes=[0, 16]), "batch_sizes"),
        ("negative batch size", job_spec(batch_sizes=[-8, 16]), "batch_sizes"),
        ("batch sizes not a list", job_spec(batch_sizes=16), "batch_sizes"),
        ("default not in list", job_spec(default_batch_size=64), "default_batch_size"),
        ("default zero", job_spec(default_batch_size=0), "default_batch_size"),
        ("eta below 0", job_spec(eta_knob=-0.1), "eta_knob"),
        ("eta above 1", job_spec(eta_knob=1.1), "eta_knob"),
        ("beta zero", job_spec(beta_knob=0), "beta_knob"),
        ("beta negative", job_spec(beta_knob=-2.0), "beta_knob"),
        ("max_epochs zero", job_spec(max_epochs=0), "max_epochs"),
        ("pruning rounds -1", job_spec(num_pruning_rounds=-1), "num_pruning_rounds"),
        ("explorations -1", job_spec(mab_num_explorations=-1), "mab_num_explorations"),
        ("prior precision -1", job_spec(mab_prior_precision=-1.0), "mab_prior_precision"),
        ("window -1", job_spec(window_size=-1), "window_size"),
        ("job id without prefix", job_spec(job_id="other-1"), "job_id"),
        ("job id over 300 bytes", job_spec(job_id="itest" + "x" * 296), "job_id"),
        ("max_power zero", job_spec(max_power=0), "max_power"),
        ("max_power negative", job_spec(max_power=-300.0), "max_power"),
        ("gpus zero", job_spec(number_of_gpus=0), "number_of_gpus"),
        ("gpu_model empty", job_spec(gpu_model=""), "gpu_model"),
        ("string for eta", job_spec(eta_knob="0.5"), "eta_knob"),
        ("string for max_power", job_spec(max_power="300"), "max_power"),
        ("256.5 for max_epochs", job_spec(max_epochs=256.5), "max_epochs"),
        ("16.5 for default", job_spec(default_batch_size=16.5), "default_batch_size"),
        ("bool as string", job_spec(higher_is_better_metric="true"),
         "higher_is_better_metric"),
        ("number for gpu_model", job_spec(gpu_model=5), "gpu_model"),
        ("number for prefix", job_spec(job_id_prefix=7), "job_id_prefix"),
        ("string for seed", job_spec(mab_seed="42"), "mab_seed"),
    ]
    return cases


class ValidationTest(ServerTestCase):
    def assert_detail(self, r, field):
        self.assertEqual(r.status, 422, r)
        self.assertEqual(list(r.json.keys()), ["detail"], r)
        detail = r.json["detail"]
        self.assertIsInstance(detail, list)
        self.assertGreaterEqual(len(detail), 1)
        d = detail[0]
        self.assertEqual(d["loc"], ["body", field], r)
        self.assertEqual(d["type"], "value_error", r)
        self.assertIsInstance(d["msg"], str)
        self.assertGreater(len(d["msg"]), 0)

    def test_each_rule_is_422_with_detail(self):
        for name, body, field in invalid_cases():
            with self.subTest(name):
                self.assert_detail(self.srv.request("POST", "/jobs", body=body), field)
        # Nothing was stored by any of them: a later valid registration is the first job.
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-ok"))
        self.assertEqual(r.status, 201, r)

    def test_messages_name_the_value(self):
        r = self.srv.request("POST", "/jobs", body=job_spec(eta_knob=1.25))
        self.assertIn("1.25", r.json["detail"][0]["msg"])
        r = self.srv.request("POST", "/jobs", body=job_spec(default_batch_size=64))
        self.assertIn("64", r.json["detail"][0]["msg"])
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="other-1"))
        self.assertIn("other-1", r.json["detail"][0]["msg"])

    def test_invalid_job_with_id_is_not_stored(self):
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-bad", eta_knob=2))
        self.assertEqual(r.status, 422, r)
        r = self.srv.request("GET", "/jobs/batch_size?job_id=itest-bad")
        self.assertEqual(r.status, 404, r)


class NotFoundTest(ServerTestCase):
    def test_unknown_job_is_404_everywhere(self):
        r = self.srv.request("GET", "/jobs/batch_size?job_id=nosuch-1")
        self.assertEqual(r.status, 404, r)
        self.assertEqual(list(r.json.keys()), ["message"])
        self.assertIn("nosuch-1", r.json["message"])

        r = self.srv.request("DELETE", "/jobs?job_id=nosuch-1")
        self.assertEqual(r.status, 404, r)
        self.assertIn("nosuch-1", r.json["message"])

        r = self.srv.request("POST", "/report", body={
            "job_id": "nosuch-1", "batch_size": 16, "trial_number": 1, "time": 1.0,
            "energy": 1.0, "metric": 0.1, "current_epoch": 1})
        self.assertEqual(r.status, 404, r)
        self.assertIn("nosuch-1", r.json["message"])

        r = self.srv.request("PATCH", "/trials", body={
            "job_id": "nosuch-1", "batch_size": 16, "trial_number": 1})
        self.assertEqual(r.status, 404, r)
        self.assertIn("nosuch-1", r.json["message"])

    def test_unknown_trial_of_known_job_is_404(self):
        jid = self.register(job_id="itest-t")
        self.assertEqual(self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json,
                         {"job_id": jid, "batch_size": 16, "trial_number": 1})
        base = {"job_id": jid, "time": 1.0, "energy": 1.0, "metric": 0.1,
                "current_epoch": 1}
        for name, bs, tn in [("trial number", 16, 2), ("batch size", 8, 1),
                             ("batch size not in job", 64, 1)]:
            with self.subTest(name):
                r = self.srv.request("POST", "/report",
                                     body=dict(base, batch_size=bs, trial_number=tn))
                self.assertEqual(r.status, 404, r)
                self.assertIn("message", r.json)
        r = self.srv.request("PATCH", "/trials",
                             body={"job_id": jid, "batch_size": 16, "trial_number": 5})
        self.assertEqual(r.status, 404, r)
        self.assertIn("5", r.json["message"])

    def test_missing_job_id_query_is_422(self):
        for method, path in [("GET", "/jobs/batch_size"), ("DELETE", "/jobs")]:
            with self.subTest(f"{method} {path}"):
                r = self.srv.request(method, path)
                self.assertEqual(r.status, 422, r)
                self.assertEqual(list(r.json.keys()), ["detail"], r)
                self.assertEqual(r.json["detail"][0]["loc"], ["query", "job_id"], r)
                self.assertTrue(r.json["detail"][0]["type"].startswith("value_error"), r)


class IdempotencyKeyTest(ServerTestCase):
    """GET /jobs/batch_size with an Idempotency-Key (IETF draft-ietf-httpapi-idempotency-
    key-header: an RFC 8941 sf-string): a repeated key gets the trial its first request
    dispatched; without the header (the Zeus client) every request dispatches."""

    def next(self, jid, key=None):
        headers = {} if key is None else {"Idempotency-Key": key}
        return self.srv.request("GET", f"/jobs/batch_size?job_id={jid}", headers=headers)

    def test_repeated_key_gets_the_same_trial(self):
        jid = self.register(job_id="itest-key")
        first = self.next(jid, '"k-1"')
        self.assertEqual(first.status, 200, first)
        self.assertEqual(first.json["trial_number"], 1)
        again = self.next(jid, ' "k-1" ')
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json, first.json)
        self.assertEqual(again.headers["X-Zbso-Job-Version"],
                         first.headers["X-Zbso-Job-Version"])
        self.assertEqual(self.next(jid, '"k-2"').json["trial_number"], 2)
        self.assertEqual(self.next(jid).json["trial_number"], 3)
        self.assertEqual(self.next(jid).json["trial_number"], 4)
        self.assertEqual(self.next(jid, '"k-1"').json, first.json)
        escaped = self.next(jid, r'"a\"b\\c"')
        self.assertEqual(escaped.json["trial_number"], 5)
        self.assertEqual(self.next(jid, r'"a\"b\\c"').json["trial_number"], 5)
        self.assertEqual(self.next(jid, '"' + "x" * 255 + '"').json["trial_number"], 6)
        trials = [t for t in self.srv.rows("trials") if t["job_id"] == jid]
        self.assertEqual(sorted(t["trial_number"] for t in trials), [1, 2, 3, 4, 5, 6])
        # Keys belong to their job.
        other = self.register(job_id="itest-key2")
        self.assertEqual(self.next(other, '"k-1"').json["trial_number"], 1)

    def test_key_survives_a_restart(self):
        """The key is stored with its trial: a server killed after answering (SIGKILL) and
        started again on the same database answers the retry with the same trial."""
        jid = self.register(job_id="itest-restart")
        first = self.next(jid, '"lost-answer"')
        self.assertEqual(first.status, 200, first)
        self.srv.restart()
        again = self.next(jid, '"lost-answer"')
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json, first.json)
        self.assertEqual(self.next(jid, '"next"').json["trial_number"], 2)
        trials = [t for t in self.srv.rows("trials") if t["job_id"] == jid]
        self.assertEqual(sorted(t["trial_number"] for t in trials), [1, 2])

    def test_bad_key_is_422_and_dispatches_nothing(self):
        jid = self.register(job_id="itest-badkey")
        before = self.srv.snapshot()
        for key, why in [("k-1", "quoted string"), ('""', "empty"), ('"k-1', "closing quote"),
                         ('"k" x', "after its closing quote"), ('"a\\zb"', "0x5c"),
                         ('"' + "x" * 256 + '"', "longer than 255"),
                         ('"caf\u00e9"', "0xc3")]:
            with self.subTest(key=key):
                r = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}",
                                     headers={"Idempotency-Key": key.encode("utf-8")})
                self.assertEqual(r.status, 422, r)
                detail = r.json["detail"][0]
                self.assertEqual(detail["loc"], ["header", "idempotency-key"], r)
                self.assertIn(why, detail["msg"])
        self.assertEqual(self.srv.snapshot(), before)


class FlowTest(ServerTestCase):
    def report(self, jid, bs, tn, time, energy, metric, epoch):
        return self.srv.request("POST", "/report", body={
            "job_id": jid, "batch_size": bs, "trial_number": tn, "time": time,
            "energy": energy, "metric": metric, "current_epoch": epoch})

    def test_report_continue_then_stop_converged(self):
        jid = self.register(job_id="itest-f", max_epochs=5)
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"job_id": jid, "batch_size": 16, "trial_number": 1})

        r = self.report(jid, 16, 1, 10.0, 1000.0, 0.1, 1)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(set(r.json.keys()), {"stop_train", "converged", "message"})
        self.assertIs(r.json["stop_train"], False)
        self.assertIs(r.json["converged"], False)
        self.assertIsInstance(r.json["message"], str)

        r = self.report(jid, 16, 1, 20.0, 2000.0, 0.6, 2)
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["stop_train"], True)
        self.assertIs(r.json["converged"], True)

        # A repeated report changes nothing and says it was already reported.
        r = self.report(jid, 16, 1, 30.0, 3000.0, 0.1, 3)
        self.assertEqual(r.status, 200, r)
        self.assertIs(r.json["stop_train"], True)
        self.assertIs(r.json["converged"], True)
        self.assertIn("already", r.json["message"].lower())

        # Pruning walks down from the default: 8 is next.
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        self.assertEqual(r.json, {"job_id": jid, "batch_size": 8, "trial_number": 2})

    def test_job_version_header_orders_changes(self):
        # X-Zbso-Job-Version: 1 at registration, +1 per change, the version read otherwise.
        def version(r):
            self.assertEqual(r.status // 100, 2, r)
            return int(r.headers["X-Zbso-Job-Version"])
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-v", max_epochs=5))
        self.assertEqual((r.status, version(r)), (201, 1))
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-v", max_epochs=5))
        self.assertEqual((r.status, version(r)), (200, 1))
        self.assertEqual(version(self.srv.request("GET", "/jobs/batch_size?job_id=itest-v")), 2)
        self.assertEqual(version(self.report("itest-v", 16, 1, 10.0, 1000.0, 0.1, 1)), 2)
        self.assertEqual(version(self.report("itest-v", 16, 1, 20.0, 2000.0, 0.6, 2)), 3)
        body = {"job_id": "itest-v", "batch_size": 16, "trial_number": 1}
        self.assertEqual(version(self.srv.request("PATCH", "/trials", body=body)), 3)
        r = self.srv.request("DELETE", "/jobs?job_id=itest-v")
        self.assertEqual(r.status, 200, r)
        self.assertNotIn("X-Zbso-Job-Version", r.headers)
        r = self.srv.request("GET", "/jobs/batch_size?job_id=itest-v")
        self.assertEqual(r.status, 404, r)
        self.assertNotIn("X-Zbso-Job-Version", r.headers)

    def test_not_converged_within_max_epochs_stops(self):
        jid = self.register(job_id="itest-m", max_epochs=2)
        self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        r = self.report(jid, 16, 1, 10.0, 1000.0, 0.1, 1)
        self.assertEqual((r.json["stop_train"], r.json["converged"]), (False, False))
        r = self.report(jid, 16, 1, 20.0, 2000.0, 0.2, 2)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["stop_train"], r.json["converged"]), (True, False))

    def test_concurrent_trial_while_exploring(self):
        jid = self.register(job_id="itest-c")
        a = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json
        b = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json
        self.assertEqual(a, {"job_id": jid, "batch_size": 16, "trial_number": 1})
        # 16 is still being explored: a Concurrent trial with min_cost_batch_size (16).
        self.assertEqual(b, {"job_id": jid, "batch_size": 16, "trial_number": 2})
        # Ending the concurrent trial converged does not end the exploration of 16.
        self.assertIs(self.report(jid, 16, 2, 1.0, 1.0, 0.9, 1).json["converged"], True)
        c = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json
        self.assertEqual(c, {"job_id": jid, "batch_size": 16, "trial_number": 3})

    def test_patch_fails_dispatched_trial_and_batch_size_is_explored_again(self):
        jid = self.register(job_id="itest-p")
        self.assertEqual(self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json,
                         {"job_id": jid, "batch_size": 16, "trial_number": 1})
        r = self.srv.request("PATCH", "/trials",
                             body={"job_id": jid, "batch_size": 16, "trial_number": 1})
        self.assertEqual(r.status, 200, r)
        # PATCH again on a Failed trial: left as is, still 200.
        r = self.srv.request("PATCH", "/trials",
                             body={"job_id": jid, "batch_size": 16, "trial_number": 1})
        self.assertEqual(r.status, 200, r)
        # A report for the Failed trial is a conflict.
        r = self.report(jid, 16, 1, 1.0, 1.0, 0.9, 1)
        self.assertEqual(r.status, 409, r)
        self.assertIn("message", r.json)

        self.assertEqual(self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json,
                         {"job_id": jid, "batch_size": 16, "trial_number": 2})
        # Trial 2 is the exploration of 16 (not a concurrent one): converging it moves
        # pruning on to 8.
        self.assertIs(self.report(jid, 16, 2, 1.0, 1.0, 0.9, 1).json["converged"], True)
        self.assertEqual(self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json,
                         {"job_id": jid, "batch_size": 8, "trial_number": 3})

    def test_patch_on_succeeded_trial_leaves_it(self):
        jid = self.register(job_id="itest-s")
        self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        self.assertIs(self.report(jid, 16, 1, 1.0, 1.0, 0.9, 1).json["converged"], True)
        r = self.srv.request("PATCH", "/trials",
                             body={"job_id": jid, "batch_size": 16, "trial_number": 1})
        self.assertEqual(r.status, 200, r)
        r = self.report(jid, 16, 1, 1.0, 1.0, 0.9, 1)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["stop_train"], r.json["converged"]), (True, True))

    def test_delete_then_404(self):
        jid = self.register(job_id="itest-d")
        self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        r = self.srv.request("DELETE", f"/jobs?job_id={jid}")
        self.assertEqual(r.status, 200, r)
        r = self.srv.request("GET", f"/jobs/batch_size?job_id={jid}")
        self.assertEqual(r.status, 404, r)
        r = self.srv.request("DELETE", f"/jobs?job_id={jid}")
        self.assertEqual(r.status, 404, r)
        r = self.report(jid, 16, 1, 1.0, 1.0, 0.9, 1)
        self.assertEqual(r.status, 404, r)
        # The id is free again: registering anew starts from trial 1.
        self.register(job_id="itest-d")
        self.assertEqual(self.srv.request("GET", f"/jobs/batch_size?job_id={jid}").json,
                         {"job_id": jid, "batch_size": 16, "trial_number": 1})

    def test_job_id_needing_url_encoding(self):
        jid = self.register(job_id="itest-a b&c")
        r = self.srv.request("GET", "/jobs/batch_size?job_id=itest-a%20b%26c")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json, {"job_id": jid, "batch_size": 16, "trial_number": 1})


class AuthTest(ServerTestCase):
    server_env = {"ZEUS_BSO_API_TOKEN": "s3cret-token"}

    def test_token_required_except_healthz(self):
        good = {"Authorization": "Bearer s3cret-token"}
        for name, headers in [("none", {}), ("wrong", {"Authorization": "Bearer nope"}),
                              ("not bearer", {"Authorization": "Basic czNjcmV0LXRva2Vu"}),
                              ("empty bearer", {"Authorization": "Bearer "})]:
            with self.subTest(name):
                r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-x"),
                                     headers=headers)
                self.assertEqual(r.status, 401, r)
                self.assertEqual(list(r.json.keys()), ["message"], r)
                r = self.srv.request("GET", "/jobs/batch_size?job_id=itest-x",
                                     headers=headers)
                self.assertEqual(r.status, 401, r)
        self.assertEqual(self.srv.request("GET", "/healthz").status, 200)
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-x"), headers=good)
        self.assertEqual(r.status, 201, r)
        r = self.srv.request("GET", "/jobs/batch_size?job_id=itest-x", headers=good)
        self.assertEqual(r.json, {"job_id": "itest-x", "batch_size": 16, "trial_number": 1})


class NoAuthTest(ServerTestCase):
    def test_no_token_configured_means_open(self):
        r = self.srv.request("POST", "/jobs", body=job_spec(job_id="itest-o"),
                             headers={"Authorization": "Bearer anything"})
        self.assertEqual(r.status, 201, r)


class SignalTest(unittest.TestCase):
    def test_sigterm_exits_0_and_data_survives(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-sig"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(srv.terminate(), 0, srv.log_tail())
        srv.start()
        r = srv.request("POST", "/jobs", body=job_spec(job_id="itest-sig"))
        self.assertEqual(r.status, 200, r)
        self.assertEqual(srv.terminate(), 0, srv.log_tail())

    def test_sigint_exits_0(self):
        srv = Server()
        self.addCleanup(srv.close)
        srv.start()
        srv.proc.send_signal(signal.SIGINT)
        self.assertEqual(srv.proc.wait(timeout=60), 0, srv.log_tail())
        srv.proc.stdout.close()
        srv.proc = None

    def test_listening_line_has_real_port(self):
        with Server() as srv:
            self.assertTrue(re.fullmatch(r"\d+", str(srv.port)))
            self.assertGreater(srv.port, 0)
            self.assertTrue(srv.healthy())


if __name__ == "__main__":
    unittest.main()
