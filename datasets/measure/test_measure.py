#!/usr/bin/env python3
"""Self-test of the measurement harness's pure parts: runs without torch or a GPU.

    python3 datasets/measure/test_measure.py

Covers the dry run, the grid definitions, the LoRA target-module mapping, the HF config key
mapping, the CSV header and row shapes, and resuming an output file. The GPU side
(measure_worker.py) is exercised only by a real run.
"""

import csv
import io
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import catalog  # noqa: E402
import grids    # noqa: E402
import measure  # noqa: E402

MEASURE = str(HERE / "measure.py")
REAL_CATALOG = HERE.parent / "models.csv"

# Rows copied from datasets/models.csv (the catalog may change; these must not).
FIXTURE = """\
model,model_type,layers,hidden,heads,kv_heads,head_dim,intermediate,vocab,max_pos,pos_offset,emb_dim,norms_per_layer,norm,mlp,pos_emb,tied,qkv_bias,o_bias,mlp_bias,lm_head_bias,emb_norm,fused_qkv,fused_gate_up,logits_fp32,params,source
facebook/opt-350m,opt,24,1024,16,16,64,4096,50272,2048,2,512,2,layernorm,plain,learned,1,1,1,1,0,0,0,0,0,331196416,x
facebook/opt-1.3b,opt,24,2048,32,32,64,8192,50272,2048,2,0,2,layernorm,plain,learned,1,1,1,1,0,0,0,0,0,1315758080,x
bigscience/bloom-560m,bloom,24,1024,16,16,64,4096,250880,2048,0,0,2,layernorm,plain,alibi,1,1,1,1,0,1,1,0,0,559214592,x
google/gemma-2-2b,gemma2,26,2304,8,4,256,9216,256000,8192,0,0,4,rmsnorm,gated,rotary,1,0,0,0,0,0,0,0,0,2614341888,x
gpt2,gpt2,12,768,12,12,64,3072,50257,1024,0,0,2,layernorm,plain,learned,1,1,1,1,0,0,1,0,0,124439808,x
meta-llama/Llama-3.2-1B,llama,16,2048,32,8,64,8192,128256,131072,0,0,2,rmsnorm,gated,rotary,1,0,0,0,0,0,0,0,0,1235814400,x
Qwen/Qwen2.5-0.5B,qwen2,24,896,14,2,64,4864,151936,32768,0,0,2,rmsnorm,gated,rotary,1,1,0,0,0,0,0,0,0,494032768,x
microsoft/Phi-3-mini-4k-instruct,phi3,32,3072,32,32,96,8192,32064,4096,0,0,2,rmsnorm,gated,rotary,0,0,0,0,0,0,1,1,0,3821079552,x
tiiuae/falcon-7b,falcon,32,4544,71,1,64,18176,65024,2048,0,0,1,layernorm,plain,rotary,1,0,0,0,0,0,1,0,0,6921720704,x
stabilityai/stablelm-base-alpha-3b,gpt_neox,16,4096,32,32,128,16384,50688,4096,0,0,2,layernorm,plain,rotary,0,1,1,1,0,0,1,0,0,3637321728,x
EleutherAI/gpt-neo-1.3B,gpt_neo,24,2048,16,16,128,8192,50257,2048,0,0,2,layernorm,plain,learned,1,0,1,1,0,0,0,0,1,1315575808,x
Salesforce/codegen-350M-nl,codegen,20,1024,16,16,64,4096,51200,2048,0,0,1,layernorm,plain,rotary,0,0,0,1,1,0,1,0,1,356712448,x
bigcode/gpt_bigcode-santacoder,gpt_bigcode,24,2048,16,1,128,8192,49280,2048,0,0,2,layernorm,plain,learned,1,1,1,1,0,0,1,0,0,1124886528,x
"""


def run_cli(*args):
    return subprocess.run([sys.executable, MEASURE, *args], capture_output=True, text=True,
                          timeout=120)


class Fixture(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.models_csv = os.path.join(cls.tmp.name, "models.csv")
        with open(cls.models_csv, "w", encoding="utf-8") as f:
            f.write(FIXTURE)
        cls.models = catalog.load_models(cls.models_csv)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def row(self, name):
        return catalog.find_model(self.models, name)


class TestImports(unittest.TestCase):
    def test_no_torch_at_import(self):
        code = ("import sys; sys.path.insert(0, %r); import measure, catalog, grids; "
                "print(sorted(m for m in ('torch', 'transformers', 'peft', 'bitsandbytes') "
                "if m in sys.modules))" % str(HERE))
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "[]")


class TestDryRun(Fixture):
    def test_smoke_grid(self):
        out = os.path.join(self.tmp.name, "out", "never.csv")
        p = run_cli("--dry-run", "--grid", "smoke", "--models-csv", self.models_csv, "--out", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.strip().splitlines()
        n = len(grids.GRIDS["smoke"])
        self.assertEqual(len(lines), n + 1)
        for i, line in enumerate(lines[:n]):
            self.assertTrue(line.startswith(f"smoke-{i:02d}  Qwen/Qwen2.5-0.5B "), line)
        self.assertIn(f"{n} configurations in grid smoke", lines[-1])
        self.assertIn("needs bitsandbytes", p.stdout)       # the qlora point
        self.assertFalse(os.path.exists(os.path.dirname(out)), "dry run wrote something")

    def test_default_grid(self):
        p = run_cli("--dry-run", "--models-csv", self.models_csv)
        self.assertEqual(p.returncode, 0, p.stderr)
        n = len(grids.GRIDS[grids.DEFAULT_GRID])
        self.assertIn(f"{n} configurations in grid {grids.DEFAULT_GRID}", p.stdout)
        ids = [ln.split()[0] for ln in p.stdout.splitlines() if ln.startswith(grids.DEFAULT_GRID)]
        self.assertEqual(len(ids), n)
        self.assertEqual(len(set(ids)), n)

    def test_without_catalog(self):
        p = run_cli("--dry-run", "--grid", "smoke", "--models-csv",
                    os.path.join(self.tmp.name, "missing.csv"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("note: cannot read", p.stdout)

    def test_only(self):
        p = run_cli("--dry-run", "--grid", "h100-30min", "--only", "falcon|opt-1\\.3b",
                    "--models-csv", self.models_csv)
        self.assertEqual(p.returncode, 0, p.stderr)
        body = [ln for ln in p.stdout.splitlines() if ln.startswith("h100-30min")]
        expect = sum(1 for c in grids.GRIDS["h100-30min"]
                     if "falcon" in c["model"] or "opt-1.3b" in c["model"])
        self.assertEqual(len(body), expect)
        self.assertGreater(expect, 0)

    def test_list_grids_and_errors(self):
        p = run_cli("--list-grids")
        self.assertEqual(p.returncode, 0)
        for name in grids.GRIDS:
            self.assertIn(name, p.stdout)
        self.assertEqual(run_cli("--dry-run", "--grid", "nope").returncode, 2)
        self.assertEqual(run_cli("--dry-run", "--only", "(").returncode, 2)

    def test_real_run_needs_catalog(self):
        p = run_cli("--grid", "smoke", "--models-csv", os.path.join(self.tmp.name, "no.csv"),
                    "--out", os.path.join(self.tmp.name, "x.csv"))
        self.assertEqual(p.returncode, 3)


class TestGrids(Fixture):
    def test_measured_ids_keep_their_configurations(self):
        """A committed measurement's id still names the configuration it measured: grids
        grow at their end or after their measured prefix, never by renumbering it (a resumed
        lease skips by these keys)."""
        files = sorted((HERE.parent / "measured").glob("h[12]00-*.csv"))
        self.assertTrue(files)
        for path in files:
            with open(path, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    grid, _, index = row["id"].rpartition("-")
                    cfg = grids.GRIDS[grid][int(index)]
                    self.assertEqual(measure.config_key(cfg, row["id"]), measure.row_key(row),
                                     f"{path.name}: {row['id']}")

    def test_all_configs_valid(self):
        for name, configs in grids.GRIDS.items():
            for i, cfg in enumerate(configs):
                self.assertEqual(measure.validate_config(cfg), [], f"{name}-{i:02d}")

    def test_default_grid_covers_issue_11(self):
        """What issue 11 asks the grid to cover, and that every entry is valid."""
        g = grids.GRIDS[grids.DEFAULT_GRID]
        self.assertTrue(35 <= len(g) <= 70, len(g))
        self.assertEqual([measure.validate_config(c) for c in g], [[]] * len(g))
        def vals(key):
            return {c.get(key) for c in g}
        self.assertLessEqual({"bf16", "bf16-pure"}, vals("precision"))
        self.assertLessEqual({"full", "lora"}, vals("finetune"))
        self.assertEqual({"on", "off"}, vals("grad_ckpt"))
        self.assertEqual({"sdpa", "eager"}, vals("attention"))
        self.assertEqual({"packed", "variable"}, vals("data"))
        self.assertEqual({"default", "expandable"}, vals("alloc_conf"))
        self.assertEqual({"loop", "trainer"}, vals("runner"))
        self.assertLessEqual({"adamw", "sgd"}, vals("optimizer"))
        self.assertTrue(any("fused" in c["features"] for c in g))
        self.assertTrue(any(c["optimizer"] == "adamw" and not c["features"] for c in g))
        self.assertEqual({"single", "cdp", "adp", "tp"}, vals("method"))
        self.assertLessEqual({2, 4, 8}, {c["gpus"] for c in g if c["method"] != "single"})
        self.assertGreaterEqual(sum(bool(c["snapshot"]) for c in g), 3)
        qwen = {c["model"] for c in g if c["model"].startswith("Qwen/Qwen2.5")}
        llama = {c["model"] for c in g if c["model"].startswith("meta-llama/")}
        self.assertGreaterEqual(len(qwen), 3)  # three sizes of one family
        self.assertGreaterEqual(len(llama), 1)  # and a second vocabulary
        # micro-batch x sequence at equal tokens, each both packed and variable
        shapes = {(c["micro_batch"], c["seq_len"], c["data"]) for c in g
                  if c["model"] == grids.Q15 and c["runner"] == "loop"}
        for b, s in ((1, 4096), (2, 2048), (4, 1024), (8, 512)):
            self.assertIn((b, s, "packed"), shapes)
            self.assertIn((b, s, "variable"), shapes)

    def test_validate_layout_rejects(self):
        good = grids.c("gpt2")
        for bad in (dict(good, method="zero9"), dict(good, method="adp", gpus=1),
                    dict(good, gpus=4), dict(good, data="ragged"),
                    dict(good, alloc_conf="huge"), dict(good, runner="deepspeed"),
                    dict(good, method="adp", gpus=2, runner="trainer"),
                    dict(grids.c("gpt2", finetune="lora"), method="tp", gpus=2),
                    dict(good, method="tp", gpus=2, snapshot=True),
                    dict(good, snapshot=True, steps=1),
                    dict(good, features=["cpu-init"]),
                    grids.c("gpt2", "bf16", "qlora", method="fsdp1", gpus=2,
                            features=["cpu-init"])):
            self.assertNotEqual(measure.validate_config(bad), [], bad)
        self.assertEqual(measure.validate_config(
            grids.c("gpt2", method="fsdp1", gpus=2, features=["cpu-init"])), [])
        row = {"model_type": "llama", "heads": 32, "kv_heads": 8, "pos_emb": "rope",
               "max_pos": 0}
        tp = grids.c("x", method="tp", gpus=8)
        self.assertEqual(measure.check_against_catalog(tp, row), [])
        self.assertNotEqual(measure.check_against_catalog(dict(tp, gpus=16), row), [])
        self.assertNotEqual(measure.check_against_catalog(tp, dict(row, model_type="gpt2")), [])

    def test_variable_and_fake_pg_rows(self):
        res = {"status": "ok", "peak_allocated": 1 << 30, "peak_reserved": 2 << 30,
               "peak_device": 3 << 30, "phase_loss": 1 << 30, "tokens_per_s": 1234.4}
        var = grids.c("gpt2", data="variable", alloc="expandable")
        r = measure.rows_for_result(var, "x-00", res, {})[0]
        self.assertEqual((r["seq_kind"], r["data"], r["alloc_conf"], r["peak_loss_gib"],
                          r["tokens_per_s_gpu"]), ("cap", "variable", "expandable", "1.0000", "1234"))
        self.assertEqual(var["steps"], 30)
        fsdp = grids.c("gpt2", method="adp", gpus=4, runner="loop", features=["fused"])
        r = measure.rows_for_result(fsdp, "x-01", res, {})[0]
        self.assertEqual((r["method"], r["gpus"], r["tp"], r["features"], r["tokens_per_s_gpu"]),
                         ("adp", 4, 1, "fused+fsdp-mp+fsdp-fp32-reduce+fake-pg", ""))
        tp = grids.c("gpt2", method="tp", gpus=2, runner="trainer")
        r = measure.rows_for_result(dict(tp, runner="trainer"), "x-02", res, {})[0]
        # Trainer's optim="adamw_torch" (foreach) against stack hf's fused default
        self.assertEqual((r["tp"], r["features"]), (2, "unfused-adamw+fake-pg+hf-trainer"))
        self.assertNotEqual(measure.config_key(var, "x"), measure.config_key(grids.c("gpt2"), "x"))
        # a k-bit base: prepared only when the grid says kbit-prep
        q = grids.c("gpt2", finetune="qlora")
        self.assertIn("no-kbit-prep", measure.rows_for_result(q, "x-03", res, {})[0]["features"])
        q = grids.c("gpt2", finetune="qlora", features=["kbit-prep"])
        self.assertNotIn("no-kbit-prep", measure.rows_for_result(q, "x-04", res, {})[0]["features"])

    def test_child_env_alloc_conf(self):
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "max_split_size_mb:64"
        try:
            self.assertNotIn("PYTORCH_CUDA_ALLOC_CONF", measure.child_env(grids.c("gpt2")))
            env = measure.child_env(grids.c("gpt2", alloc="expandable"))
            self.assertEqual(env["PYTORCH_CUDA_ALLOC_CONF"], "expandable_segments:True")
        finally:
            del os.environ["PYTORCH_CUDA_ALLOC_CONF"]

    def test_old_grid_spread(self):
        g = grids.GRIDS["h100-30min"]
        self.assertTrue(35 <= len(g) <= 70, len(g))
        for key in ("precision", "finetune", "grad_ckpt", "optimizer", "attention"):
            values = {c[key] for c in g}
            want = {"precision": set(grids.PRECISIONS), "finetune": set(grids.FINETUNES),
                    "grad_ckpt": {"on", "off"}, "optimizer": set(grids.OPTIMIZERS),
                    "attention": set(grids.ATTENTIONS)}[key]
            self.assertEqual(values, want, key)
        self.assertGreaterEqual(len({c["model"] for c in g}), 8)
        self.assertTrue(all(c["steps"] == 3 for c in g))

    def test_validate_rejects(self):
        good = grids.c("gpt2")
        self.assertEqual(measure.validate_config(good), [])
        for bad in (dict(good, precision="fp8"), dict(good, quant="nf4"),
                    dict(good, micro_batch=0), dict(good, features=["turbo"]),
                    grids.c("gpt2", finetune="lora", targets="q+x"),
                    dict(grids.c("gpt2", finetune="qlora"), quant="int8")):
            self.assertNotEqual(measure.validate_config(bad), [], bad)

    def test_grid_models_in_real_catalog(self):
        if not REAL_CATALOG.exists():
            self.skipTest("datasets/models.csv not present")
        models = catalog.load_models(REAL_CATALOG)
        for name, configs in grids.GRIDS.items():
            for i, cfg in enumerate(configs):
                row = catalog.find_model(models, cfg["model"])
                self.assertIsNotNone(row, f"{name}-{i:02d}: {cfg['model']}")
                self.assertEqual(measure.check_against_catalog(cfg, row), [], f"{name}-{i:02d}")
                catalog.hf_config_kwargs(row)  # every model maps to a config

    def test_learned_positions_checked(self):
        cfg = grids.c("gpt2", seq=2048)
        self.assertTrue(measure.check_against_catalog(cfg, self.row("gpt2")))


class TestLoraTargets(unittest.TestCase):
    def m(self, t, spec):
        return catalog.lora_target_modules(t, spec)

    def test_llama_like(self):
        self.assertEqual(self.m("llama", "attn"), ["q_proj", "k_proj", "v_proj", "o_proj"])
        self.assertEqual(self.m("qwen2", "all"), ["q_proj", "k_proj", "v_proj", "o_proj",
                                                  "gate_proj", "up_proj", "down_proj"])
        self.assertEqual(self.m("mistral", "q+v"), ["q_proj", "v_proj"])
        self.assertEqual(self.m("gemma2", "mlp"), ["gate_proj", "up_proj", "down_proj"])

    def test_fused(self):
        self.assertEqual(self.m("phi3", "q+v"), ["qkv_proj"])
        self.assertEqual(self.m("phi3", "all"), ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"])
        self.assertEqual(self.m("falcon", "attn"), ["query_key_value", "dense"])
        self.assertEqual(self.m("bloom", "all"),
                         ["query_key_value", "dense", "dense_h_to_4h", "dense_4h_to_h"])
        self.assertEqual(self.m("gpt_neox", "k"), ["query_key_value"])

    def test_shared_leaf_names(self):
        self.assertEqual(self.m("gpt2", "all"), ["c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"])
        self.assertEqual(self.m("gpt_bigcode", "o+down"), ["attn.c_proj", "mlp.c_proj"])
        self.assertEqual(self.m("codegen", "attn"), ["qkv_proj", "out_proj"])

    def test_plain_mlp(self):
        self.assertEqual(self.m("opt", "mlp"), ["fc1", "fc2"])   # a group skips the gate
        with self.assertRaises(ValueError):
            self.m("opt", "gate")                                # an explicit list does not
        self.assertEqual(self.m("phi", "o+up+down"), ["dense", "fc1", "fc2"])

    def test_bad_specs(self):
        for spec in ("", "q+x", "lm_head"):
            with self.assertRaises(ValueError):
                self.m("llama", spec)
        with self.assertRaises(ValueError):
            self.m("t5", "attn")
        self.assertEqual(catalog.parse_targets("Q,V"), (["q", "v"], True))

    def test_every_supported_type_has_names(self):
        for t in catalog.SUPPORTED_TYPES:
            self.assertTrue(self.m(t, "all"), t)


class TestConfigKwargs(Fixture):
    def kw(self, name):
        return catalog.hf_config_kwargs(self.row(name))

    def test_llama(self):
        kw = self.kw("meta-llama/Llama-3.2-1B")
        self.assertEqual(kw["num_hidden_layers"], 16)
        self.assertEqual(kw["hidden_size"], 2048)
        self.assertEqual(kw["num_attention_heads"], 32)
        self.assertEqual(kw["num_key_value_heads"], 8)
        self.assertEqual(kw["head_dim"], 64)
        self.assertEqual(kw["intermediate_size"], 8192)
        self.assertEqual(kw["vocab_size"], 128256)
        self.assertIs(kw["tie_word_embeddings"], True)
        self.assertIs(kw["use_cache"], False)
        self.assertIs(kw["attention_bias"], False)

    def test_gemma2_head_dim(self):
        kw = self.kw("google/gemma-2-2b")
        self.assertEqual((kw["head_dim"], kw["query_pre_attn_scalar"]), (256, 256))
        self.assertEqual(kw["num_key_value_heads"], 4)

    def test_gpt2_names(self):
        kw = self.kw("gpt2")
        self.assertEqual((kw["n_embd"], kw["n_layer"], kw["n_head"], kw["n_inner"]),
                         (768, 12, 12, 3072))
        self.assertEqual(kw["n_positions"], 1024)
        self.assertNotIn("max_position_embeddings", kw)
        self.assertNotIn("hidden_size", kw)

    def test_opt(self):
        kw = self.kw("facebook/opt-350m")
        self.assertEqual((kw["ffn_dim"], kw["word_embed_proj_dim"]), (4096, 512))
        self.assertIs(kw["do_layer_norm_before"], False)
        self.assertIs(self.kw("facebook/opt-1.3b")["do_layer_norm_before"], True)

    def test_bloom(self):
        kw = self.kw("bloom-560m")
        self.assertEqual((kw["n_layer"], kw["n_head"], kw["hidden_size"]), (24, 16, 1024))
        self.assertNotIn("max_position_embeddings", kw)

    def test_falcon_multi_query(self):
        kw = self.kw("tiiuae/falcon-7b")
        self.assertIs(kw["multi_query"], True)
        self.assertIs(kw["new_decoder_architecture"], False)
        self.assertIs(kw["parallel_attn"], True)
        self.assertIs(kw["bias"], False)
        self.assertEqual(kw["ffn_hidden_size"], 18176)
        gqa = dict(self.row("tiiuae/falcon-7b"), kv_heads=8, heads=64, hidden=8192,
                   norms_per_layer=2)
        kw = catalog.hf_config_kwargs(gqa)
        self.assertIs(kw["new_decoder_architecture"], True)
        self.assertEqual((kw["num_kv_heads"], kw["num_ln_in_parallel_attn"]), (8, 2))

    def test_phi3_and_neox(self):
        kw = self.kw("microsoft/Phi-3-mini-4k-instruct")
        self.assertNotIn("head_dim", kw)
        self.assertEqual(kw["original_max_position_embeddings"], 4096)
        kw = self.kw("stabilityai/stablelm-base-alpha-3b")
        self.assertEqual((kw["intermediate_size"], kw["attention_bias"]), (16384, True))
        self.assertIs(kw["tie_word_embeddings"], False)

    def test_gpt_neo_codegen_bigcode(self):
        kw = self.kw("EleutherAI/gpt-neo-1.3B")
        self.assertEqual((kw["num_layers"], kw["num_heads"]), (24, 16))
        self.assertEqual(kw["attention_types"], [[["global", "local"], 12]])
        odd = catalog.hf_config_kwargs(dict(self.row("EleutherAI/gpt-neo-1.3B"), layers=3))
        self.assertEqual(odd["attention_types"], [[["global"], 3]])
        kw = self.kw("Salesforce/codegen-350M-nl")
        self.assertEqual((kw["n_ctx"], kw["rotary_dim"]), (2048, 64))
        self.assertIs(self.kw("bigcode/gpt_bigcode-santacoder")["multi_query"], True)

    def test_unsupported_type(self):
        with self.assertRaises(catalog.CatalogError):
            catalog.hf_config_kwargs(dict(self.row("gpt2"), model_type="t5"))


class TestCatalog(Fixture):
    def test_parse(self):
        r = self.row("google/gemma-2-2b")
        self.assertEqual((r["layers"], r["head_dim"], r["norms_per_layer"]), (26, 256, 4))
        self.assertIs(r["tied"], True)
        self.assertEqual(r["emb_dim"], 2304)      # 0 in the file means "same as hidden"

    def test_find(self):
        self.assertEqual(self.row("Llama-3.2-1B")["model"], "meta-llama/Llama-3.2-1B")
        self.assertEqual(self.row("qwen/qwen2.5-0.5b")["model"], "Qwen/Qwen2.5-0.5B")
        self.assertIsNone(self.row("nobody/nothing"))
        models = dict(self.models)
        models["other/gpt2"] = dict(models["gpt2"], model="other/gpt2")
        with self.assertRaises(catalog.CatalogError):
            catalog.find_model(models, "x/gpt2")

    def test_bad_rows(self):
        head = FIXTURE.splitlines()[0]
        for body in ("gpt2,gpt2,12,768,12,12,64,3072,50257,1024,0,0,2,layernorm,plain,learned,"
                     "maybe,1,1,1,0,0,1,0,0,1,x",
                     "gpt2,gpt2,0,768,12,12,64,3072,50257,1024,0,0,2,layernorm,plain,learned,"
                     "1,1,1,1,0,0,1,0,0,1,x"):
            with self.assertRaises(catalog.CatalogError):
                catalog.parse_row(next(csv.DictReader(io.StringIO(head + "\n" + body + "\n"))))

    def test_params_from_name(self):
        self.assertAlmostEqual(catalog.params_from_name("bigscience/bloom-560m"), 0.56)
        self.assertAlmostEqual(catalog.params_from_name("Qwen/Qwen2.5-0.5B"), 0.5)
        self.assertAlmostEqual(catalog.params_from_name("meta-llama/Llama-3.1-8B"), 8.0)


class TestCsv(unittest.TestCase):
    CONTRACT = ("model,method,gpus,tp,micro_batch,seq_len,precision,finetune,lora_r,"
                "lora_targets,quant,grad_ckpt,optimizer,metric,measured_gib,gpu,framework,source")
    ENV = {"gpu": "H100-SXM-80GB", "framework": "torch 2 / transformers 5",
           "source": "datasets/measure"}

    def test_header(self):
        self.assertEqual(",".join(measure.CSV_COLUMNS[:18]), self.CONTRACT)
        self.assertEqual(measure.CSV_COLUMNS[18:], (
            "id", "grade", "stack", "features", "attention", "seq_kind", "notes",
            "peak_forward_gib", "peak_backward_gib", "peak_optimizer_gib", "context_gib",
            "status", "peak_loss_gib", "data", "alloc_conf", "tokens_per_s_gpu", "widths"))

    def test_widths_column(self):
        """A variable-length run's step widths leave the notes for their own column."""
        cfg = grids.c("Qwen/Qwen2.5-0.5B", "bf16", "lora", r=8, targets="q+v", mb=2, seq=256,
                      data="variable")
        res = {"status": "ok", "peak_allocated": 1 << 30, "peak_reserved": 1 << 30,
               "peak_device": 1 << 30, "notes": ["data=variable", "widths=200/17/256"]}
        rows = measure.rows_for_result(cfg, "t-00", res, self.ENV)
        self.assertEqual({r["widths"] for r in rows}, {"200/17/256"})
        rows = measure.rows_for_result(dict(cfg, data="packed"), "t-01",
                                       dict(res, notes=["data=packed"]), self.ENV)
        self.assertEqual({r["widths"] for r in rows}, {""})

    def test_ok_rows(self):
        cfg = grids.c("Qwen/Qwen2.5-0.5B", "bf16", "lora", r=8, targets="q+v", mb=2, seq=256,
                      features=["paged"])
        g = 1 << 30
        res = {"status": "ok", "peak_allocated": 3 * g, "peak_reserved": 3.5 * g,
               "peak_device": 4 * g + 123456, "phase_forward": 2 * g, "phase_backward": 3 * g,
               "phase_optimizer": 2.5 * g, "context": g // 2, "notes": ["a=1", "b=2"],
               "tokens_per_s": 1234.4}
        rows = measure.rows_for_result(cfg, "smoke-02", res, self.ENV)
        self.assertEqual([r["metric"] for r in rows], ["allocated", "reserved", "device"])
        # one speed per configuration, on its first row
        self.assertEqual([r["tokens_per_s_gpu"] for r in rows], ["1234", "", ""])
        self.assertEqual([r["measured_gib"] for r in rows], ["3.0000", "3.5000", "4.0001"])
        r = rows[0]
        self.assertEqual(set(r), set(measure.CSV_COLUMNS))
        self.assertEqual((r["method"], r["gpus"], r["tp"], r["grade"], r["stack"], r["seq_kind"]),
                         ("single", 1, 1, "A", "hf", "exact"))
        self.assertEqual((r["lora_r"], r["lora_targets"], r["features"]), (8, "q+v", "paged"))
        self.assertEqual((r["peak_forward_gib"], r["context_gib"]), ("2.0000", "0.5000"))
        self.assertEqual((r["notes"], r["status"], r["id"]), ("a=1; b=2", "ok", "smoke-02"))

    def test_failed_rows(self):
        cfg = grids.c("gpt2", "fp32")
        for status in ("oom", "error:ValueError", "skipped: bitsandbytes missing"):
            rows = measure.rows_for_result(cfg, "g-00", {"status": status, "notes": []}, self.ENV)
            self.assertEqual(len(rows), 1)
            self.assertEqual((rows[0]["metric"], rows[0]["measured_gib"], rows[0]["status"]),
                             ("device", "", status))
            self.assertEqual((rows[0]["lora_r"], rows[0]["lora_targets"]), ("", ""))

    def test_gpu_names(self):
        self.assertEqual(measure.gpu_short_name("NVIDIA H100 80GB HBM3"), "H100-SXM-80GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA H100 PCIe"), "H100-PCIe-80GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA H200"), "H200-SXM-141GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA A100-SXM4-40GB"), "A100-SXM-40GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA A100-SXM4-80GB"), "A100-SXM-80GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA A100 80GB PCIe"), "A100-PCIe-80GB")
        self.assertEqual(measure.gpu_short_name("Tesla V100-SXM2-32GB"), "V100-SXM2-32GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA L40S"), "L40S-48GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA L4"), "L4-24GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA A10G"), "A10G-24GB")
        self.assertEqual(measure.gpu_short_name("Tesla T4"), "T4-16GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA GeForce RTX 4090"), "RTX4090-24GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA RTX A6000"), "A6000-48GB")
        self.assertEqual(measure.gpu_short_name("NVIDIA B200"), "NVIDIA B200")
        gpus_csv = HERE.parent / "gpus.csv"
        if gpus_csv.exists():  # the names must be datasets/gpus.csv keys
            with open(gpus_csv, newline="", encoding="utf-8") as f:
                r = csv.DictReader(f)
                known = {row["gpu"] for row in r} if "gpu" in (r.fieldnames or ()) else set()
            for raw in ("NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA L4", "Tesla T4",
                        "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 3090", "NVIDIA A10G"):
                if known:
                    self.assertIn(measure.gpu_short_name(raw), known, raw)

    def test_framework_string(self):
        s = measure.framework_string({"torch": "2.11.0", "transformers": "5.17.0",
                                      "peft": "0.18.0", "bnb": None, "cuda": "13.0"})
        self.assertEqual(s, "torch 2.11.0 / transformers 5.17.0 / peft 0.18.0 / bnb none / CUDA 13.0")

    def test_resume(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "sub" / "m.csv"
            ok_cfg, bad_cfg = grids.c("gpt2"), grids.c("gpt2", mb=2)
            f, w, done = measure.open_output(path, redo=False)
            self.assertEqual(done, set())
            for r in (measure.rows_for_result(ok_cfg, "g-00", {"status": "ok", "peak_allocated": 1,
                                                                "peak_reserved": 2,
                                                                "peak_device": 3}, self.ENV)
                      + measure.rows_for_result(bad_cfg, "g-01", {"status": "error:X"}, self.ENV)):
                w.writerow(r)
            f.close()
            f, w, done = measure.open_output(path, redo=False)
            f.close()
            self.assertEqual(done, {measure.config_key(ok_cfg, "g-00")})
            with open(path, newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
            self.assertEqual([r["status"] for r in rows], ["ok"] * 3)  # the error row is gone
            self.assertEqual(os.listdir(path.parent), ["m.csv"])         # no temporary left


# A stand-in for measure_worker.py: same entry points, no torch. Its behaviour per smoke-grid
# configuration covers every way a worker can end.
FAKE_WORKER = '''
import os, sys, time
G = 1 << 30
def probe():
    return {"gpu_name": "NVIDIA H100 80GB HBM3", "total_bytes": 80 * G,
            "versions": {"torch": "9.9", "transformers": "8.8", "peft": "7.7", "bnb": None,
                         "cuda": "13.0"}}
def run_job(job):
    cfg = job["config"]
    assert job["model_row"]["model_type"] == "qwen2"
    if os.environ.get("FAKE_SLEEP"):
        time.sleep(float(os.environ["FAKE_SLEEP"]))
    if cfg["precision"] == "fp16":
        return {"status": "oom", "notes": ["oom in step 1 backward"]}
    if cfg["optimizer"] == "sgd":
        sys.stdout.flush()
        os._exit(9)                       # a crash Python cannot report
    print("some library chatter on stdout")
    res = {"status": "ok", "peak_allocated": 2 * G, "peak_reserved": 3 * G,
           "peak_device": 4 * G, "phase_forward": G, "phase_backward": 2 * G,
           "phase_optimizer": G, "context": G // 2,
           "notes": ["fake", "alloc=" + os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "none")]}
    if cfg.get("snapshot"):
        res["snapshot"] = "live tensors of " + job["id"] + "\\n"
    return res
'''


class TestSnapshotSummary(unittest.TestCase):
    """The join of allocator blocks and tensor records, on a hand-made capture."""

    def test_join_and_order(self):
        import snapshot_summary as ss
        M = 1 << 20
        site = "/x/site-packages/"
        cap = {"allocated": 10 * 1024 * M, "max_allocated": 11 * 1024 * M,
               "tensors": [
                   {"ptr": 100, "nbytes": 64 * M, "shape": [4, 1024, 4096], "dtype": "float32",
                    "op": "_to_copy", "role": ""},
                   {"ptr": 200, "nbytes": 8 * M, "shape": [1024, 2048], "dtype": "bfloat16",
                    "op": "", "role": "parameter"},
                   {"ptr": 300, "nbytes": 8 * M, "shape": [1024, 2048], "dtype": "bfloat16",
                    "op": "mm", "role": "gradient"},
                   {"ptr": 400, "nbytes": 2 * M, "shape": [4, 128], "dtype": "float32",
                    "op": "_log_softmax", "role": ""}],
               "blocks": [
                   {"address": 100, "size": 64 * M,
                    "frames": [site + "torch/_tensor.py:1 f",
                               site + "transformers/loss/loss_utils.py:30 fixed_cross_entropy"]},
                   {"address": 200, "size": 8 * M, "frames": []},
                   {"address": 300, "size": 8 * M, "frames": []},
                   {"address": 999, "size": 32 * M, "frames": ["/a/cublas.py:5 workspace"]}]}
        text = ss.summarize(cap, "# title", top=1)
        lines = text.splitlines()
        self.assertEqual(lines[0], "# title")
        self.assertIn("10.000 GiB", lines[1])
        self.assertIn("11.000 GiB", lines[1])
        self.assertIn("live tensors with a record: 4", lines[2])
        self.assertIn("allocator blocks without one: 1, 0.031 GiB", lines[2])
        body = lines[5:]
        # the largest listed tensor, with the frame in transformers (not torch/_tensor.py)
        self.assertIn("4x1024x4096 float32 from aten._to_copy at "
                      "transformers/loss/loss_utils.py:30 fixed_cross_entropy", text)
        self.assertIn("4x1024x4096", body[0])  # largest first, groups among the tensors
        self.assertEqual(body[1:3], ["       8.0      1  gradients", "       8.0      1  parameters"])
        # top=1: the log-softmax tensor is counted, not listed (it had no block: no history)
        self.assertIn("2.0      1  other tensors", text)
        self.assertIn("32.0      1  (no tensor record) at /a/cublas.py:5 workspace", text)

    def test_pick_frame(self):
        import snapshot_summary as ss
        self.assertEqual(ss.pick_frame(["a.py:1 x", "/p/peft/tuners/lora.py:9 forward"]),
                         "/p/peft/tuners/lora.py:9 forward")
        self.assertEqual(ss.pick_frame(["a.py:1 x"]), "a.py:1 x")
        self.assertEqual(ss.pick_frame([]), "")


class TestRealRunWithFakeWorker(Fixture):
    def run_grid(self, out, *extra, env_extra=None):
        env = dict(os.environ, LLMEM_MEASURE_WORKER="fake_worker",
                   PYTHONPATH=self.tmp.name, **(env_extra or {}))
        return subprocess.run([sys.executable, MEASURE, "--grid", "smoke", "--models-csv",
                               self.models_csv, "--out", out, *extra],
                              capture_output=True, text=True, timeout=120, env=env)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with open(os.path.join(cls.tmp.name, "fake_worker.py"), "w", encoding="utf-8") as f:
            f.write(FAKE_WORKER)

    def read(self, path):
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    def test_grid_and_resume(self):
        out = os.path.join(self.tmp.name, "run", "smoke.csv")
        p = self.run_grid(out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        rows = self.read(out)
        by_id = {}
        for r in rows:
            by_id.setdefault(r["id"], []).append(r)
        self.assertEqual(sorted(by_id), [f"smoke-{i:02d}" for i in range(11)])
        self.assertIn("alloc=expandable_segments:True", by_id["smoke-06"][0]["notes"])
        self.assertIn("alloc=none", by_id["smoke-05"][0]["notes"])
        self.assertEqual((by_id["smoke-08"][0]["method"], by_id["smoke-08"][0]["gpus"]), ("adp", "2"))
        snap = os.path.join(self.tmp.name, "run", "smoke-snapshots", "smoke-07.txt")
        with open(snap, encoding="utf-8") as f:
            self.assertEqual(f.read(), "live tensors of smoke-07\n")
        self.assertFalse(os.path.exists(snap.replace("smoke-07", "smoke-06")))
        self.assertEqual([r["metric"] for r in by_id["smoke-00"]], ["allocated", "reserved", "device"])
        self.assertEqual([r["measured_gib"] for r in by_id["smoke-00"]], ["2.0000", "3.0000", "4.0000"])
        self.assertEqual(by_id["smoke-00"][0]["gpu"], "H100-SXM-80GB")
        self.assertEqual(by_id["smoke-00"][0]["framework"],
                         "torch 9.9 / transformers 8.8 / peft 7.7 / bnb none / CUDA 13.0")
        self.assertEqual(by_id["smoke-00"][0]["source"], "datasets/measure")
        self.assertEqual(by_id["smoke-01"][0]["status"], "oom")
        self.assertEqual(by_id["smoke-02"][0]["lora_targets"], "q+v")
        self.assertEqual(by_id["smoke-03"][0]["status"], "error:crash-9")
        self.assertEqual(by_id["smoke-04"][0]["status"], "skipped: bitsandbytes missing")
        self.assertTrue(os.path.exists(out + ".log"))

        # Re-running resumes: ok/oom rows stay, the crash and the skip are retried once more.
        p = self.run_grid(out)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertIn("9 already done", p.stdout)
        again = self.read(out)
        self.assertEqual(len(again), len(rows))
        self.assertEqual([r["id"] for r in again][-2:], ["smoke-03", "smoke-04"])

    def test_timeout_and_only(self):
        out = os.path.join(self.tmp.name, "timeout.csv")
        p = self.run_grid(out, "--only", "smoke-00", "--timeout", "1",
                          env_extra={"FAKE_SLEEP": "5"})
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        rows = self.read(out)
        self.assertEqual([(r["id"], r["status"]) for r in rows], [("smoke-00", "error:timeout")])

    def test_hard_stop(self):
        """--stop-minutes kills the worker still running at the stop and starts no other."""
        out = os.path.join(self.tmp.name, "stop.csv")
        t0 = time.time()
        p = self.run_grid(out, "--only", "smoke-0[05]", "--stop-minutes", "0.15",
                          env_extra={"FAKE_SLEEP": "30"})
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        self.assertLess(time.time() - t0, 25)
        rows = self.read(out)
        self.assertEqual([(r["id"], r["status"]) for r in rows], [("smoke-00", "error:timeout")])
        self.assertIn("hard stop of 0.15 min reached", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=1)
