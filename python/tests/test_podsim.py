"""Tests of the Python module (python3 -m unittest; CTest `python` runs them against build/python)."""

import json
import os
import pathlib
import subprocess
import threading
import time
import unittest

import podsim

ROOT = pathlib.Path(os.environ.get("PODSIM_HOME", pathlib.Path(__file__).resolve().parents[2]))
DEFAULT = ROOT / "configs" / "default.yaml"
PODSIM = os.environ.get("PODSIM_BINARY")


class RunTest(unittest.TestCase):
    def test_report_is_the_json_report(self):
        report = podsim.run(str(DEFAULT))
        self.assertEqual(report["schema"], "podsim.report/v1")
        self.assertEqual(report["name"], "gpt2-2b-fsdp-v4-8")
        self.assertEqual(report["chips"], 4)
        # The same numbers as the C++ side: tokens per step = global batch x seq_len of the file.
        self.assertEqual(report["tokens_per_step"], 128 * 1024)
        self.assertAlmostEqual(report["tokens_per_s"], 128 * 1024 / report["step_time_s"], delta=1e-6 * report["tokens_per_s"])
        if PODSIM:
            cli = subprocess.run([PODSIM, "run", str(DEFAULT), "--format", "json"], check=True,
                                 capture_output=True, text=True).stdout
            self.assertEqual(report, json.loads(cli))

    def test_config_as_path_dict_or_text(self):
        text = DEFAULT.read_text()
        from_path = podsim.run(DEFAULT)
        self.assertEqual(podsim.run(text), from_path)
        as_dict = {"schema": "podsim.run/v1", "name": "gpt2-2b-fsdp-v4-8", "model": "gpt2-2b",
                   "topology": "tpu-v4", "slice": "2x2x1", "mesh": {"fsdp": 4},
                   "training": {"global_batch": 128, "seq_len": 1024, "dtype": "bf16",
                                "param_dtype": "fp32", "optimizer": "adafactor", "remat": "full"},
                   "runtime": {"framework": "pytorch-xla", "async_collectives": False}}
        self.assertEqual(podsim.run(as_dict), from_path)

    def test_overrides_are_dotted_paths(self):
        base = podsim.run(DEFAULT)
        doubled = podsim.run(DEFAULT, **{"training.global_batch": 256})
        self.assertEqual(doubled["tokens_per_step"], 2 * base["tokens_per_step"])
        self.assertGreater(doubled["step_time_s"], base["step_time_s"])
        eight = podsim.run(DEFAULT, **{"slice": "2x2x2", "mesh": {"fsdp": 8}, "training.global_batch": 256})
        self.assertEqual(eight["chips"], 8)
        checked = podsim.check(DEFAULT, **{"slice": "2x2x2", "mesh": {"fsdp": 8}})
        self.assertEqual(checked["mesh"], "ici{fsdp=8}")
        self.assertEqual(checked["chips"], 8)

    def test_trace(self):
        events = podsim.trace(DEFAULT)["traceEvents"]
        self.assertTrue(any(e.get("ph") == "X" for e in events))
        self.assertTrue(any(e.get("ph") == "C" for e in events))


class ErrorTest(unittest.TestCase):
    def test_config_error_lists_every_mistake_with_its_location(self):
        text = ("schema: podsim.run/v1\nmodel: gpt2-2b\ntopology: tpu-v4\nslice: 2x2x1\n"
                "mesh: {fsdp: 4}\ntraining: {global_batch: 128, seq_len: 1024, remat: ful}\n")
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.run(text, **{"training.optimiser": "adam"})
        e = caught.exception
        self.assertIsInstance(e, ValueError)
        # The override's mistake and the file's, at once.
        self.assertEqual([d["key_path"] for d in e.diagnostics], ["training.remat", "training.optimiser"])  # sorted by location
        self.assertIn("did you mean 'training.optimizer'?", str(e))
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.run(text)
        (d,) = caught.exception.diagnostics
        self.assertEqual((d["file"], d["line"], d["column"]), ("<text>", 6, 53))
        self.assertTrue(d["text"].startswith("<text>:6:53: error: training.remat: 'ful' is not one of none, full,"))
        self.assertTrue(d["text"].endswith("(did you mean 'full'?)"))
        self.assertEqual(str(caught.exception), d["text"])

    def test_override_value_mistakes_name_the_override(self):
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.run(DEFAULT, **{"training.global_batch": "many"})
        (d,) = caught.exception.diagnostics
        self.assertEqual(d["file"], "override training.global_batch=many")
        self.assertEqual(d["key_path"], "training.global_batch")

    def test_missing_file_and_bad_arguments(self):
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.run("no/such/config.yaml")
        self.assertIn("no/such/config.yaml", str(caught.exception))
        with self.assertRaises(TypeError):
            podsim.run(42)
        with self.assertRaises(podsim.ConfigError):
            podsim.explain("rnu")
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.collective("4x4x4", op="all-gahter")
        self.assertEqual(caught.exception.diagnostics[0]["key_path"], "op")


class SweepTest(unittest.TestCase):
    SWEEP = ROOT / "configs" / "sweeps" / "vit-cifar-mesh.yaml"  # 2 meshes x 3 batches

    def test_rows_in_index_order_match_single_runs(self):
        rows = podsim.sweep(self.SWEEP, jobs=2)
        if not isinstance(rows, list):
            rows = rows.to_dict("records")
        self.assertEqual([r["index"] for r in rows], list(range(6)))
        self.assertEqual([r["training.global_batch"] for r in rows], [128, 1024, 4096] * 2)
        # Each row is the run of the base config with its swept values as overrides.
        base = ROOT / "configs" / "vit-cifar-mesh-4x2-b128.yaml"
        for r in rows[3:]:
            self.assertEqual(r["mesh"], "{data: 4, tensor: 2}")
            single = podsim.run(base, **{"training.global_batch": r["training.global_batch"]})
            self.assertEqual(r["status"], "ok")
            self.assertEqual(r["step_time_s"], single["step_time_s"])
            self.assertEqual(r["mfu"], single["mfu"])
            self.assertEqual(r["fits"], single["memory"]["fits"])

    def test_dataframe_or_list_without_pandas(self):
        import sys
        try:
            import pandas  # noqa: F401
        except ImportError:
            pandas = None
        if pandas is not None:
            frame = podsim.sweep(self.SWEEP)
            self.assertEqual(list(frame.columns[:5]), ["index", "status", "reason", "mesh", "training.global_batch"])
            self.assertEqual(len(frame), 6)
        saved = sys.modules.get("pandas")
        sys.modules["pandas"] = None  # import pandas now raises ImportError
        try:
            rows = podsim.sweep(self.SWEEP, jobs=1)
        finally:
            if saved is None:
                del sys.modules["pandas"]
            else:
                sys.modules["pandas"] = saved
        self.assertIsInstance(rows, list)
        self.assertEqual(len(rows), 6)

    def test_sweep_as_dict_and_its_errors(self):
        sweep = {"schema": "podsim.sweep/v1", "base": str(ROOT / "configs" / "default.yaml"),
                 "axes": {"training.per_chip_batch": [16, 32]}}
        rows = podsim.sweep(sweep)
        if not isinstance(rows, list):
            rows = rows.to_dict("records")
        self.assertEqual([r["training.per_chip_batch"] for r in rows], [16, 32])
        report = podsim.run(DEFAULT)  # 32 per chip = 128, the second row
        self.assertEqual(rows[1]["step_time_s"], report["step_time_s"])
        # The sweep columns of the report registry (`podsim explain sweep`), typed as in the report.
        self.assertEqual(rows[1]["peak_bytes"], report["memory"]["peak_bytes"])
        self.assertEqual(rows[1]["host_fits"], report["host_memory"]["fits"])
        self.assertEqual(rows[1]["idle_s"], report["breakdown_s"]["idle"])
        self.assertIs(type(rows[1]["params"]), int)
        self.assertIs(type(rows[1]["chips"]), int)
        self.assertIs(type(rows[1]["fits"]), bool)
        self.assertEqual(rows[1]["params"], report["params"])
        explained = podsim.explain("sweep")
        for column in ("params", "exposed_communication_s", "communication_s", "host_fits", "kept"):
            self.assertIn(column, rows[1])
            self.assertIn(f"\n  {column} ", explained)
        sweep["axes"] = {"training.per_chip_bach": [16]}
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.sweep(sweep)
        self.assertIn("did you mean 'training.per_chip_batch'?", str(caught.exception))


    def test_jobs_are_capped_not_fatal(self):
        # One thread per job for a 6-config sweep used to end the interpreter (std::system_error
        # from thread creation, then std::terminate).
        expected = podsim.sweep(self.SWEEP, jobs=1)
        if not isinstance(expected, list):
            expected = expected.to_dict("records")
        for jobs in (60000, 10**6, 2**31 - 1):
            rows = podsim.sweep(self.SWEEP, jobs=jobs)
            if not isinstance(rows, list):
                rows = rows.to_dict("records")
            self.assertEqual([r["step_time_s"] for r in rows], [r["step_time_s"] for r in expected])
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.sweep(self.SWEEP, jobs=-5)
        self.assertIn("jobs", str(caught.exception))
        with self.assertRaises(ValueError):
            podsim.sweep(self.SWEEP, jobs=1.5)


class WholeRunTest(unittest.TestCase):
    CONFIG = ROOT / "configs" / "unit-qnli-train.yaml"

    def test_a_whole_run_config_returns_the_whole_run_document(self):
        document = podsim.run(self.CONFIG)
        self.assertEqual(document["schema"], "podsim.whole-run/v1")
        self.assertGreater(document["train_steps"], 0)
        self.assertGreater(document["run_time_s"], 0)
        if PODSIM:
            cli = subprocess.run([PODSIM, "run", str(self.CONFIG), "--format", "json"], check=True,
                                 capture_output=True, text=True).stdout
            self.assertEqual(document, json.loads(cli))
        trace = podsim.trace(self.CONFIG)
        self.assertTrue(any(e.get("name", "").startswith("ProfilerStep#") for e in trace["traceEvents"]))

    def test_a_run_too_long_to_represent_is_a_config_error(self):
        with self.assertRaises(podsim.ConfigError) as caught:
            podsim.run(self.CONFIG, **{"whole_run.train_steps": 2**31 - 1})
        self.assertIn("longer than podsim", str(caught.exception))


class CollectiveExplainValidateTest(unittest.TestCase):
    def test_collective(self):
        r = podsim.collective("4x4x4", mesh={"fsdp": 16, "tensor": 4}, axis="fsdp", bytes="64MiB")
        self.assertEqual(r["op"], "all-gather")
        self.assertEqual(r["group_size"], 16)
        self.assertEqual(r["bytes"], 64 * 2**20)
        self.assertAlmostEqual(r["algorithm_bandwidth_bytes_per_s"], r["bytes"] / r["time_s"],
                               delta=1e-6 * r["algorithm_bandwidth_bytes_per_s"])
        self.assertEqual(podsim.collective("4x4x4", mesh="fsdp=16,tensor=4", axis=["fsdp"], bytes=64 * 2**20), r)

    def test_explain(self):
        self.assertIn("training.global_batch", podsim.explain("run"))

    def test_validate(self):
        cases = podsim.validate(ROOT / "tests" / "validation")["cases"]
        self.assertIn("gpt2-2b-fsdp-v4-8", [c["id"] for c in cases])


class ThreadTest(unittest.TestCase):
    def test_threads_get_the_same_answers_as_one_thread(self):
        batches = [64, 128, 256, 512]
        expected = {b: podsim.run(DEFAULT, **{"training.global_batch": b})["step_time_s"] for b in batches}
        results, errors = {}, []

        def work(batch):
            try:
                for _ in range(3):
                    step = podsim.run(DEFAULT, **{"training.global_batch": batch})["step_time_s"]
                    results.setdefault(batch, set()).add(step)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(b,)) for b in batches for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(results, {b: {expected[b]} for b in batches})

    def test_the_gil_is_released_while_simulating(self):
        # The main thread sleeps 10 ms into a worker's long call, then needs the GIL to wake up.
        # Released, it wakes during the call; held, only once the simulations have finished.
        # One call of 72 PaLM configs on one thread: a single config simulates in milliseconds.
        sweep = {"schema": "podsim.sweep/v1",
                 "base": str(ROOT / "configs" / "palm-540b-2x3072.yaml"),
                 "axes": {"runtime.prefetch_depth": [1, 2, 3, 4],
                          "runtime.async_collectives": [True, False],
                          "training.remat": ["full", "save_dots", "minimal"],
                          "training.microbatches": [1, 2, 4]}}
        seen = []
        for _attempt in range(3):
            calling = threading.Event()
            span = {}

            def work():
                calling.set()
                span["start"] = time.monotonic()
                podsim.sweep(sweep, jobs=1)
                span["end"] = time.monotonic()

            worker = threading.Thread(target=work)
            worker.start()
            calling.wait()
            time.sleep(0.01)
            woke = time.monotonic()
            worker.join()
            seen.append((woke - span["start"], span["end"] - span["start"]))
            if woke - span["start"] < 0.5 * (span["end"] - span["start"]):
                return
        self.fail(f"the main thread woke only after the call (woke after, call took, in s): {seen}")


if __name__ == "__main__":
    unittest.main()


class HloTest(unittest.TestCase):
    TINY = ROOT / "tests" / "data" / "xla-truth" / "hlo" / "tiny-minimal-dot.hlo.txt.gz"

    def test_run_hlo_path_or_text(self):
        from_path = podsim.run_hlo(self.TINY, topology="nvidia-h200")
        self.assertEqual(from_path["schema"], "podsim.report/v1")
        self.assertEqual(from_path["topology"], "nvidia-h200")
        self.assertGreater(from_path["hardware_flops_per_step"], 0)
        import gzip
        text = gzip.decompress(self.TINY.read_bytes()).decode()
        from_text = podsim.run_hlo(text, topology="nvidia-h200")
        self.assertEqual(from_text["step_time_s"], from_path["step_time_s"])
        self.assertEqual(from_text["memory"]["peak_bytes"], from_path["memory"]["peak_bytes"])
        if PODSIM:
            cli = subprocess.run([PODSIM, "run", str(self.TINY), "--topology", "nvidia-h200", "--format", "json"],
                                 check=True, capture_output=True, text=True).stdout
            self.assertEqual(from_path, json.loads(cli))
        report, chrome_trace = podsim.run_hlo(self.TINY, topology="nvidia-h200", trace=True)
        names = {e.get("name") for e in chrome_trace["traceEvents"]}
        self.assertIn("loop_convert_fusion.15", names)  # HLO instruction names

    def test_from_jax_takes_as_text_without_jax(self):
        import gzip
        text = gzip.decompress(self.TINY.read_bytes()).decode()

        class Compiled:  # what jax.stages.Compiled offers: as_text()
            def as_text(self):
                return text

        report = podsim.from_jax(Compiled(), topology="nvidia-h200", slice="1",
                                 model_flops=1e12)
        self.assertEqual(report, podsim.run_hlo(text, topology="nvidia-h200", model_flops=1e12))
        self.assertGreater(report["mfu"], 0)
        with self.assertRaises(TypeError):
            podsim.from_jax(object())
        self.assertNotIn("jax", __import__("sys").modules)

    def test_module_errors_carry_file_and_line(self):
        with self.assertRaises(podsim.ConfigError) as e:
            podsim.run_hlo("HloModule m\n\nENTRY %main () -> f32[] {\n  ROOT %c = f32[] konstant(1)\n}\n")
        self.assertEqual(e.exception.diagnostics[0]["line"], 4)
        self.assertIn("unknown opcode 'konstant'", str(e.exception))
        with self.assertRaises(podsim.ConfigError):
            podsim.run_hlo(self.TINY, topology="nvidia-h200", slice="2x2x4")

    def test_counts_are_whole_numbers(self):
        # int(1.5) used to run a batch of 1 without a word.
        with self.assertRaises(ValueError) as e:
            podsim.run_hlo(self.TINY, topology="nvidia-h200", model="gpt2-small", global_batch=1.5, seq_len=128)
        self.assertIn("global_batch must be a whole number, not 1.5", str(e.exception))
        with self.assertRaises(TypeError):
            podsim.run_hlo(self.TINY, topology="nvidia-h200", seq_len=True)
        with self.assertRaises(TypeError):
            podsim.run_hlo(self.TINY, topology="nvidia-h200", seq_len="128")
        # A whole number written as a float is that number.
        self.assertEqual(podsim.run_hlo(self.TINY, topology="nvidia-h200", model="gpt2-small", global_batch=2.0, seq_len=128),
                         podsim.run_hlo(self.TINY, topology="nvidia-h200", model="gpt2-small", global_batch=2, seq_len=128))
