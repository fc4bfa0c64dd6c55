#!/usr/bin/env python3
"""Config and command-line fuzzer for the `spsim` CLI (Python 3.11, standard library only).

What it does
  Takes every config under configs/checks, configs/experiments and configs/runs as a seed (plus
  sections from configs/models, configs/clusters and configs/hardware), mutates it (deleted keys at any
  depth, swapped value types, extreme numbers, raw NaN/Infinity tokens, truncated / empty / non-UTF-8
  files, 10^4..10^5-deep nesting, 1 MB strings, unknown and duplicate keys, wrong preset / strategy /
  option names, empty and huge sweeps, sections swapped between configs, control and unicode characters)
  and feeds it to `check`, `check --json`, `simulate --json`, `simulate --cluster dgx-h100|FILE`,
  `compare --json --jobs 2` (and odd `--jobs` / `--baseline` values); it also feeds `collective` odd
  arguments. Every case is deterministic from --seed and the case number.

  A case FAILS when the child is killed by a signal, exits with a code other than 0 (ok), 1 (a gradient
  check failed) or 2 (bad input), runs past --timeout, prints "terminate called", "internal error",
  "Assertion", "AddressSanitizer", "runtime error:" or "Segmentation" on stderr, or exits 2 without a
  message starting with "spsim: error:". Each child runs with RLIMIT_AS = --max-memory-gb (default 4) and
  no core dumps. Failures are grouped by signature and category:
    crash                  signal, exit 3 or a crash pattern on stderr
    resource               killed / std::bad_alloc / timeout
    message                exit 2 without an "spsim: error:" line (e.g. CLI11's own parse errors)
  A `compare` past the timeout on a sweep of 100 or more points is a warning (each point is a whole
  simulation), not a failure. Any other simulate / compare / collective case past the timeout runs once
  more with --slow-factor (6) times the timeout: one that then finishes is slow, not hung (simulation
  speed of a large valid config), and is judged on that run and listed as a warning; one the budget ends
  during that second run is unfinished.
  `check` does real math: a case it would compute on for minutes (more than --max-check-flops, and small
  enough in memory that spsim rightly runs it) is skipped and counted; big-memory checks are run, and
  spsim must refuse them at once with its memory estimate.
  Invalid JSON from a `--json` command is reported as a warning (a failure with --strict-output). A case
  still running when the budget (+ --grace) ends is stopped and counted as unfinished, not as a failure.

  Every failing case is saved under --out/<signature>/case-<n>/ (at most --max-saved-per-signature per
  signature) with its config file(s), command.txt (the exact argv, shell-quoted, run from that folder),
  argv.json, stdout, stderr and reason.txt. `--replay DIR` re-runs saved cases: case folders (argv.json)
  and crasher files (<name>.cmd = one shell-quoted argument list with CONFIG standing for <name>.json and
  CLUSTER for <name>.cluster.json). Exit status: 0 no failure, 1 some failure, 2 bad usage.

How to run (from the repository root)
  60-second CI run on 2 cores:
    python3 tests/fuzz/fuzz_configs.py --spsim build/spsim --source-dir . --seconds 60 --seed 1 \
        --jobs 2 --out fuzz-out
  30-minute run:
    python3 tests/fuzz/fuzz_configs.py --spsim build/spsim --source-dir . --seconds 1800 \
        --seed "$RANDOM" --jobs 2 --out fuzz-out-long --max-memory-gb 4 --timeout 20
  Replay saved failures / the committed reproducers (regression test):
    python3 tests/fuzz/fuzz_configs.py --spsim build/spsim --source-dir . --replay fuzz-out
    python3 tests/fuzz/fuzz_configs.py --spsim build/spsim --source-dir . --replay tests/fuzz/crashers
"""

from __future__ import annotations

import argparse
import collections
import copy
import json
import math
import os
import random
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

GiB = 1 << 30
MiB = 1 << 20

FAIL_PATTERNS = ["terminate called", "internal error", "Assertion", "AddressSanitizer", "runtime error:",
                 "Segmentation"]
MEMORY_PATTERNS = ["bad_alloc", "Cannot allocate memory", "out of memory", "std::length_error",
                   "Resource temporarily unavailable", "failed to map", "mmap"]

# --------------------------------------------------------------------------------------------------
# JSON writer that can emit what Python's json module cannot: raw tokens and duplicate keys.


class Raw:
    """A JSON fragment written verbatim (NaN, Infinity, 1e400, 10^4-deep nesting, ...)."""
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self):
        return f"Raw({self.text[:40]!r}{'...' if len(self.text) > 40 else ''})"


class Dup:
    """A JSON object written from (key, value) pairs; keys may repeat."""
    __slots__ = ("pairs",)

    def __init__(self, pairs):
        self.pairs = list(pairs)


def _str_token(s: str, ascii_only: bool) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: only representable as \uXXXX escapes
        ascii_only = True
    return json.dumps(s, ensure_ascii=ascii_only)


def dumps(v, ascii_only=False, indent=False) -> str:
    out: list[str] = []
    sep = ",\n" if indent else ", "

    def rec(x):
        if isinstance(x, Raw):
            out.append(x.text)
        elif isinstance(x, (dict, Dup)):
            pairs = x.pairs if isinstance(x, Dup) else x.items()
            out.append("{")
            for i, (k, y) in enumerate(pairs):
                if i:
                    out.append(sep)
                out.append(_str_token(str(k), ascii_only))
                out.append(": ")
                rec(y)
            out.append("}")
        elif isinstance(x, list):
            out.append("[")
            for i, y in enumerate(x):
                if i:
                    out.append(", ")
                rec(y)
            out.append("]")
        elif x is True:
            out.append("true")
        elif x is False:
            out.append("false")
        elif x is None:
            out.append("null")
        elif isinstance(x, int):
            out.append(str(x))
        elif isinstance(x, float):
            if math.isnan(x):
                out.append("NaN")
            elif math.isinf(x):
                out.append("Infinity" if x > 0 else "-Infinity")
            else:
                out.append(repr(x))
        elif isinstance(x, str):
            out.append(_str_token(x, ascii_only))
        else:
            out.append(_str_token(str(x), ascii_only))

    rec(v)
    return "".join(out)


def walk(obj, path=()):
    """Yield (path, value) for every node; Raw and Dup are leaves."""
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from walk(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from walk(v, path + (i,))


def get_at(root, path):
    for p in path:
        root = root[p]
    return root


def set_at(root, path, value):
    if not path:
        return value
    parent = get_at(root, path[:-1])
    parent[path[-1]] = value
    return root


def del_at(root, path):
    parent = get_at(root, path[:-1])
    del parent[path[-1]]
    return root


def path_str(path) -> str:
    return ".".join(str(p) for p in path) if path else "<root>"


# --------------------------------------------------------------------------------------------------
# Vocabulary: valid names (so that mutations reach past the parser) and odd values.

MODEL_PRESETS = ["bert-large", "gpt3-1.3b", "llama2-7b", "llama3-8b", "llama3-70b"]
CLUSTER_PRESETS = ["dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "pcie-a100-4"]
GPUS = ["a100-sxm4-80gb", "b200", "h100-sxm5-80gb", "h200-sxm-141gb"]
LINKS = ["ib-edr", "ib-hdr", "ib-ndr", "ib-xdr", "nvlink3", "nvlink4", "nvlink5", "pcie-gen4", "pcie-gen5"]
STRATEGIES = ["rsa", "ulysses", "ring", "allgather_kv", "usp"]
OPTIONS = {
    "grad_reduction": ["allreduce_slice_div", "allreduce_slice", "reduce_scatter", "ring"],
    "qkv_fusion": ["separate", "fused"],
    "kv_replication": ["none", "replicate"],
    "layout": ["contiguous", "zigzag", "striped"],
    "ulysses_degree": [0, 1, 2, 3, 4, 8, 16],
}
STRATEGY_OPTIONS = {"rsa": ["grad_reduction"], "ulysses": ["qkv_fusion", "kv_replication"],
                    "ring": ["layout"], "allgather_kv": [],
                    "usp": ["ulysses_degree", "layout", "qkv_fusion", "kv_replication"]}
# The simulator registry's names per kind (and the rhd alias), plus names valid for another kind only.
COLLECTIVES = {
    "all_reduce": ["auto", "ring", "tree", "nvls", "halving_doubling", "rhd", "hierarchical", "direct"],
    "reduce_scatter": ["auto", "ring", "halving_doubling", "rhd", "nvls"],
    "all_gather": ["auto", "ring", "halving_doubling", "rhd", "hierarchical"],
    "all_to_all": ["auto", "pairwise", "direct", "hierarchical"],
    "protocol": ["auto", "simple", "ll", "ll128"],
}
OPS = ["all_reduce", "reduce_scatter", "all_gather", "all_to_all", "sendrecv"]
ALGOS = sorted({a for v in COLLECTIVES.values() for a in v} - {"simple", "ll", "ll128"})
SMALL_INTS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 96, 100, 127, 128,
              255, 256, 1000, 1023, 1024, 4096, 65536, 65537]
EXTREMES = [0, -1, 1, 2 ** 31, 2 ** 31 - 1, -2 ** 31, 2 ** 32, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, -2 ** 63,
            -2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64, 10 ** 30, 10 ** 400, 1e308, -1e308, 1e-300, 5e-324, 0.5, -0.0,
            1.5, 32.0, 1e19, 1048576, 2147483648, Raw("1e400"), Raw("-1e400"), Raw("-0"), Raw("1E+2"),
            Raw("1.0e-400")]
NONFINITE = ["NaN", "Infinity", "-Infinity", "nan", "inf", "-inf", "+Infinity", "1e400", "-1e400", "NAN"]
WRONG_NAMES = ["", " ", "unknown", "RSA", "Ring", "DGX-H100", "rsa ", " ring", "ring\u0000", "llama-3-8b",
               "h100", "nvlink9", "auto ", "none", "null", "true", "0", "-1", ".", "..", "../models/llama3-8b",
               "../clusters/dgx-h100", "llama3-8b.json", "dgx-h100.json", "models/llama3-8b", "a/b", "a\\b",
               "*", "%s%n", "${HOME}", "megatron_sp", "tree ", "float128", "bf8", "fwd+", "fwd+bwd+fwd",
               "x" * 300, "é", "\u2028", "\U0001F600"]
WEIRD_STRINGS = ["\u0000", "\u0001\u0002\u001f", "a\nb", "\t", "\\", "\"", "é", "\U0001F600", "\u202e",
                 "\ufeff", "\ud800", "\udfff", "\u2028\u2029", "\x7f", "\u00a0", "\uffff", "\ud83d\ude00",
                 "%n%s%x", "\r\n"]
UNKNOWN_KEYS = ["unknown", "", " seq_len", "SEQ_LEN", "seq-len", "seq_len ", "__proto__", "constructor",
                "schema_version", "preset", "model.hidden", "\u0000", "é", "\U0001F600", "options", "sweep",
                "x" * 1000]

# Fields with their valid choices; m_valid sets one of them (reaching semantic code past the parser).
VALID_FIELDS = {
    ("schema_version",): [0, 1, 2],
    ("model", "preset"): MODEL_PRESETS,
    ("model", "hidden"): [1, 2, 4, 8, 16, 32, 33, 64, 128, 4096],
    ("model", "heads"): [1, 2, 3, 4, 8, 16, 32, 64],
    ("model", "kv_heads"): [1, 2, 3, 4, 8, 16, 32],
    ("model", "head_dim"): [1, 2, 4, 8, 64, 128, 256],
    ("model", "ffn_hidden"): [1, 2, 64, 128, 14336],
    ("model", "layers"): [1, 2, 3, 80],
    ("model", "vocab"): [0, 1, 100, 128256],
    ("model", "hf_config"): ["hf.json", "missing.json", ".", "config.json"],
    ("model", "mlp"): ["gelu", "swiglu"],
    ("model", "attention_dropout"): [0, 0.1, 0.5, 0.999, 1, -0.1, "0.1"],
    ("model", "hidden_dropout"): [0, 0.1, 0.5, 0.999, 1, -0.1, "0.1"],
    ("workload", "seq_len"): [1, 2, 3, 7, 8, 16, 24, 31, 32, 33, 64, 96, 128, 1000, 1024, 4096, 65536],
    ("workload", "batch"): [1, 2, 3, 4, 16],
    ("workload", "dtype"): ["bf16", "fp16", "float32", "float64"],
    ("workload", "causal"): [True, False],
    ("workload", "scope"): ["attention", "layer", "model"],
    ("workload", "passes"): ["fwd", "fwd+bwd"],
    ("workload", "recompute"): [True, False],
    ("workload", "mask"): ["causal", "full", "document_causal", "sliding_window", "diagonal",
                           {"kind": "sliding_window", "window": 4}, {"kind": "document_causal", "documents": [8]},
                           {"kind": "document_causal",
                            "documents": {"distribution": "exponential", "mean_len": 16, "max_len": 64, "seed": 3}}],
    ("workload", "mask", "window"): [0, 1, 3, 1024, -1, 2 ** 63 - 1],
    ("workload", "mask", "documents"): [[1], [4, 4], [], [0, 8], [2 ** 62, 2 ** 62],
                                        {"distribution": "uniform", "max_len": 5},
                                        {"distribution": "zipf", "max_len": 5},
                                        {"distribution": "uniform", "min_len": 1, "max_len": 1}],
    ("cluster", "preset"): CLUSTER_PRESETS,
    # Valid node counts stay small (a valid 10^4-node cluster is a benchmark, not a fuzz case); the
    # large ones are past spsim's limit (65536) and must be refused at once.
    ("cluster", "nodes"): [1, 2, 3, 4, 8, 16, 65537, 1000000],
    ("cluster", "gpu"): GPUS,
    ("cluster", "gpus_per_node"): [1, 2, 3, 4, 8, 16, 72],
    ("cluster", "inter_node", "fabric", "kind"): ["single_switch", "fat_tree", "rail_optimized"],
    ("cluster", "inter_node", "fabric", "nodes_per_leaf"): [0, 1, 2, 3, 16, 65537],
    ("cluster", "inter_node", "fabric", "oversubscription"): [0, 0.5, 1, 2, 3.5, 8, 1e7],
    ("cluster", "inter_node", "fabric", "pxn"): [True, False, 1, "no"],
    ("strategy", "name"): STRATEGIES,
    ("strategy", "degree"): [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64, 128, 1024],
    ("strategy", "options", "grad_reduction"): OPTIONS["grad_reduction"],
    ("strategy", "options", "qkv_fusion"): OPTIONS["qkv_fusion"],
    ("strategy", "options", "kv_replication"): OPTIONS["kv_replication"],
    ("strategy", "options", "layout"): OPTIONS["layout"],
    ("strategy", "options", "ulysses_degree"): OPTIONS["ulysses_degree"],
    ("collectives", "all_reduce"): COLLECTIVES["all_reduce"],
    ("collectives", "reduce_scatter"): COLLECTIVES["reduce_scatter"],
    ("collectives", "all_gather"): COLLECTIVES["all_gather"],
    ("collectives", "all_to_all"): COLLECTIVES["all_to_all"],
    ("collectives", "protocol"): COLLECTIVES["protocol"],
    ("simulation", "network"): ["flow", "analytical"],
    ("simulation", "compute_slowdown"): [0, 0.1, 0.5, 0.99, 1, 2, 10, 1e9],
    ("simulation", "trace_out"): ["trace.json", "sub/trace.json", ".", ""],
    ("check", "dtype"): ["float64", "float32"],
    ("check", "seed"): [0, 1, 2, 2 ** 32, 2 ** 63 - 1, 2 ** 64 - 1],
    ("parallel", "dp"): [1, 2, 3, 4, 8, 64, 1024],
    ("parallel", "tp"): [1, 2, 3, 4, 8, 64],
    ("parallel", "cp"): [1, 2, 4, 8, 32],
    ("parallel", "distributed_optimizer"): [True, False],
    ("layer", "name"): ["replicated", "megatron_sp"],
    ("layer", "options", "sequence_parallel"): [True, False],
    ("layer", "options", "dx_reduction"): ["sum", "sum_div"],
    ("parallel", "bucket_mb"): [0, 0.001, 1, 25, 1000000, 1e12],
}
NAME_FIELDS = {p for p, v in VALID_FIELDS.items() if isinstance(v[0], str)}
SWEEP_PATHS = ["workload.seq_len", "strategy.degree", "cluster.nodes", "workload.batch", "parallel.bucket_mb",
               "parallel.dp", "simulation.compute_slowdown", "check.seed", "model.preset", "cluster.preset",
               "workload.dtype", "strategy.name", "strategy.options.layout", "strategy.options.grad_reduction",
               "strategy.options.ulysses_degree", "workload.causal", "model.hidden", "model.heads",
               "model.kv_heads", "model.layers", "simulation.network", "collectives.protocol", "parallel.tp",
               "parallel.cp", "layer.options.sequence_parallel", "model.mlp", "workload.recompute",
               "model.attention_dropout", "model.hidden_dropout",
               "cluster.inter_node.fabric.oversubscription", "cluster.inter_node.fabric.nodes_per_leaf",
               "workload.mask", "workload.mask.window", "workload.mask.documents.seed"]
ODD_SWEEP_PATHS = ["", ".", "..", "model", "workload", "sweep", "sweep.x", "schema_version", "name",
                   "strategy.options", "cluster", "a.b.c", "workload..seq_len", "workload.seq_len.x",
                   ".workload.seq_len", "workload.seq_len.", "workload.unknown", "strategy.options.unknown",
                   "Workload.seq_len", "strategy.0", "model.preset.name", "cluster.intra_node.link"]

EXTRA_CLUSTERS = [
    {"preset": "dgx-h100", "nodes": 2},
    {"preset": "dgx-a100", "nodes": 4},
    {"preset": "pcie-a100-4", "nodes": 1},
    {"preset": "hgx-h200", "nodes": 3},
    {"gpu": "h100-sxm5-80gb", "gpus_per_node": 8, "nodes": 1,
     "intra_node": {"fabric": "nvswitch", "link": "nvlink4", "nvls": True},
     "inter_node": {"link": "ib-ndr", "nic_attach": "pcie-gen5"}},
    {"gpu": "b200", "gpus_per_node": 4, "nodes": 2, "intra_node": "nvlink5", "inter_node": "ib-xdr"},
    {"gpu": "a100-sxm4-80gb", "gpus_per_node": 2, "nodes": 2,
     "intra_node": {"link": "pcie-gen4", "fabric": "pcie", "bandwidth_GBps": 10, "efficiency": 0.5,
                    "latency_us": 3},
     "inter_node": {"link": "ib-hdr", "nic_attach": {"link": "pcie-gen4", "bandwidth_GBps": 20}}},
    {"gpu": "h100-sxm5-80gb",
     "topology": {"devices": [{"id": "g0", "kind": "gpu"}, {"id": "g1", "kind": "gpu"},
                              {"id": "sw", "kind": "switch"}],
                  "links": [{"from": "g0", "to": "sw", "bandwidth_GBps": 100, "latency_us": 1, "duplex": True},
                            {"from": "g1", "to": "sw", "bandwidth_GBps": 100, "latency_us": 1,
                             "duplex": True}]}},
    {"gpu": "h100-sxm5-80gb",
     "topology": {"devices": [{"id": "g0", "kind": "gpu", "node": 0}, {"id": "g1", "kind": "gpu", "node": 0},
                              {"id": "g2", "kind": "gpu", "node": 1}, {"id": "g3", "kind": "gpu", "node": 1},
                              {"id": "nv", "kind": "nvswitch", "nvls": True}, {"id": "n0", "kind": "nic"},
                              {"id": "sw", "kind": "switch"}],
                  "links": [{"from": "g0", "to": "nv", "bandwidth_GBps": 450, "duplex": True},
                            {"from": "g1", "to": "nv", "bandwidth_GBps": 450, "duplex": True},
                            {"from": "g2", "to": "g3", "bandwidth_GBps": 50, "duplex": True, "class": "nvlink"},
                            {"from": "g0", "to": "n0", "bandwidth_GBps": 50, "duplex": True},
                            {"from": "n0", "to": "sw", "bandwidth_GBps": 50, "duplex": True},
                            {"from": "g2", "to": "sw", "bandwidth_GBps": 25, "duplex": True},
                            {"from": "g3", "to": "sw", "bandwidth_GBps": 25, "duplex": True},
                            {"from": "g1", "to": "sw", "bandwidth_GBps": 25, "duplex": False},
                            {"from": "sw", "to": "g1", "bandwidth_GBps": 25, "efficiency": 0.9,
                             "latency_us": 2}]}},
    {"preset": "dgx-h100", "collective_fits": {
        "all_reduce": {"latency_us": 30.0, "busbw_GBps": 200.0, "ranks": 8},
        "all_to_all": {"latency_us": 12.5, "busbw_GBps": 50.0, "ranks": 8, "source": "x", "residual": 0.1}}},
    {"preset": "dgx-a100", "intra_node": {"bandwidth_GBps": 100, "efficiency": 0.5, "latency_us": 2}},
    {"preset": "dgx-h100", "tuning": {"simple": {"nvlink_step_latency_us": 1.0}}},
]

STRATEGY_SAMPLES = (
    [{"name": "rsa", "options": {"grad_reduction": g}} for g in OPTIONS["grad_reduction"]]
    + [{"name": "ulysses"}, {"name": "ulysses", "options": {"qkv_fusion": "fused"}},
       {"name": "ulysses", "options": {"kv_replication": "replicate"}},
       {"name": "ring", "options": {"layout": "contiguous"}}, {"name": "ring", "options": {"layout": "zigzag"}},
       {"name": "ring", "options": {"layout": "striped"}}, {"name": "allgather_kv"},
       {"name": "usp", "options": {"ulysses_degree": 2, "layout": "zigzag"}},
       {"name": "usp", "options": {"ulysses_degree": 0}}, {"name": "usp", "options": {"ulysses_degree": 3}},
       {"name": "megatron_sp"}, {"name": "rsa", "degree": 3}, {"name": "ring", "degree": 1},
       {"name": "ulysses", "degree": 16}, {"degree": 2}, {}]
)

HF_CONFIG = {"hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128,
             "num_hidden_layers": 2, "vocab_size": 100, "head_dim": None, "model_type": "llama"}


# --------------------------------------------------------------------------------------------------
# Seeds


class Seed:
    def __init__(self, group, name, obj):
        self.group, self.name, self.obj = group, name, obj


class Library:
    def __init__(self, source_dir: Path):
        cfg = source_dir / "configs"
        self.seeds: list[Seed] = []
        for group in ("checks", "experiments", "runs"):
            for f in sorted((cfg / group).glob("*.json")):
                self.seeds.append(Seed(group, f"{group}/{f.name}", json.loads(f.read_text())))
        if not self.seeds:
            raise SystemExit(f"fuzz_configs.py: no seed configs under {cfg}")
        self.models = {f.stem: json.loads(f.read_text()) for f in sorted((cfg / "models").glob("*.json"))}
        self.clusters = {f.stem: json.loads(f.read_text()) for f in sorted((cfg / "clusters").glob("*.json"))}
        self.gpus = {f.stem: json.loads(f.read_text()) for f in sorted((cfg / "hardware/gpus").glob("*.json"))}
        self.links = {f.stem: json.loads(f.read_text()) for f in sorted((cfg / "hardware/links").glob("*.json"))}
        self.by_group = collections.defaultdict(list)
        for s in self.seeds:
            self.by_group[s.group].append(s)

    def sections(self, key):
        """Every value of a top-level section among the seeds (and the library), for swapping."""
        out = [s.obj[key] for s in self.seeds if key in s.obj]
        if key == "model":
            out += [dict(v) for v in self.models.values()]
            out += [{k: v for k, v in m.items() if k != "source"} for m in self.models.values()]
        if key == "cluster":
            out += [dict(v) for v in self.clusters.values()] + EXTRA_CLUSTERS
            out += [{"preset": p, "gpu": g} for p, g in zip(CLUSTER_PRESETS, self.gpus.values())]
        if key == "strategy":
            out += STRATEGY_SAMPLES
        return out

    def any_section(self):
        pool = []
        for k in ("model", "workload", "cluster", "strategy", "sweep", "check", "parallel"):
            pool += self.sections(k)
        pool += list(self.gpus.values()) + list(self.links.values())
        return pool


# --------------------------------------------------------------------------------------------------
# Structural mutations: each takes (rng, cfg, lib) and returns (cfg, description).


def _leaf_paths(cfg):
    return [p for p, v in walk(cfg) if p and not isinstance(v, (dict, list))]


def _all_paths(cfg):
    return [p for p, _ in walk(cfg) if p]


def _dict_paths(cfg):
    return [p for p, v in walk(cfg) if isinstance(v, dict)]


def _rand_value(rng, depth=0):
    r = rng.random()
    if r < 0.2:
        return rng.choice(SMALL_INTS)
    if r < 0.35:
        return rng.choice(EXTREMES)
    if r < 0.5:
        return rng.choice(WRONG_NAMES + WEIRD_STRINGS)
    if r < 0.6:
        return rng.choice([True, False, None])
    if r < 0.7:
        return Raw(rng.choice(NONFINITE))
    if depth < 2 and r < 0.85:
        return [_rand_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if depth < 2:
        return {rng.choice(UNKNOWN_KEYS[:8]): _rand_value(rng, depth + 1)}
    return rng.choice([[], {}, 0, ""])


def m_delete(rng, cfg, lib):
    paths = [p for p in _all_paths(cfg) if isinstance(get_at(cfg, p[:-1]), dict)]
    if not paths:
        return cfg, "delete: nothing"
    p = rng.choice(paths)
    return del_at(cfg, p), f"delete {path_str(p)}"


def m_type_swap(rng, cfg, lib):
    paths = _all_paths(cfg)
    p = rng.choice(paths) if paths and rng.random() > 0.03 else ()
    old = get_at(cfg, p)
    cands = []
    if not (isinstance(old, (int, float)) and not isinstance(old, bool)):
        cands += [7, 0, -3, 2.5]
        if isinstance(old, str):
            cands += [len(old)]
    if not isinstance(old, str):
        cands += ["x", dumps(old)[:100] if not isinstance(old, Raw) else "NaN", "true", ""]
    if not isinstance(old, bool):
        cands += [True, False]
    if old is not None:
        cands += [None]
    if not isinstance(old, list):
        cands += [[], [copy.deepcopy(old)], [1, 2, 3]]
    if not isinstance(old, dict):
        cands += [{}, {"value": copy.deepcopy(old)}, {"preset": copy.deepcopy(old)}]
    new = rng.choice(cands)
    return set_at(cfg, p, new), f"type-swap {path_str(p)}: {dumps(old)[:40]} -> {dumps(new)[:40]}"


def m_extreme(rng, cfg, lib):
    paths = _leaf_paths(cfg)
    nums = [p for p in paths if isinstance(get_at(cfg, p), (int, float)) and not isinstance(get_at(cfg, p), bool)]
    pool = nums if nums and rng.random() < 0.85 else paths
    if not pool:
        return cfg, "extreme: nothing"
    p = rng.choice(pool)
    v = rng.choice(EXTREMES)
    return set_at(cfg, p, v), f"extreme {path_str(p)} = {dumps(v)[:40]}"


def m_nonfinite(rng, cfg, lib):
    paths = _leaf_paths(cfg) or _all_paths(cfg)
    if not paths:
        return cfg, "nonfinite: nothing"
    p = rng.choice(paths)
    tok = rng.choice(NONFINITE)
    return set_at(cfg, p, Raw(tok)), f"nonfinite {path_str(p)} = {tok}"


def m_small_int(rng, cfg, lib):
    paths = [p for p in _leaf_paths(cfg) if isinstance(get_at(cfg, p), (int, float))
             and not isinstance(get_at(cfg, p), bool)]
    if not paths:
        return cfg, "small-int: nothing"
    p = rng.choice(paths)
    v = rng.choice(SMALL_INTS)
    return set_at(cfg, p, v), f"small-int {path_str(p)} = {v}"


def m_unknown_key(rng, cfg, lib):
    dps = _dict_paths(cfg)
    p = rng.choice(dps)
    k = rng.choice(UNKNOWN_KEYS + [rng.choice(list(VALID_FIELDS))[-1]])
    d = get_at(cfg, p)
    d[k] = _rand_value(rng)
    return cfg, f"add-key {path_str(p + (k[:20],))}"


def m_duplicate_key(rng, cfg, lib):
    dps = [p for p in _dict_paths(cfg) if get_at(cfg, p)]
    if not dps:
        return cfg, "dup-key: nothing"
    p = rng.choice(dps)
    d = get_at(cfg, p)
    pairs = list(d.items())
    k, v = rng.choice(pairs)
    other = rng.choice([copy.deepcopy(v), _rand_value(rng), rng.choice(SMALL_INTS)])
    where = rng.randrange(len(pairs) + 1)
    pairs.insert(where, (k, other))
    return set_at(cfg, p, Dup(pairs)), f"dup-key {path_str(p + (k,))}"


def m_wrong_name(rng, cfg, lib):
    paths = [p for p in _leaf_paths(cfg) if isinstance(get_at(cfg, p), str)]
    named = [p for p in paths if p in NAME_FIELDS or (len(p) >= 3 and p[0] == "strategy" and p[1] == "options")]
    pool = named if named and rng.random() < 0.75 else paths
    if not pool:
        p = rng.choice(sorted(NAME_FIELDS))
        if not _ensure_parent(cfg, p):
            return cfg, "wrong-name: nothing"
    else:
        p = rng.choice(pool)
    old = get_at(cfg, p) if _has(cfg, p) else ""
    r = rng.random()
    if r < 0.15 and isinstance(old, str) and old:
        new = rng.choice([old.upper(), old + " ", " " + old, old + "\u0000", old.replace("-", "_"),
                          old[:-1], old + old])
    elif r < 0.3:  # a valid name of another field
        new = rng.choice(rng.choice([v for v in VALID_FIELDS.values() if isinstance(v[0], str)]))
    else:
        new = rng.choice(WRONG_NAMES)
    return set_at(cfg, p, new), f"wrong-name {path_str(p)} = {new[:30]!r}"


def _has(cfg, path):
    try:
        get_at(cfg, path)
        return True
    except (KeyError, IndexError, TypeError):
        return False


def _ensure_parent(cfg, path):
    cur = cfg
    for k in path[:-1]:
        if not isinstance(cur, dict):
            return False
        if k not in cur or not isinstance(cur[k], dict):
            cur[k] = {}
        cur = cur[k]
    return isinstance(cur, dict)


def m_valid(rng, cfg, lib):
    """Set a field to a valid value (possibly adding it): drives semantic paths past the parser."""
    p = rng.choice(list(VALID_FIELDS))
    v = rng.choice(VALID_FIELDS[p])
    if not isinstance(cfg, dict) or not _ensure_parent(cfg, p):
        return cfg, "valid: nothing"
    set_at(cfg, p, v)
    if p == ("strategy", "name") and rng.random() < 0.7 and isinstance(cfg.get("strategy"), dict):
        opts = {}
        for o in STRATEGY_OPTIONS.get(v, []):
            if rng.random() < 0.6:
                opts[o] = rng.choice(OPTIONS[o])
        cfg["strategy"]["options"] = opts
    return cfg, f"valid {path_str(p)} = {dumps(v)[:30]}"


def m_sweep_empty(rng, cfg, lib):
    v = rng.choice([{}, [], None, {"workload.seq_len": []}, {"strategy": []}, {"": [1]},
                    {"workload.seq_len": [[]]}, {"strategy.degree": {}}, {"strategy": [{}]},
                    {"workload.seq_len": [1024], "strategy.degree": []}, {"workload.seq_len": 1024},
                    {"strategy": [None]}, {"strategy.options": [{}]}, "workload.seq_len"])
    cfg["sweep"] = v
    return cfg, f"sweep-empty {dumps(v)[:40]}"


def _axis_values(rng, path, n):
    if path in ("workload.seq_len",):
        return [rng.choice([8, 16, 64, 256, 1024, 4096, 16384]) * rng.randrange(1, 4) for _ in range(n)]
    if path in ("strategy.degree", "parallel.dp", "cluster.nodes", "workload.batch", "model.layers"):
        return [1 + i % 64 for i in range(n)]
    if path in ("parallel.bucket_mb", "simulation.compute_slowdown"):
        return [round(0.001 * (i + 1) * rng.random(), 6) for i in range(n)]
    t = tuple(path.split("."))
    if t in VALID_FIELDS:
        return [rng.choice(VALID_FIELDS[t]) for _ in range(n)]
    return [rng.choice(SMALL_INTS) for _ in range(n)]


def m_sweep_many(rng, cfg, lib):
    """Long and cartesian sweeps. Real simulations take ~1-50 ms a point, so the lengths stay where a
    correct spsim answers within the timeout, except for the sweeps past the 100000-point limit (which
    must be refused at once) and, rarely, one of exactly 100000 points (the largest one accepted)."""
    r = rng.random()
    sweep = {}
    if r < 0.4:  # one long axis
        path = rng.choice(SWEEP_PATHS)
        n = rng.choice([20, 50, 100, 300, 1000, 3000])
        if path in ("workload.seq_len", "model.hidden", "strategy.degree", "cluster.nodes", "model.preset"):
            n = min(n, 200)  # each point is a real simulation
        sweep[path] = _axis_values(rng, path, n)
        desc = f"sweep-many {path} x {n}"
    elif r < 0.45:  # the largest sweep accepted
        path = rng.choice(SWEEP_PATHS)
        sweep[path] = _axis_values(rng, path, 100000)
        desc = f"sweep-many {path} x 100000 (the limit)"
    elif r < 0.55:  # past the limit: must be refused quickly
        axes = rng.sample(SWEEP_PATHS, rng.randrange(2, 6))
        per = rng.choice([100, 400, 100000])
        for a in axes:
            sweep[a] = _axis_values(rng, a, per if a == axes[0] else max(2, min(per, 400)))
        desc = f"sweep-product past the limit: {len(axes)} axes"
    elif r < 0.7:  # small cartesian product
        axes = rng.sample(SWEEP_PATHS, rng.randrange(2, 4))
        per = rng.choice([1, 2, 3, 5])
        for a in axes:
            sweep[a] = _axis_values(rng, a, per)
        desc = f"sweep-product {len(axes)} axes x {per}"
    elif r < 0.85:  # odd paths
        path = rng.choice(ODD_SWEEP_PATHS)
        sweep[path] = [_rand_value(rng) for _ in range(rng.randrange(1, 4))]
        desc = f"sweep-odd-path {path!r}"
    else:  # strategies axis
        sweep["strategy"] = [copy.deepcopy(rng.choice(STRATEGY_SAMPLES)) for _ in range(rng.randrange(1, 30))]
        if rng.random() < 0.3:
            sweep["strategy.options.layout"] = ["zigzag", "striped"]
        desc = f"sweep-strategies x {len(sweep['strategy'])}"
    if rng.random() < 0.3 and isinstance(cfg.get("sweep"), dict):
        merged = dict(cfg["sweep"])
        merged.update(sweep)
        if sweep_points(merged) <= 200 or sweep_points(sweep) > 100000:
            sweep = merged
            desc += " (merged with the seed's sweep)"
    cfg["sweep"] = sweep
    return cfg, desc


def sweep_points(sweep):
    """Points of a sweep section (product of its list lengths); 1 when absent or malformed."""
    if not isinstance(sweep, dict):
        return 1
    n = 1
    for v in sweep.values():
        if isinstance(v, list):
            n *= max(len(v), 1)
    return n


def m_section_swap(rng, cfg, lib):
    key = rng.choice(["model", "workload", "cluster", "strategy", "sweep", "check", "parallel", "collectives",
                      "simulation"])
    r = rng.random()
    if r < 0.6:
        pool = lib.sections(key)
        if not pool:
            pool = lib.any_section()
        new = copy.deepcopy(rng.choice(pool))
        desc = f"section-swap {key} <- same section elsewhere"
    elif r < 0.85:
        new = copy.deepcopy(rng.choice(lib.any_section()))
        desc = f"section-swap {key} <- other section"
    elif r < 0.95 and key == "cluster":
        new = {"preset": rng.choice(CLUSTER_PRESETS), "gpu": copy.deepcopy(rng.choice(list(lib.gpus.values())))}
        desc = "section-swap cluster.gpu <- inline gpu"
    else:
        new = copy.deepcopy(rng.choice(lib.seeds).obj)
        desc = f"section-swap {key} <- whole config"
    cfg[key] = new
    return cfg, desc


def m_unicode(rng, cfg, lib):
    r = rng.random()
    weird = "".join(rng.choice(WEIRD_STRINGS) for _ in range(rng.randrange(1, 4)))
    strs = [p for p in _leaf_paths(cfg) if isinstance(get_at(cfg, p), str)]
    if r < 0.6 and strs:
        p = rng.choice(strs)
        old = get_at(cfg, p)
        new = rng.choice([weird, old + weird, weird + old, old[:1] + weird + old[1:]])
        return set_at(cfg, p, new), f"unicode value {path_str(p)}"
    dps = _dict_paths(cfg)
    p = rng.choice(dps)
    d = get_at(cfg, p)
    if d and rng.random() < 0.5:  # rename an existing key
        k = rng.choice(list(d))
        v = d.pop(k)
        d[str(k) + weird] = v
        return cfg, f"unicode key {path_str(p + (k,))}"
    d[weird] = 1
    return cfg, f"unicode new key in {path_str(p)}"


def m_huge_string(rng, cfg, lib):
    s = rng.choice(["A" * MiB, "é" * (MiB // 2), "\u0000" * (MiB // 6), "rsa" * (MiB // 3), "." * MiB])
    strs = [p for p in _leaf_paths(cfg) if isinstance(get_at(cfg, p), str)]
    if strs and rng.random() < 0.7:
        p = rng.choice(strs)
        return set_at(cfg, p, s), f"huge-string {path_str(p)}"
    p = rng.choice(_dict_paths(cfg))
    get_at(cfg, p)[s] = 1
    return cfg, f"huge-key in {path_str(p)}"


def m_deep(rng, cfg, lib):
    n = rng.choice([100, 1000, 10000, 10000, 100000])
    kind = rng.choice(["array", "object", "mixed", "unclosed"])
    if kind == "array":
        raw = "[" * n + "]" * n
    elif kind == "object":
        raw = '{"a": ' * n + "1" + "}" * n
    elif kind == "mixed":
        raw = '[{"a": ' * (n // 2) + "[]" + "}]" * (n // 2)
    else:
        raw = "[" * n
    paths = _all_paths(cfg)
    p = rng.choice(paths) if paths and rng.random() > 0.2 else ()
    return set_at(cfg, p, Raw(raw)), f"deep {kind} x {n} at {path_str(p)}"


def m_huge_array(rng, cfg, lib):
    n = rng.choice([1000, 100000])
    # distinct objects: a later mutation that grows one element (a 1 MB key) must not grow them all
    v = rng.choice([[1] * n, list(range(n)), [{"name": "ring"} for _ in range(min(n, 10000))], ["x"] * n])
    paths = _all_paths(cfg)
    p = rng.choice(paths) if paths else ()
    return set_at(cfg, p, v), f"huge-array {n} at {path_str(p)}"


def m_add_section(rng, cfg, lib):
    key = rng.choice(["cluster", "parallel", "collectives", "simulation", "check", "workload.recompute",
                      "model.hf_config", "workload.mask"])
    if key == "cluster":
        cfg["cluster"] = copy.deepcopy(rng.choice(lib.sections("cluster")))
        if rng.random() < 0.3 and isinstance(cfg["cluster"], dict):
            inter = cfg["cluster"].setdefault("inter_node", {})
            if isinstance(inter, dict):
                inter["fabric"] = {"kind": rng.choice(["fat_tree", "rail_optimized"]),
                                   "nodes_per_leaf": rng.choice([1, 2, 4]),
                                   "oversubscription": rng.choice([1, 2, 4])}
                if inter["fabric"]["kind"] == "rail_optimized" and rng.random() < 0.5:
                    inter["fabric"]["pxn"] = False
    elif key == "parallel":
        cfg["parallel"] = {"dp": rng.choice([1, 2, 3, 4, 8]), "bucket_mb": rng.choice([0.5, 1, 25, 1e6])}
    elif key == "collectives":
        cfg["collectives"] = {k: rng.choice(v) for k, v in COLLECTIVES.items() if rng.random() < 0.6}
    elif key == "simulation":
        cfg["simulation"] = {"network": rng.choice(["flow", "analytical"]),
                             "compute_slowdown": rng.choice([0, 0.1, 0.9, 1.0])}
        if rng.random() < 0.3:
            cfg["simulation"]["trace_out"] = "trace.json"
    elif key == "check":
        cfg["check"] = {"dtype": rng.choice(["float64", "float32"]), "seed": rng.choice([0, 1, 7])}
    elif key == "workload.recompute" and isinstance(cfg.get("workload"), dict):
        cfg["workload"]["recompute"] = rng.choice([True, False])
    elif key == "workload.mask" and isinstance(cfg.get("workload"), dict):
        w = cfg["workload"]
        w.pop("causal", None)
        n = w.get("seq_len") if isinstance(w.get("seq_len"), int) and w.get("seq_len", 0) > 0 else 64
        draw = {"distribution": rng.choice(["uniform", "exponential"]), "max_len": rng.choice([1, 8, 100]),
                "seed": rng.choice([0, 1, 2])}
        if draw["distribution"] == "exponential":
            draw["mean_len"] = 8
        w["mask"] = rng.choice([
            {"kind": "sliding_window", "window": rng.choice([1, 2, 7, 64]), "causal": rng.choice([True, False])},
            {"kind": "document_causal", "documents": [n // 3, n - n // 3] if n >= 3 else [n]},
            {"kind": "document_causal", "window": rng.choice([1, 5]), "documents": draw}])
    elif key == "model.hf_config" and isinstance(cfg.get("model"), dict):
        cfg["model"] = {"hf_config": "hf.json"}
    return cfg, f"add-section {key}"


STRUCT_MUTATORS = [
    (m_delete, 12), (m_type_swap, 10), (m_extreme, 10), (m_nonfinite, 5), (m_small_int, 8),
    (m_unknown_key, 4), (m_duplicate_key, 4), (m_wrong_name, 8), (m_valid, 14), (m_sweep_empty, 3),
    (m_sweep_many, 4), (m_section_swap, 6), (m_unicode, 4), (m_huge_string, 2), (m_deep, 2),
    (m_huge_array, 1), (m_add_section, 5),
]

# Byte-level mutations on the serialized file.


def b_mutate(rng, data: bytes):
    r = rng.random()
    if r < 0.35 and data:
        cut = rng.randrange(len(data))
        return data[:cut], f"truncate at byte {cut} of {len(data)}"
    if r < 0.42:
        return b"", "empty file"
    if r < 0.47:
        return rng.choice([b" \n\t ", b"\n", b"\x00", b"null", b"0", b'""', b"[]", b"{}"]), "trivial file"
    if r < 0.65:
        bad = rng.choice([b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\x80", b"\xf8\x88\x80\x80\x80",
                          b"\xc0\xaf", b"\xe2\x82", b"\xf4\x90\x80\x80"])
        quotes = [m.start() + 1 for m in re.finditer(b'"', data)]
        pos = rng.choice(quotes) if quotes and rng.random() < 0.7 else rng.randrange(len(data) + 1)
        return data[:pos] + bad + data[pos:], f"non-utf8 {bad!r} at {pos}"
    if r < 0.72:
        return b"\xef\xbb\xbf" + data, "utf-8 BOM"
    if r < 0.82:
        tail = rng.choice([b"{}", b"x", b"\x00", b"// comment", b",", b"]", b"}", b"\n{}\n", b" /* c */"])
        return data + tail, f"trailing {tail!r}"
    if r < 0.92 and data:
        pos = rng.randrange(len(data))
        return data[:pos] + bytes([data[pos] ^ (1 << rng.randrange(8))]) + data[pos + 1:], f"bit flip at {pos}"
    if data:
        pos = rng.randrange(len(data))
        return data[:pos] + b"\x00" + data[pos:], f"NUL at {pos}"
    return data, "none"


# --------------------------------------------------------------------------------------------------
# Cases


class Case:
    def __init__(self, idx, command, argv, files, desc, cfg_obj=None, byte_mutated=False):
        self.idx = idx
        self.command = command        # a label: "check", "simulate --json", "collective", ...
        # arguments after the spsim path; file names relative to the case dir (exec cannot pass NUL)
        self.argv = [a.replace("\x00", "") for a in argv]
        self.files = files            # name -> bytes
        self.desc = desc              # list of mutation descriptions
        self.cfg_obj = cfg_obj        # the structured config (None when not parseable / not applicable)
        self.byte_mutated = byte_mutated


COMMANDS_BY_GROUP = {
    "checks": [("check", 30), ("check --json", 18), ("simulate --json", 14), ("simulate --cluster dgx-h100", 14),
               ("simulate --cluster FILE", 4), ("compare --json --jobs 2", 14), ("compare odd-args", 3)],
    "runs": [("check", 5), ("check --json", 3), ("simulate --json", 25), ("simulate --cluster dgx-h100", 25),
             ("simulate --cluster FILE", 5), ("compare --json --jobs 2", 25), ("compare odd-args", 5)],
    "experiments": [("check", 2), ("check --json", 1), ("simulate --json", 30), ("simulate --cluster dgx-h100", 25),
                    ("simulate --cluster FILE", 8), ("compare --json --jobs 2", 30), ("compare odd-args", 6)],
}
JOBS_VALUES = ["0", "-1", "1", "2", "3", "64", "1000", "100000", "2147483648", "9223372036854775808", "abc", "",
               "1e3", "nan", "2.5", " 2", "0x2"]
BASELINE_VALUES = ["0", "1", "2", "-1", "3", "1000", "4294967296", "4294967297", "18446744073709551616", "abc",
                   "", "1.5", "nan", "+1"]
# --nodes values: invalid ones, and valid ones small enough to simulate quickly.
NODES_ODD = ["-1", "0", "-0", "1e400", "nan", "", "abc", "1.5", "0x40000", "18446744073709551616", "9223372036854775807",
             "2147483648", "65537", "1000000", "1e9", "2", "3", "0x2", "\x01", "1 "]

COLLECTIVE_ODD = ["-1", "0", "-0", "1e400", "nan", "NaN", "inf", "-inf", "", "abc", "1.5", "0x10",
                  "18446744073709551616", "9223372036854775807", "9223372036854775808", "2147483648", "4294967296",
                  "1e18", "1e308", "1e-300", " 1", "1 ", "1K1", "1KB", "1T", "1P", "-1G", "0.5", "1000000",
                  "999999", "1e9", "\x01", "é", "8E", "1.5G", "1g", "1m", "k", "G", "1e19G", "16G", "1000000G",
                  "1.0000001", "1.000000000001", "1e-9", "2", "100"]


def weighted(rng, items):
    total = sum(w for _, w in items)
    x = rng.random() * total
    for item, w in items:
        x -= w
        if x < 0:
            return item
    return items[-1][0]


def sanitize(cfg):
    """Keep files inside the case folder: simulation.trace_out must be relative and without '..'."""
    def bad(s):
        return isinstance(s, str) and (s.startswith("/") or ".." in s or s.startswith("~"))
    if isinstance(cfg, dict):
        sim = cfg.get("simulation")
        if isinstance(sim, dict) and bad(sim.get("trace_out")):
            sim["trace_out"] = "trace-out.json"
        sw = cfg.get("sweep")
        if isinstance(sw, dict) and isinstance(sw.get("simulation.trace_out"), list):
            sw["simulation.trace_out"] = [("trace-out.json" if bad(x) else x) for x in sw["simulation.trace_out"]]
        model = cfg.get("model")
        if isinstance(model, dict) and bad(model.get("hf_config")):
            model["hf_config"] = "hf.json"
    return cfg


def gen_collective(rng, idx, lib):
    opts = {"--cluster": rng.choice(CLUSTER_PRESETS), "--op": rng.choice(OPS),
            "--min-bytes": rng.choice(["1", "8", "1K", "1M", "16M"]),
            "--max-bytes": rng.choice(["1M", "64M", "1G", "8G"])}
    for k, vals in (("--nodes", ["1", "2", "4"]), ("--step-factor", ["2", "4", "1.5"]),
                    ("--algo", ALGOS), ("--protocol", COLLECTIVES["protocol"]), ("--network", ["flow", "analytical"])):
        if rng.random() < 0.4:
            opts[k] = rng.choice(vals)
    desc = []
    files = {}
    for _ in range(rng.choice([1, 1, 2, 3])):
        k = rng.choice(["--cluster", "--nodes", "--op", "--min-bytes", "--max-bytes", "--step-factor", "--algo",
                        "--protocol", "--network"])
        r = rng.random()
        if r < 0.6:
            v = rng.choice(NODES_ODD if k == "--nodes" else COLLECTIVE_ODD)
        elif r < 0.8:
            v = rng.choice(WRONG_NAMES + ALGOS + OPS + CLUSTER_PRESETS + ["simple", "ll", "ll128", "flow"])
        elif k == "--cluster":
            files["cluster.json"] = dumps(copy.deepcopy(rng.choice(lib.sections("cluster")))).encode()
            v = "cluster.json"
        else:
            v = rng.choice(["".join(rng.choice(WEIRD_STRINGS) for _ in range(2)), "1" * 400])
        opts[k] = v
        desc.append(f"{k}={v[:30]!r}")
    argv = ["collective"]
    for k, v in opts.items():
        argv += [k, v]
    r = rng.random()
    if r < 0.08:
        drop = rng.choice(["--cluster", "--op", "--min-bytes", "--max-bytes"])
        i = argv.index(drop)
        del argv[i:i + 2]
        desc.append(f"drop {drop}")
    elif r < 0.14:
        k = rng.choice(list(opts))
        argv += [k, rng.choice(NODES_ODD if k == "--nodes" else COLLECTIVE_ODD)]
        desc.append(f"repeat {k}")
    elif r < 0.18:
        argv += [rng.choice(["--bogus", "-x", "--", "--json=1", "--nodes"])]
        desc.append("extra arg")
    if rng.random() < 0.3:
        argv.append("--json")
    return Case(idx, "collective", argv, files, desc)


def gen_case(idx, master_seed, lib):
    rng = random.Random(f"{master_seed}/{idx}")
    if rng.random() < 0.15:
        return gen_collective(rng, idx, lib)
    group = weighted(rng, [("checks", 45), ("experiments", 40), ("runs", 15)])
    seed = rng.choice(lib.by_group[group])
    command = weighted(rng, COMMANDS_BY_GROUP[group])
    cfg = copy.deepcopy(seed.obj)
    desc = [f"seed {seed.name}"]
    # Steer towards the interesting code: a cluster for simulate, no sweep for simulate, a sweep for compare.
    if command.startswith(("simulate --json", "compare")) and "cluster" not in cfg and rng.random() < 0.7:
        cfg["cluster"] = {"preset": rng.choice(CLUSTER_PRESETS), "nodes": 1}
    if command.startswith("simulate") and "sweep" in cfg and rng.random() < 0.7:
        del cfg["sweep"]
    if command.startswith("compare") and "sweep" not in cfg and rng.random() < 0.4:
        cfg["sweep"] = {"strategy": [copy.deepcopy(rng.choice(STRATEGY_SAMPLES)) for _ in range(3)]}
    n_mut = rng.choice([0, 1, 1, 1, 2, 2, 3, 4])
    for _ in range(n_mut):
        mut = weighted(rng, STRUCT_MUTATORS)
        if not isinstance(cfg, dict) and mut not in (m_type_swap, m_deep, m_huge_array):
            continue
        cfg, d = mut(rng, cfg, lib)
        desc.append(d)
    cfg = sanitize(cfg)
    data = dumps(cfg, ascii_only=rng.random() < 0.2, indent=rng.random() < 0.3).encode("utf-8")
    byte_mutated = False
    if n_mut == 0 or rng.random() < 0.12:
        if n_mut == 0 and rng.random() < 0.5:
            pass  # the unmutated seed (or just the steering) as a baseline
        else:
            data, d = b_mutate(rng, data)
            desc.append(d)
            byte_mutated = True
    files = {"config.json": data}
    if isinstance(cfg, dict) and isinstance(cfg.get("model"), dict) and cfg["model"].get("hf_config") == "hf.json":
        hf = copy.deepcopy(HF_CONFIG)
        if rng.random() < 0.5:
            hf, d = weighted(rng, [(m_delete, 3), (m_type_swap, 3), (m_extreme, 3), (m_nonfinite, 1)])(rng, hf, lib)
            desc.append("hf.json: " + d)
        files["hf.json"] = dumps(hf).encode()
    cfg_arg = "config.json"
    if rng.random() < 0.01:
        cfg_arg = rng.choice(["missing.json", ".", "", "/dev/null", "config.json/"])
        desc.append(f"config path {cfg_arg!r}")
    if command == "check":
        argv = ["check", cfg_arg]
    elif command == "check --json":
        argv = ["check", cfg_arg, "--json"]
    elif command == "simulate --json":
        argv = ["simulate", cfg_arg, "--json"]
    elif command == "simulate --cluster dgx-h100":
        argv = ["simulate", cfg_arg, "--cluster", "dgx-h100"]
    elif command == "simulate --cluster FILE":
        cl = copy.deepcopy(rng.choice(lib.sections("cluster")))
        for _ in range(rng.choice([0, 1, 1, 2])):
            cl, d = weighted(rng, STRUCT_MUTATORS[:9])(rng, cl, lib) if isinstance(cl, dict) else (cl, "-")
            desc.append("cluster.json: " + d)
        cdata = dumps(cl).encode()
        if rng.random() < 0.1:
            cdata, d = b_mutate(rng, cdata)
            desc.append("cluster.json: " + d)
        files["cluster.json"] = cdata
        argv = ["simulate", cfg_arg, "--cluster", rng.choice(["cluster.json"] * 5 + WRONG_NAMES[:12])]
    elif command == "compare --json --jobs 2":
        argv = ["compare", cfg_arg, "--json", "--jobs", "2"]
    else:  # compare odd-args
        argv = ["compare", cfg_arg]
        if rng.random() < 0.7:
            argv += ["--jobs", rng.choice(JOBS_VALUES)]
        if rng.random() < 0.7:
            argv += ["--baseline", rng.choice(BASELINE_VALUES)]
        if rng.random() < 0.5:
            argv.append("--json")
        desc.append(" ".join(argv[2:]))
    return Case(idx, command, argv, files, desc, cfg_obj=cfg if isinstance(cfg, dict) else None,
                byte_mutated=byte_mutated)


# --------------------------------------------------------------------------------------------------
# Memory estimate of `spsim check` (float64 reference + strategy), to recognise the known big-shape issue.


def _int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return None


def estimate_check_bytes(cfg, lib):
    """Rough bytes `spsim check` needs for this config, taking the largest shape a sweep may apply
    (check applies swept shapes when the sweep also has a strategy.options axis); None when unreadable."""
    if not isinstance(cfg, dict):
        return None
    best = _estimate_one(cfg, lib)
    sweep = cfg.get("sweep")
    if isinstance(sweep, dict) and isinstance(cfg.get("model"), dict) and isinstance(cfg.get("workload"), dict):
        for path, values in sweep.items():
            if not isinstance(values, list) or not isinstance(path, str) or path.count(".") != 1:
                continue
            section, key = path.split(".")
            if section not in ("model", "workload") or not values:
                continue
            for v in values[:1000]:
                alt = dict(cfg)
                alt[section] = dict(cfg[section])
                alt[section][key] = v
                e = _estimate_one(alt, lib)
                if e is not None and (best is None or e > best):
                    best = e
    return best


def estimate_check_flops(cfg, lib):
    """Rough FLOPs of `spsim check` on this config (reference and strategy, forward and backward)."""
    dims = _dims(cfg, lib) if isinstance(cfg, dict) else None
    if dims is None:
        return None
    hidden, heads, seq, batch, head_dim, ffn, wl = dims
    attention = 24 * batch * heads * seq * seq * head_dim
    mlp = 3 if isinstance(cfg.get("model"), dict) and cfg["model"].get("mlp") == "swiglu" else 2
    layer = 0 if wl.get("scope", "attention") == "attention" else 12 * batch * seq * hidden * (4 * hidden + mlp * ffn)
    return min(attention + layer, 1 << 100)


def _dims(cfg, lib):
    """(hidden, heads, seq_len, batch, head_dim, ffn_hidden, workload) of a config, presets applied; None
    when the config does not say."""
    model = cfg.get("model")
    wl = cfg.get("workload")
    if not isinstance(model, dict) or not isinstance(wl, dict):
        return None
    fields = {}
    preset = model.get("preset")
    if isinstance(preset, str) and preset in lib.models:
        fields.update(lib.models[preset])
    fields.update(model)
    hidden, heads = _int(fields.get("hidden")), _int(fields.get("heads"))
    seq, batch = _int(wl.get("seq_len")), _int(wl.get("batch", 1))
    if hidden is None or heads is None or seq is None or batch is None:
        return None
    hidden, heads, seq, batch = max(hidden, 1), max(heads, 1), max(seq, 1), max(batch, 1)
    head_dim = _int(fields.get("head_dim")) or max(hidden // heads, 1)
    ffn = _int(fields.get("ffn_hidden")) or 4 * hidden
    return hidden, heads, seq, batch, head_dim, ffn, wl


def _estimate_one(cfg, lib):
    dims = _dims(cfg, lib)
    if dims is None:
        return None
    hidden, heads, seq, batch, head_dim, ffn, _ = dims
    strat = cfg.get("strategy") if isinstance(cfg.get("strategy"), dict) else {}
    par = cfg.get("parallel") if isinstance(cfg.get("parallel"), dict) else {}
    p = max(_int(strat.get("degree", par.get("cp", 1))) or 1, 1) * max(_int(par.get("tp", 1)) or 1, 1)
    scores = batch * heads * seq * seq * 8 * 3          # reference scores, probabilities, their gradient
    scores_ranks = batch * heads * seq * seq * 8 * 2    # strategy ranks together (s/P x s rows each, or blocks)
    acts = batch * seq * (hidden * 16 + heads * head_dim * 12 + ffn * 4) * 8 * 2
    weights = (4 * hidden * heads * head_dim + 3 * hidden * ffn) * 8 * 4 * min(p, 64)
    return min(scores + scores_ranks + acts + weights, 1 << 100)  # stays convertible to float


# --------------------------------------------------------------------------------------------------
# Running and classifying


class Result:
    def __init__(self):
        self.rc = None
        self.timed_out = False
        self.stdout = b""
        self.stderr = b""
        self.elapsed = 0.0
        self.budget_cut = False  # killed at the end of the time budget before its own timeout
        self.slow = False  # timed out once, then finished with slow_factor times the timeout


# The commands that estimate their memory before they allocate (spsim's --max-memory).
MEMORY_LIMITED_COMMANDS = ("check", "run", "simulate", "compare", "gantt")


def make_preexec(mem_bytes, fsize_bytes, sanitized):
    def preexec():
        # AddressSanitizer reserves terabytes of address space for its shadow memory at start-up, so
        # an address-space limit kills a sanitized binary before main(); there the allocator's own
        # limits (ASAN_OPTIONS, run_argv) stand in for it.
        if not sanitized:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_bytes, fsize_bytes))
    return preexec


def run_argv(spsim, argv, cwd, timeout, mem_bytes, fsize_bytes, deadline=None, sanitized=False):
    res = Result()
    t0 = time.monotonic()
    limit = timeout if deadline is None else max(min(timeout, deadline - t0), 0.5)
    env = dict(os.environ)
    env.pop("SPSIM_CONFIG_DIR", None)
    mb = max(mem_bytes // (1 << 20), 1)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=1"
                                  + (f":malloc_limit_mb={mb}:max_allocation_size_mb={mb}" if sanitized else ""))
    if sanitized and argv and argv[0] in MEMORY_LIMITED_COMMANDS and "--max-memory" not in argv:
        # without RLIMIT_AS, spsim's own estimate would see the whole machine: give it the cap instead
        argv = [argv[0], "--max-memory", f"{mb}M"] + list(argv[1:])
    # bytes, so that lone surrogates go through as (non-UTF-8) bytes instead of failing the encode
    cmd = [os.fsencode(spsim)] + [a.encode("utf-8", "surrogatepass") for a in argv]
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=make_preexec(mem_bytes, fsize_bytes, sanitized),
                            start_new_session=True, env=env)
    try:
        res.stdout, res.stderr = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        res.timed_out = limit >= timeout
        res.budget_cut = not res.timed_out
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own process group (start_new_session)
        except ProcessLookupError:
            pass
        res.stdout, res.stderr = proc.communicate()
    res.rc = proc.returncode
    res.elapsed = time.monotonic() - t0
    return res


def signame(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def interesting_line(text: str) -> str:
    for pat in FAIL_PATTERNS + ["error"]:
        for line in text.splitlines():
            if pat in line:
                return line.strip()
    return first_line(text)


def normalize(msg: str) -> str:
    msg = msg[:400]
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r'"[^"]*"', '"…"', msg)
    if msg.count("'") % 2:
        msg = re.sub(r"'[^']*$", "'…'", msg)  # a quote cut off by the length limit
    if not msg.startswith("spsim:"):  # CLI11's own messages: one signature per kind, whatever the option
        msg = re.sub(r"--[A-Za-z][\w-]*|\b[A-Z][A-Z_]+\b", "OPT", msg)
    msg = re.sub(r"(Could not convert: \S+ = ).*", r"\1…", msg)
    msg = re.sub(r"(was not expected: ).*", r"\1…", msg)
    msg = re.sub(r"\b(got|is|than|row|has|of|with|from|value|for) [^;,:()]*", r"\1 …", msg)
    msg = re.sub(r"\d+(\.\d+)?(e[+-]?\d+)?", "N", msg)
    return msg[:160]


def classify(case_command, res: Result, est, mem_bytes, big_fraction, json_out, points=1):
    """-> (failed, category, signature, reason, warning)."""
    err = res.stderr.decode("utf-8", "replace")
    kind = None
    if res.timed_out:
        kind = "timeout"
    elif res.rc is not None and res.rc < 0:
        kind = signame(-res.rc)
    elif res.rc not in (0, 1, 2):
        kind = f"exit {res.rc}"
    else:
        for pat in FAIL_PATTERNS:
            if pat in err:
                kind = f"stderr '{pat}'"
                break
    # A compare over many valid points is legitimately slower than the timeout (each point is a whole
    # simulation; spsim shows progress on a terminal): a warning, not a hang.
    if kind == "timeout" and case_command.startswith("compare") and points >= 100:  # as big_sweep
        return False, None, None, None, f"slow sweep: {points} points past the timeout"
    if kind is None and res.slow:
        slow = f"slow: past the timeout, then finished in {res.elapsed:.0f} s"
        if res.rc == 2 and not first_line(err).startswith("spsim: error:"):
            kind = "exit 2 without 'spsim: error:'"
        else:
            return False, None, None, None, slow
    if kind is None and res.rc == 2 and not first_line(err).startswith("spsim: error:"):
        kind = "exit 2 without 'spsim: error:'" + (" (empty stderr)" if not err.strip() else "")
    warning = None
    if kind is None:
        if json_out and res.rc in (0, 1):
            try:
                def bad_const(c):
                    raise ValueError(f"non-standard JSON constant {c}")
                json.loads(res.stdout.decode("utf-8"), parse_constant=bad_const)
            except (ValueError, UnicodeDecodeError) as e:
                warning = f"--json output is not valid JSON: {str(e)[:200]}"
        return False, None, None, None, warning
    resourceish = (res.timed_out or res.rc == -signal.SIGKILL
                   or any(p in err for p in MEMORY_PATTERNS))
    # check on a big shape: an allocation failing while the rank threads still run ends in
    # std::terminate ("terminate called without an active exception"), not in bad_alloc
    if case_command.startswith("check") and res.rc == -signal.SIGABRT and "without an active exception" in err:
        resourceish = True
    line = interesting_line(err)
    big = est is not None and est >= big_fraction * mem_bytes
    est_txt = "unknown" if est is None else f"{est / GiB:.2f} GiB"
    if case_command.startswith("compare") and res.timed_out and points > 1000:
        category = "slow-sweep"
        signature = f"slow-sweep | compare | timeout with more than 1000 sweep points"
    elif resourceish:
        category = "resource"
        signature = f"resource | {case_command.split()[0]} | {kind} | {normalize(line)}"
    else:
        category = "message" if kind.startswith("exit 2 without") else "crash"
        signature = f"{category} | {case_command.split()[0]} | {kind} | {normalize(line)}"
    reason = (f"{kind}\ncategory: {category}\nexit code: {res.rc}\ntimed out: {res.timed_out}\n"
              f"elapsed: {res.elapsed:.2f} s\nestimated check memory: {est_txt}\nsweep points: {points}\n"
              f"stderr line: {line}\n")
    return True, category, signature, reason, warning


def slug(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-")
    return s[:90] or "x"


# --------------------------------------------------------------------------------------------------
# The fuzz loop


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.cases = 0
        self.per_command = collections.Counter()
        self.exit_hist = collections.Counter()
        self.failures = collections.OrderedDict()   # signature -> dict(count, saved, examples)
        self.known = 0
        self.skipped = 0
        self.warnings = collections.OrderedDict()
        self.exit2 = collections.OrderedDict()      # normalized message -> [count, example message, case desc]
        self.case_seconds = 0.0
        self.harness_errors = 0
        self.unfinished = 0
        self.slowest = []


def rc_label(res):
    if res.timed_out:
        return "timeout"
    if res.rc < 0:
        return signame(-res.rc)
    return str(res.rc)


def save_case(out_dir: Path, sub: str, case, res, reason, spsim, max_saved, record):
    if record["saved"] >= max_saved:
        return None
    record["saved"] += 1
    d = out_dir / slug(sub) / f"case-{case.idx:07d}"
    d.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (d / name).write_bytes(data)
    (d / "command.txt").write_text(shlex.join([spsim] + case.argv) + "\n", errors="backslashreplace")
    (d / "argv.json").write_text(json.dumps({"argv": case.argv, "command": case.command,
                                             "mutations": case.desc}, indent=1, ensure_ascii=True) + "\n")
    (d / "stdout").write_bytes(res.stdout[:MiB])
    (d / "stderr").write_bytes(res.stderr[:MiB])
    (d / "reason.txt").write_text(reason + "mutations:\n" + "".join(f"  {m[:300]}\n" for m in case.desc),
                                  errors="backslashreplace")
    return d


def big_sweep(case):
    """A compare over so many points that it is slow by design (classify warns; no second run)."""
    cfg = parsed_config(case)
    return case.command.startswith("compare") and cfg is not None and sweep_points(cfg.get("sweep")) >= 100


def execute(case, args, lib, work_root: Path, deadline=None):
    d = Path(tempfile.mkdtemp(prefix=f"case-{case.idx}-", dir=work_root))
    try:
        for name, data in case.files.items():
            (d / name).write_bytes(data)
        res = run_argv(args.spsim, case.argv, d, args.timeout, int(args.max_memory_gb * GiB),
                       int(args.max_file_gb * GiB), deadline, args.sanitized)
        # A hang or merely slow? simulate/compare/collective of a large valid config can take longer
        # than the timeout (simulation speed, not reliability): run it once more with slow_factor times
        # the timeout; if it then finishes, the case is judged on that run and reported as slow.
        if (res.timed_out and args.slow_factor > 1 and not case.command.startswith("check")
                and not big_sweep(case)):
            again = run_argv(args.spsim, case.argv, d, args.timeout * args.slow_factor,
                             int(args.max_memory_gb * GiB), int(args.max_file_gb * GiB), deadline, args.sanitized)
            if again.budget_cut:
                res = again  # the budget ended before the second run could tell slow from hung: unfinished
            elif not again.timed_out:
                again.slow = True
                res = again
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return res


def parsed_config(case):
    """The config as spsim reads it (the last of duplicate keys wins), or None."""
    data = case.files.get("config.json")
    if data is None:
        return None
    try:
        obj = json.loads(data.decode("utf-8-sig"))  # spsim, like the JSON standard allows, skips a BOM
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def handle_result(case, res, args, lib, stats: Stats, out_dir: Path):
    if res.budget_cut:
        with stats.lock:
            stats.unfinished += 1
        return
    cfg = parsed_config(case)
    est = estimate_check_bytes(cfg, lib) if case.command.startswith("check") else None
    json_out = "--json" in case.argv
    points = sweep_points(cfg.get("sweep")) if cfg else 1
    failed, category, signature, reason, warning = classify(case.command, res, est, args.max_memory_gb * GiB,
                                                             args.big_fraction, json_out, points)
    if warning and args.strict_output:
        failed, category = True, "output"
        signature = f"output | {case.command.split()[0]} | invalid --json output"
        reason = warning + "\n"
    with stats.lock:
        stats.cases += 1
        stats.per_command[case.command] += 1
        stats.exit_hist[rc_label(res)] += 1
        stats.case_seconds += res.elapsed
        stats.slowest.append((res.elapsed, case.idx, case.command))
        stats.slowest = sorted(stats.slowest, reverse=True)[:5]
        if res.rc == 2 and not failed:
            msg = first_line(res.stderr.decode("utf-8", "replace"))
            key = normalize(msg)
            rec = stats.exit2.setdefault(key, [0, msg[:300], case.command, "; ".join(case.desc)[:300]])
            rec[0] += 1
        if failed:
            if category == "KNOWN check-big-shape":
                stats.known += 1
            rec = stats.failures.setdefault(signature, {"count": 0, "saved": 0, "category": category,
                                                        "example": None, "first_case": case.idx})
            rec["count"] += 1
            d = save_case(out_dir, signature, case, res, reason, args.spsim, args.max_saved_per_signature, rec)
            if d and rec["example"] is None:
                rec["example"] = str(d)
        elif warning:
            rec = stats.warnings.setdefault(warning[:60], {"count": 0, "saved": 0, "example": None})
            rec["count"] += 1
            d = save_case(out_dir / "warnings", warning[:60], case, res, warning + "\n", args.spsim,
                          args.max_saved_per_signature, rec)
            if d and rec["example"] is None:
                rec["example"] = str(d)


def should_skip(case, args, lib, stats):
    """`check` does real math: a config whose check would run for minutes (and fits in memory, so spsim
    rightly runs it) is not a fuzz case. Big-memory checks are run: spsim must refuse them at once."""
    if args.no_skip_known or not case.command.startswith("check") or case.byte_mutated:
        return False
    cfg = parsed_config(case)
    flops = estimate_check_flops(cfg, lib)
    est = estimate_check_bytes(cfg, lib)
    return flops is not None and flops > args.max_check_flops and (est is None or est < 2 * args.max_memory_gb * GiB)


def fuzz(args, lib):
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="spsim-fuzz-"))
    stats = Stats()
    t0 = time.monotonic()
    last_progress = t0
    idx = 0
    pending = set()
    print(f"fuzz_configs: {len(lib.seeds)} seeds, seed={args.seed}, jobs={args.jobs}, budget={args.seconds}s, "
          f"timeout={args.timeout}s, memory cap={args.max_memory_gb} GiB, out={out_dir}", flush=True)
    try:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            while True:
                now = time.monotonic()
                if now - last_progress >= args.progress:
                    last_progress = now
                    with stats.lock:
                        print(f"[{now - t0:7.1f}s] cases {stats.cases}  failures "
                              f"{sum(r['count'] for r in stats.failures.values())} "
                              f"(distinct {len(stats.failures)})  "
                              f"skipped {stats.skipped}", flush=True)
                budget_left = now - t0 < args.seconds and (args.max_cases == 0 or idx < args.max_cases)
                while budget_left and len(pending) < args.jobs:
                    case = gen_case(idx, args.seed, lib)
                    idx += 1
                    if should_skip(case, args, lib, stats):
                        with stats.lock:
                            stats.skipped += 1
                        continue
                    # a case still running when the budget ends is stopped (counted as unfinished)
                    fut = pool.submit(execute, case, args, lib, work_root, t0 + args.seconds + args.grace)
                    fut.case = case
                    pending.add(fut)
                if not pending:
                    break
                done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                for fut in done:
                    try:
                        handle_result(fut.case, fut.result(), args, lib, stats, out_dir)
                    except Exception as e:  # a harness problem must not end the run
                        print(f"fuzz_configs: harness error on case {fut.case.idx} ({fut.case.desc}): "
                              f"{type(e).__name__}: {e}", flush=True)
                        with stats.lock:
                            stats.harness_errors += 1
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    elapsed = time.monotonic() - t0
    return report(stats, elapsed, out_dir, args)


def report(stats: Stats, elapsed, out_dir: Path, args):
    n_fail = sum(r["count"] for r in stats.failures.values())
    print(f"\n=== summary: {stats.cases} cases in {elapsed:.1f} s (child time {stats.case_seconds:.1f} s), "
          f"{stats.skipped} skipped (check cases past --max-check-flops), "
          f"{stats.unfinished} unfinished (stopped at the end of the budget)")
    print("cases per command:")
    for c, n in sorted(stats.per_command.items()):
        print(f"  {n:7d}  {c}")
    print("exit codes:")
    for c, n in sorted(stats.exit_hist.items()):
        print(f"  {n:7d}  {c}")
    if stats.harness_errors:
        print(f"harness errors (cases not run; a bug in this script): {stats.harness_errors}")
    print("slowest cases: " + ", ".join(f"#{i} {c} {t:.1f}s" for t, i, c in stats.slowest))
    by_cat = collections.Counter()
    for r in stats.failures.values():
        by_cat[r["category"]] += r["count"]
    print(f"failures: {n_fail} in {len(stats.failures)} signatures ("
          + ", ".join(f"{n} {c}" for c, n in sorted(by_cat.items())) + ")")
    order = {"crash": 0, "resource": 1, "message": 2, "slow-sweep": 3, "KNOWN check-big-shape": 4, "output": 5}
    for sig, r in sorted(stats.failures.items(), key=lambda kv: (order.get(kv[1]["category"], 9), -kv[1]["count"])):
        print(f"  {r['count']:6d}  {sig}\n          e.g. {r['example']}")
    if stats.warnings:
        print("warnings (not failures; --strict-output makes them failures):")
        for w, r in stats.warnings.items():
            print(f"  {r['count']:6d}  {w}  e.g. {r['example']}")
    msgs = out_dir / "exit2_messages.txt"
    with msgs.open("w", errors="backslashreplace") as f:  # messages may echo lone surrogates
        for key, (n, msg, cmd, desc) in sorted(stats.exit2.items(), key=lambda kv: -kv[1][0]):
            f.write(f"{n:6d}  {msg}\n        [{cmd}] {desc}\n")
    print(f"distinct exit-2 messages: {len(stats.exit2)} (listed in {msgs})")
    summary = {"cases": stats.cases, "elapsed_s": elapsed, "skipped": stats.skipped,
               "per_command": dict(stats.per_command), "exit_codes": dict(stats.exit_hist),
               "failures": {s: {k: v for k, v in r.items()} for s, r in stats.failures.items()},
               "warnings": {w: dict(r) for w, r in stats.warnings.items()}}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=True) + "\n")
    return 1 if n_fail else 0


# --------------------------------------------------------------------------------------------------
# Replay


def collect_replay(root: Path):
    cases = []
    for argv_file in sorted(root.rglob("argv.json")):
        d = argv_file.parent
        meta = json.loads(argv_file.read_text())
        files = {p.name: p.read_bytes() for p in d.iterdir()
                 if p.is_file() and p.name not in ("argv.json", "command.txt", "stdout", "stderr", "reason.txt")}
        cases.append((str(d), meta["argv"], meta.get("command", meta["argv"][0]), files))
    for cmd_file in sorted(root.rglob("*.cmd")):
        name = cmd_file.name[:-4]
        argv = shlex.split(cmd_file.read_text().strip())
        files = {}
        cfg = cmd_file.with_name(name + ".json")
        cl = cmd_file.with_name(name + ".cluster.json")
        if cfg.exists():
            files["config.json"] = cfg.read_bytes()
        if cl.exists():
            files["cluster.json"] = cl.read_bytes()
        argv = ["config.json" if a == "CONFIG" else "cluster.json" if a == "CLUSTER" else a for a in argv]
        label = argv[0] if argv else "?"
        if label == "check" and "--json" in argv:
            label = "check --json"
        cases.append((str(cmd_file), argv, label, files))
    return cases


def replay(args, lib):
    root = Path(args.replay)
    cases = collect_replay(root)
    if not cases:
        print(f"fuzz_configs: nothing to replay under {root}", file=sys.stderr)
        return 2
    work_root = Path(tempfile.mkdtemp(prefix="spsim-replay-"))
    n_fail = 0
    try:
        for i, (where, argv, label, files) in enumerate(cases):
            case = Case(i, label, argv, files, [where])
            res = execute(case, args, lib, work_root)
            cfg = parsed_config(case)
            est = estimate_check_bytes(cfg, lib) if label.startswith("check") else None
            points = sweep_points(cfg.get("sweep")) if cfg else 1
            failed, category, signature, reason, warning = classify(
                label, res, est, args.max_memory_gb * GiB, args.big_fraction, "--json" in argv, points)
            status = f"FAIL [{signature}]" if failed else "ok"
            n_fail += failed
            print(f"{status:8s} rc={rc_label(res):8s} {res.elapsed:6.2f}s  {where}", flush=True)
            if failed and args.verbose:
                print("    " + res.stderr.decode("utf-8", "replace")[:500].replace("\n", "\n    "))
    finally:
        shutil.rmtree(work_root, ignore_errors=True)
    print(f"replayed {len(cases)} cases: {n_fail} still fail")
    return 1 if n_fail else 0


def main():
    ap = argparse.ArgumentParser(description="Fuzz spsim's config parser and commands (see the header).")
    ap.add_argument("--spsim", required=True, help="path of the spsim binary")
    ap.add_argument("--source-dir", default=".", help="repository root (for configs/)")
    ap.add_argument("--seconds", type=float, default=60, help="time budget (default 60)")
    ap.add_argument("--seed", default="1", help="master seed; case N is generated from (seed, N)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run in parallel (default 1)")
    ap.add_argument("--out", default="fuzz-out", help="folder for failing cases and the summary")
    ap.add_argument("--max-memory-gb", type=float, default=4.0, help="RLIMIT_AS of each child (default 4)")
    ap.add_argument("--sanitized", action="store_true",
                    help="the binary is built with AddressSanitizer: limit the allocator and pass --max-memory "
                         "instead of RLIMIT_AS, and allow 4x the --timeout (ASan runs 3-5x slower)")
    ap.add_argument("--max-file-gb", type=float, default=2.0, help="RLIMIT_FSIZE of each child (default 2)")
    ap.add_argument("--timeout", type=float, default=20.0, help="wall-clock limit per case, s (default 20)")
    ap.add_argument("--slow-factor", type=float, default=6.0,
                    help="a simulate/compare/collective case past --timeout runs again with this many times "
                         "the timeout; finishing then is a warning (slow), not a failure (default 6; 1: off)")
    ap.add_argument("--replay", metavar="DIR", help="re-run saved cases / crashers under DIR instead of fuzzing")
    ap.add_argument("--max-cases", type=int, default=0, help="stop after this many generated cases (0: no limit)")
    ap.add_argument("--max-saved-per-signature", type=int, default=20)
    ap.add_argument("--max-check-flops", type=float, default=4e10,
                    help="skip check cases estimated to compute more than this (real math; default 4e10)")
    ap.add_argument("--known-limit", type=int, default=3,
                    help="after this many known check-big-shape failures, skip check cases whose estimated "
                         "memory exceeds the cap (default 3)")
    ap.add_argument("--no-skip-known", action="store_true", help="never skip known check-big-shape cases")
    ap.add_argument("--big-fraction", type=float, default=0.25,
                    help="a check shape is 'big' when its estimated memory is at least this fraction of the cap")
    ap.add_argument("--strict-output", action="store_true", help="invalid --json output is a failure")
    ap.add_argument("--progress", type=float, default=10.0, help="seconds between progress lines")
    ap.add_argument("--grace", type=float, default=2.0,
                    help="seconds past --seconds that running cases may take before they are stopped and "
                         "counted as unfinished (default 2)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.sanitized:
        args.timeout *= 4
    spsim = shutil.which(args.spsim) or args.spsim
    if not os.path.isfile(spsim) or not os.access(spsim, os.X_OK):
        print(f"fuzz_configs: not an executable: {args.spsim}", file=sys.stderr)
        return 2
    args.spsim = os.path.abspath(spsim)
    if args.jobs < 1:
        print("fuzz_configs: --jobs must be >= 1", file=sys.stderr)
        return 2
    lib = Library(Path(args.source_dir))
    if args.replay:
        return replay(args, lib)
    return fuzz(args, lib)


if __name__ == "__main__":
    sys.exit(main())
