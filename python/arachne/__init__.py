"""arachne -- Python binding of libarachne through ctypes (standard library only).

libarachne plans distributed LLM training on clusters that mix GPU types and
node sizes.  This module wraps its C ABI (include/arachne.h) in classes:

    import arachne
    with arachne.Model.preset("llama3-8b") as model, \\
         arachne.Cluster.parse("a100-40:8x4,h100:8x4") as cluster:
        cm = arachne.CostModel(model, cluster, global_batch=512)
        plan = arachne.Policy.create(seed=1).plan(cm, samples=4)
        print(plan.iteration_s, plan.to_dict()["templates"][0]["stages"])

Install with `pip install ./python` from the repository (offline; no build
dependency), or use it from the source tree (examples/python/arachne.py
loads this package).  The library is found in this order (load_library()):
a path given to load_library() or set in LIBRARY_PATH, else $ARACHNE_LIB (a
file, or a directory holding libarachne.so) -- each of these must load, a
wrong one is an error -- else the first that loads of: libarachne.so next to
this package, the source tree's lib/, the install prefix's
lib/libarachne.so.0 (install_prefix(): $ARACHNE_PREFIX at pip-install time,
default /usr/local), sys.prefix/lib, the system loader.  The error lists
every place tried.

Objects are made from what users write: Cluster("a100-40:4x4"),
Model("llama3-8b"), CostModel("llama3-8b", "h100:2x8", global_batch=256),
Policy("policy.arpol"), Plan("plan.json"); anything else raises TypeError.
Integers are range-checked (OverflowError naming the argument) and strings
with a NUL character refused (ValueError) before they reach C.

Every failure raises arachne.Error with .status (negative int), .status_name
(the library's text for it) and .message (the library's last error message).
Handles free their C object on close(), at the end of a `with` block, or when
garbage collected; a handle keeps the handles it borrows alive (a CostModel its
Model, Cluster and Profile) so they can be dropped in any order.  Closing a
handle while another thread is inside a call on it is safe: later calls raise
Error, the C object is freed when the running call returns.

Works on Python 3.8 and newer.  See docs/python.md.
"""

import ctypes
import ctypes.util
import functools
import json
import operator
import os
import re
import sys
import threading
from typing import Any, Dict, List, Optional, Set, Tuple

__all__ = [
    "Error", "load_library", "library_path", "library_search", "install_prefix", "cdef_path",
    "version", "version_number", "status_string",
    "gpu_catalog", "gpu_canonical_name", "gpu_get", "gpu_info",
    "Cluster", "Model", "Profile", "ProfileEntry", "CostModel", "Plan", "Policy",
    "search_random", "search_exhaustive", "Trainer", "Decision", "replan",
]

# --------------------------------------------------------------------------
# Constants (values pinned by include/arachne.h)
# --------------------------------------------------------------------------

OK = 0
E_INVALID_ARGUMENT = -1
E_NO_MEMORY = -2
E_PARSE = -3
E_NOT_FOUND = -4
E_INFEASIBLE = -5
E_IO = -6
E_CORRUPT = -7
E_BUFFER_TOO_SMALL = -8
E_UNSUPPORTED = -9
E_INVALID_PLAN = -10
E_OUT_OF_MEMORY_PLAN = -11
E_CANCELLED = -12

#: default refinement budget (ARACHNE_REFINE_EVALUATIONS): fills
REFINE_EVALUATIONS = 500

#: status number -> "ARACHNE_E_..." name
STATUS_NAMES = {
    0: "ARACHNE_OK", -1: "ARACHNE_E_INVALID_ARGUMENT", -2: "ARACHNE_E_NO_MEMORY",
    -3: "ARACHNE_E_PARSE", -4: "ARACHNE_E_NOT_FOUND", -5: "ARACHNE_E_INFEASIBLE",
    -6: "ARACHNE_E_IO", -7: "ARACHNE_E_CORRUPT", -8: "ARACHNE_E_BUFFER_TOO_SMALL",
    -9: "ARACHNE_E_UNSUPPORTED", -10: "ARACHNE_E_INVALID_PLAN",
    -11: "ARACHNE_E_OUT_OF_MEMORY_PLAN", -12: "ARACHNE_E_CANCELLED",
}

# GPU fields (arachne_gpu_field)
GPU_FIELDS = {
    "memory_bytes": 0, "flops": 1, "hbm_bytes_per_s": 2, "intra_bytes_per_s": 3,
    "inter_bytes_per_s": 4, "intra_latency_s": 5, "inter_latency_s": 6,
    "intra_link": 7,
}

# Intra-node link classes (arachne_link_class), the value of GPU field "intra_link"
LINK_NVLINK = 1
LINK_PCIE_P2P = 2
LINK_PCIE_HOST = 3

# Layer kinds (arachne_layer_kind)
LAYER_EMBED = 0
LAYER_DENSE = 1
LAYER_MOE = 2
LAYER_HEAD = 3
LAYER_MAMBA = 4
LAYER_ATTENTION = 5
LAYER_MLP = 6
LAYER_MOE_MLP = 7
LAYER_KINDS = {"embed": 0, "dense": 1, "moe": 2, "head": 3, "mamba": 4, "attention": 5, "mlp": 6, "moe_mlp": 7}

# Recompute modes (arachne_recompute)
RECOMPUTE_NONE = 0
RECOMPUTE_SELECTIVE = 1
RECOMPUTE_FULL = 2
RECOMPUTE_MODES = {"none": 0, "selective": 1, "full": 2}

# Model fields (arachne_model_field)
MODEL_FIELDS = {
    "blocks": 0, "hidden": 1, "heads": 2, "kv_heads": 3, "head_dim": 4, "ffn": 5,
    "vocab": 6, "experts": 7, "top_k": 8, "shared_experts": 9, "expert_ffn": 10,
    "dense_prefix": 11, "total_params": 12, "active_params": 13, "qk_norm": 14,
    "gated_mlp": 15, "tied_embeddings": 16, "mla": 17, "q_lora_rank": 18,
    "kv_lora_rank": 19, "qk_nope_dim": 20, "qk_rope_dim": 21, "v_head_dim": 22,
    "dense_blocks": 23, "moe_blocks": 24, "mamba_heads": 25, "mamba_head_dim": 26, "mamba_state": 27,
    "mamba_groups": 28, "mamba_conv": 29, "mamba_chunk": 30, "mamba_layers": 31, "attention_layers": 32,
    "mlp_layers": 33, "moe_mlp_layers": 34, "expert_latent": 35,
}

# Cost-model options (arachne_option): keyword -> number
OPTIONS = {
    "global_batch": 0, "seq_len": 1, "weight_bytes": 2, "grad_bytes": 3, "optim_bytes": 4,
    "dist_optimizer": 5, "recompute": 6, "headroom": 7, "expert_tiling": 8, "max_depth": 9,
    "overlap_grad_reduce": 10, "overlap_param_gather": 11, "tp_comm_overlap": 12,
    "recompute_norm_act": 13, "recompute_alt_mm": 14, "context_parallel": 15, "max_vp": 16,
    "ep_hierarchical": 17, "exact_batch": 18, "stage_reversal": 19,
    "priced_resplit": 20, "stage_moves": 21, "stage_major": 22,
    "fsdp_search": 23, "recompute_search": 24, "exact_division": 25,
}
_INT_OPTIONS = ("global_batch", "seq_len", "max_depth", "max_vp", "recompute_search", "exact_division")
_BOOL_OPTIONS = ("dist_optimizer", "expert_tiling", "overlap_grad_reduce", "overlap_param_gather",
                 "tp_comm_overlap", "recompute_norm_act", "recompute_alt_mm",
                 "context_parallel", "ep_hierarchical", "exact_batch", "stage_reversal",
                 "priced_resplit", "stage_moves", "stage_major", "fsdp_search")

# Plan fields (arachne_plan_field, arachne_template_field, arachne_stage_field,
# arachne_rank_field)
PLAN_FIELDS = {
    "iteration_s": 0, "iter_per_s": 1, "samples_per_s": 2, "tokens_per_s": 3, "mfu": 4,
    "bubble": 5, "gpus_used": 6, "gpus_total": 7, "templates": 8, "ranks": 9,
    "planning_s": 10, "evaluations": 11, "global_batch": 12, "seq_len": 13, "samples_run": 14,
    "recompute": 15,
}
_PLAN_INT_FIELDS = ("gpus_used", "gpus_total", "templates", "ranks", "evaluations",
                    "global_batch", "seq_len", "samples_run", "recompute")
TEMPLATE_FIELDS = {"depth": 0, "replicas": 1, "micro_batch": 2, "micro_batches": 3, "pipeline_s": 4, "cp": 5,
                   "vp": 6, "fsdp": 7}
_TEMPLATE_INT_FIELDS = ("depth", "replicas", "micro_batch", "micro_batches", "cp", "vp")
STAGE_FIELDS = {
    "tp": 0, "first_layer": 1, "end_layer": 2, "ep": 3, "etp": 4, "edp": 5, "compute_s": 6,
    "tp_comm_s": 7, "ep_comm_s": 8, "p2p_s": 9, "sync_s": 10, "stage_s": 11, "memory_bytes": 12,
}
_STAGE_INT_FIELDS = ("tp", "first_layer", "end_layer", "ep", "etp", "edp")
RANK_FIELDS = {"rank": 0, "node": 1, "gpu": 2, "template": 3, "replica": 4, "stage": 5, "tp_rank": 6}

# Recorded header fields of a plan file (arachne_plan_header) and their Python types
PLAN_HEADER_FIELDS = {
    "model": 0, "cluster": 1, "global_batch": 2, "seq_len": 3, "recompute": 4,
    "dist_optimizer": 5, "headroom": 6, "iteration_s": 7,
    "weight_bytes": 8, "grad_bytes": 9, "optim_bytes": 10,
    "model_json": 11, "cluster_json": 12, "profile_json": 13, "profile_crc32": 14,
    "overlap_grad_reduce": 15, "overlap_param_gather": 16, "tp_comm_overlap": 17,
}
_PLAN_HEADER_TYPES = {"global_batch": int, "seq_len": int, "headroom": float, "iteration_s": float,
                      "weight_bytes": float, "grad_bytes": float, "optim_bytes": float,
                      "dist_optimizer": lambda s: s == "1", "overlap_grad_reduce": lambda s: s == "1",
                      "overlap_param_gather": lambda s: s == "1", "tp_comm_overlap": lambda s: s == "1"}

# Launcher export formats (arachne_export_format)
EXPORT_FORMATS = {"ranks": 0, "megatron": 1, "torchtitan": 2, "flashflex": 3, "sailor": 4, "torchtitan-cli": 5}

# Policy fields (arachne_policy_field)
POLICY_FIELDS = {
    "params": 0, "hidden": 1, "layers": 2, "state_dim": 3, "comp_dim": 4,
    "schema_version": 5, "train_steps": 6,
}

# Trainer options (arachne_train_option): keyword -> number
TRAIN_OPTIONS = {
    "updates": 0, "group_size": 1, "ppo_epochs": 2, "clip": 3, "learning_rate": 4, "entropy": 5,
    "force_depth_start": 6, "force_depth_end": 7, "sil_interval": 8, "sil_weight": 9, "penalty": 10,
    "max_grad_norm": 11, "sil_neighbours": 12, "sil_per_depth": 13, "max_steps": 14, "weight_decay": 15,
    "sil_clip": 16, "uniform_type_rollouts": 17, "threads": 18, "pcgrad": 19,
    "sil_top": 20, "greedy_rollouts": 21, "size_curriculum": 22, "refine_interval": 23,
    "refine_evaluations": 24, "entropy_end_scale": 25, "entropy_decay_start": 26,
    "rollout_interval": 27, "rollout_evaluations": 28, "rollout_weight": 29, "sil_epochs": 30,
}
_TRAIN_INT_OPTIONS = ("updates", "group_size", "ppo_epochs", "sil_interval", "sil_neighbours",
                      "sil_per_depth", "max_steps", "uniform_type_rollouts", "threads", "pcgrad",
                      "greedy_rollouts", "size_curriculum", "refine_interval", "refine_evaluations",
                      "entropy_decay_start", "rollout_interval", "rollout_evaluations",
                      "sil_epochs")

# Trainer statistics (arachne_train_stat); the first four are per composition
TRAIN_STATS = {
    "best_iter_per_s": 0, "mean_reward": 1, "evaluations": 2, "ref_iter_per_s": 3, "updates_done": 4,
    "mean_norm_reward": 5, "mean_norm_best": 6, "entropy_mean": 7, "grad_norm": 8, "compositions": 9,
    "force_depth_p": 10, "refined_plans": 11, "refine_misses": 12, "entropy_coef": 13,
}
_TRAIN_COMP_STATS = ("best_iter_per_s", "mean_reward", "evaluations", "ref_iter_per_s")
_TRAIN_INT_STATS = ("evaluations", "updates_done", "compositions", "refined_plans", "refine_misses")

# Replan options (arachne_replan_option): keyword of arachne.replan() -> number
REPLAN_OPTIONS = {"horizon_s": 0, "restart_cost_s": 1, "samples": 2, "seed": 3, "refine_evaluations": 4}
REPLAN_KEEP = 0
REPLAN_SWITCH = 1
REPLAN_ACTIONS = {0: "keep", 1: "switch"}
REPLAN_REASONS = {0: "not-faster", 1: "gain-too-small", 2: "gain", 3: "running-invalid"}  # the names of the decision JSON

# Decision fields (arachne_decision_field)
DECISION_FIELDS = {
    "action": 0, "reason": 1, "running_valid": 2, "old_samples_per_s": 3, "new_samples_per_s": 4,
    "samples_gained": 5, "samples_lost": 6, "net_samples": 7, "cost_s": 8, "migration_s": 9,
    "restart_s": 10, "horizon_s": 11, "bytes_moved": 12, "migrations": 13, "slowest_rank": 14,
    "idle_gpus": 15, "gpus_left": 16,
}
_DECISION_INT_FIELDS = ("action", "reason", "running_valid", "bytes_moved", "migrations", "slowest_rank",
                        "idle_gpus", "gpus_left")

# Migration entry fields (arachne_migration_field)
MIGRATION_FIELDS = {
    "src_rank": 0, "dst_rank": 1, "first_layer": 2, "end_layer": 3, "bytes": 4, "seconds": 5,
    "src_node": 6, "dst_node": 7, "link": 8,
}
_MIGRATION_INT_FIELDS = ("src_rank", "dst_rank", "first_layer", "end_layer", "bytes", "src_node", "dst_node")
MIGRATION_LINKS = {0: "intra", 1: "inter", 2: "checkpoint"}

# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


class Error(Exception):
    """A libarachne failure.

    status       negative arachne_status number (compare with arachne.E_*)
    status_name  the library's fixed text for it (arachne_status_string)
    message      the library's message (arachne_last_error), naming the input
                 and the position
    """

    def __init__(self, status, message, status_name=None):
        # type: (int, str, Optional[str]) -> None
        self.status = int(status)
        if status_name is None:
            status_name = _status_text(self.status)
        self.status_name = status_name
        self.message = message
        Exception.__init__(self, "%s: %s" % (status_name, message) if message else status_name)

    def __reduce__(self):
        return (Error, (self.status, self.message, self.status_name))

    @property
    def code_name(self):
        # type: () -> str
        """The enum name, e.g. "ARACHNE_E_PARSE"."""
        return STATUS_NAMES.get(self.status, "ARACHNE_E_UNKNOWN(%d)" % self.status)


def _status_text(status):
    # type: (int) -> str
    lib = _lib
    if lib is not None and getattr(lib, "arachne_status_string", None) is not None:
        try:
            return _dec(lib.arachne_status_string(status))
        except Exception:  # pragma: no cover - library unusable
            pass
    return STATUS_NAMES.get(status, "unknown status")


def _check(rc):
    # type: (int) -> int
    """Raises Error for a negative status; reads the message first."""
    if rc < 0:
        msg = _dec(_lib.arachne_last_error())
        raise Error(rc, msg, _dec(_lib.arachne_status_string(rc)))
    return rc


# --------------------------------------------------------------------------
# Library loading and signatures
# --------------------------------------------------------------------------

class _ClusterS(ctypes.Structure):
    pass


class _ModelS(ctypes.Structure):
    pass


class _ProfileS(ctypes.Structure):
    pass


class _CostModelS(ctypes.Structure):
    pass


class _PolicyS(ctypes.Structure):
    pass


class _PlanS(ctypes.Structure):
    pass


class _TrainerS(ctypes.Structure):
    pass


class _ReplanOptionsS(ctypes.Structure):
    pass


class _ReplanDecisionS(ctypes.Structure):
    pass


_P = ctypes.POINTER
_CLUSTER = _P(_ClusterS)
_MODEL = _P(_ModelS)
_PROFILE = _P(_ProfileS)
_COST = _P(_CostModelS)
_POLICY = _P(_PolicyS)
_PLAN = _P(_PlanS)
_TRAINER = _P(_TrainerS)
_REPLAN_OPTIONS = _P(_ReplanOptionsS)
# arachne_train_callback(user, update, updates, mean_reward, best_iter_per_s, ncompositions)
TRAIN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                                  ctypes.POINTER(ctypes.c_double), ctypes.c_int)
_REPLAN_DECISION = _P(_ReplanDecisionS)
# C handle type name -> ctypes structure (tests match this against the header)
_HANDLE_STRUCTS = {
    "arachne_cluster": _ClusterS, "arachne_model": _ModelS, "arachne_profile": _ProfileS,
    "arachne_cost_model": _CostModelS, "arachne_policy": _PolicyS, "arachne_plan": _PlanS,
    "arachne_trainer": _TrainerS,
    "arachne_replan_options": _ReplanOptionsS, "arachne_replan_decision": _ReplanDecisionS,
}
_int = ctypes.c_int
_uint = ctypes.c_uint
_dbl = ctypes.c_double
_long = ctypes.c_long
_u64 = ctypes.c_uint64
_size = ctypes.c_size_t
_str = ctypes.c_char_p
_pint = _P(ctypes.c_int)
_pdbl = _P(ctypes.c_double)
_pstr = _P(ctypes.c_char_p)
_psize = _P(ctypes.c_size_t)
_buf = _P(ctypes.c_char)  # char *buf (caller buffer): a ctypes string buffer or None

# name -> (restype, argtypes).  tests/python checks this table against the
# declarations in include/arachne.h (argument count and kind).
_SIGNATURES = {
    # version, status, errors
    "arachne_version": (_uint, []),
    "arachne_version_string": (_str, []),
    "arachne_status_string": (_str, [_int]),
    "arachne_last_error": (_str, []),
    "arachne_clear_error": (None, []),
    # gpu catalog
    "arachne_gpu_catalog_count": (_int, []),
    "arachne_gpu_catalog_name": (_int, [_int, _pstr]),
    "arachne_gpu_canonical_name": (_int, [_str, _pstr]),
    "arachne_gpu_get": (_int, [_str, _int, _pdbl]),
    # cluster
    "arachne_cluster_create": (_int, [_P(_CLUSTER)]),
    "arachne_cluster_parse": (_int, [_P(_CLUSTER), _str]),
    "arachne_cluster_from_json": (_int, [_P(_CLUSTER), _str, _size]),
    "arachne_cluster_load": (_int, [_P(_CLUSTER), _str]),
    "arachne_cluster_open": (_int, [_P(_CLUSTER), _str]),
    "arachne_cluster_save": (_int, [_CLUSTER, _str]),
    "arachne_cluster_destroy": (None, [_CLUSTER]),
    "arachne_cluster_add_gpu_type": (_int, [_CLUSTER, _str, _dbl, _dbl, _dbl, _dbl, _dbl]),
    "arachne_cluster_set_gpu_field": (_int, [_CLUSTER, _str, _int, _dbl]),
    "arachne_cluster_add_nodes": (_int, [_CLUSTER, _str, _int, _int]),
    "arachne_cluster_set_link_bandwidth": (_int, [_CLUSTER, _str, _str, _dbl]),
    "arachne_cluster_link_bandwidth": (_int, [_CLUSTER, _str, _str, _pdbl]),
    "arachne_cluster_type_count": (_int, [_CLUSTER, _pint]),
    "arachne_cluster_type_name": (_int, [_CLUSTER, _int, _pstr]),
    "arachne_cluster_gpu_count": (_int, [_CLUSTER, _str, _pint]),
    "arachne_cluster_node_count": (_int, [_CLUSTER, _str, _pint]),
    "arachne_cluster_node": (_int, [_CLUSTER, _int, _pstr, _pint]),
    "arachne_cluster_largest_node": (_int, [_CLUSTER, _str, _pint]),
    "arachne_cluster_to_string": (_int, [_CLUSTER, _pstr]),
    "arachne_cluster_to_json": (_int, [_CLUSTER, _pstr]),
    "arachne_cluster_gpu_get": (_int, [_CLUSTER, _str, _int, _pdbl]),
    # model
    "arachne_model_preset": (_int, [_P(_MODEL), _str]),
    "arachne_model_preset_count": (_int, []),
    "arachne_model_preset_name": (_str, [_int]),
    "arachne_model_from_json": (_int, [_P(_MODEL), _str, _size]),
    "arachne_model_load": (_int, [_P(_MODEL), _str]),
    "arachne_model_open": (_int, [_P(_MODEL), _str]),
    "arachne_model_save": (_int, [_MODEL, _str]),
    "arachne_model_to_json": (_int, [_MODEL, _pstr]),
    "arachne_model_destroy": (None, [_MODEL]),
    "arachne_model_name": (_int, [_MODEL, _pstr]),
    "arachne_model_get": (_int, [_MODEL, _int, _pdbl]),
    "arachne_model_layer_params": (_int, [_MODEL, _int, _pdbl]),
    "arachne_model_layer_flops": (_int, [_MODEL, _int, _int, _int, _pdbl]),
    "arachne_model_layer_act_bytes": (_int, [_MODEL, _int, _int, _int, _int, _int, _pdbl]),
    # profile
    "arachne_profile_create": (_int, [_P(_PROFILE), _str, _int]),
    "arachne_profile_destroy": (None, [_PROFILE]),
    "arachne_profile_add": (_int, [_PROFILE, _str, _int, _int, _int, _dbl, _dbl, _dbl, _dbl]),
    "arachne_profile_lookup": (_int, [_PROFILE, _str, _int, _int, _int, _pdbl, _pdbl, _pdbl, _pdbl]),
    "arachne_profile_count": (_int, [_PROFILE, _pint]),
    "arachne_profile_model_name": (_int, [_PROFILE, _pstr]),
    "arachne_profile_seq_len": (_int, [_PROFILE, _pint]),
    "arachne_profile_entry": (_int, [_PROFILE, _int, _pstr, _pint, _pint, _pint,
                                     _pdbl, _pdbl, _pdbl, _pdbl]),
    "arachne_profile_load": (_int, [_P(_PROFILE), _str]),
    "arachne_profile_from_json": (_int, [_P(_PROFILE), _str, _size]),
    "arachne_profile_save": (_int, [_PROFILE, _str]),
    "arachne_profile_to_json": (_int, [_PROFILE, _buf, _size, _psize]),
    "arachne_profile_import_sailor": (_int, [_P(_PROFILE), _str, _str]),
    "arachne_profile_generate": (_int, [_P(_PROFILE), _MODEL, _CLUSTER, _int]),
    "arachne_profile_generate_gpu": (_int, [_PROFILE, _MODEL, _CLUSTER, _str]),
    # cost model
    "arachne_cost_model_create": (_int, [_P(_COST), _MODEL, _CLUSTER, _PROFILE]),
    "arachne_cost_model_destroy": (None, [_COST]),
    "arachne_cost_model_set": (_int, [_COST, _int, _dbl]),
    "arachne_cost_model_get": (_int, [_COST, _int, _pdbl]),
    "arachne_cost_model_price": (_int, [_COST, _PLAN]),
    # plan
    "arachne_plan_destroy": (None, [_PLAN]),
    "arachne_plan_to_json": (_int, [_PLAN, _pstr]),
    "arachne_plan_save": (_int, [_PLAN, _str]),
    "arachne_plan_load": (_int, [_P(_PLAN), _COST, _str]),
    "arachne_plan_from_json": (_int, [_P(_PLAN), _COST, _str, _size]),
    "arachne_plan_from_parallel": (_int, [_P(_PLAN), _COST, _str]),
    "arachne_plan_from_sailor": (_int, [_P(_PLAN), _COST, _str, _size]),
    "arachne_plan_get": (_int, [_PLAN, _int, _pdbl]),
    "arachne_plan_template_get": (_int, [_PLAN, _int, _int, _pdbl]),
    "arachne_plan_stage_get": (_int, [_PLAN, _int, _int, _int, _pdbl]),
    "arachne_plan_stage_gpu": (_int, [_PLAN, _int, _int, _pstr]),
    "arachne_plan_rank_get": (_int, [_PLAN, _int, _int, _pint]),
    "arachne_plan_method": (_int, [_PLAN, _pstr]),
    "arachne_plan_export": (_int, [_PLAN, _int, _buf, _size, _psize]),
    "arachne_plan_file_header": (_int, [_str, _int, _buf, _size, _psize]),
    # searches
    "arachne_search_random": (_int, [_P(_PLAN), _COST, _long, _u64, _dbl]),
    "arachne_search_exhaustive": (_int, [_P(_PLAN), _COST, _int, _dbl]),
    # policy
    "arachne_policy_create": (_int, [_P(_POLICY), _u64, _int, _int]),
    "arachne_policy_load": (_int, [_P(_POLICY), _str]),
    "arachne_policy_save": (_int, [_POLICY, _str]),
    "arachne_policy_destroy": (None, [_POLICY]),
    "arachne_policy_info": (_int, [_POLICY, _int, _pdbl]),
    "arachne_policy_metadata": (_int, [_POLICY, _pstr]),
    "arachne_policy_set_metadata": (_int, [_POLICY, _str]),
    "arachne_plan_build": (_int, [_P(_PLAN), _POLICY, _COST, _int, _u64]),
    "arachne_plan_build_refined": (_int, [_P(_PLAN), _POLICY, _COST, _int, _u64, _long, _dbl]),
    "arachne_plan_rollout": (_int, [_P(_PLAN), _POLICY, _COST, _long, _dbl]),
    "arachne_plan_refine": (_int, [_P(_PLAN), _PLAN, _COST, _long, _dbl]),
    "arachne_plan_to_svg": (_int, [_PLAN, _buf, _size, _psize]),
    "arachne_plan_save_svg": (_int, [_PLAN, _str]),
    # trainer
    "arachne_trainer_create": (_int, [_P(_TRAINER), _POLICY, _u64]),
    "arachne_trainer_destroy": (None, [_TRAINER]),
    "arachne_trainer_add_composition": (_int, [_TRAINER, _COST, _str]),
    "arachne_trainer_set": (_int, [_TRAINER, _int, _dbl]),
    "arachne_trainer_get_option": (_int, [_TRAINER, _int, _pdbl]),
    "arachne_trainer_run": (_int, [_TRAINER, _int, TRAIN_CALLBACK, ctypes.c_void_p]),
    "arachne_trainer_get": (_int, [_TRAINER, _int, _int, _pdbl]),
    "arachne_trainer_composition_name": (_int, [_TRAINER, _int, _pstr]),
    "arachne_trainer_best_plan": (_int, [_TRAINER, _int, _P(_PLAN)]),
    "arachne_trainer_save_checkpoint": (_int, [_TRAINER, _str]),
    "arachne_trainer_load_checkpoint": (_int, [_TRAINER, _str]),
    # replan
    "arachne_replan_options_create": (_int, [_P(_REPLAN_OPTIONS)]),
    "arachne_replan_options_destroy": (None, [_REPLAN_OPTIONS]),
    "arachne_replan_options_set": (_int, [_REPLAN_OPTIONS, _int, _dbl]),
    "arachne_replan_options_get": (_int, [_REPLAN_OPTIONS, _int, _pdbl]),
    "arachne_replan": (_int, [_P(_PLAN), _P(_REPLAN_DECISION), _POLICY, _COST, _PLAN, _REPLAN_OPTIONS]),
    "arachne_replan_decision_destroy": (None, [_REPLAN_DECISION]),
    "arachne_replan_get": (_int, [_REPLAN_DECISION, _int, _pdbl]),
    "arachne_replan_explain": (_int, [_REPLAN_DECISION, _pstr]),
    "arachne_replan_idle_gpus": (_int, [_REPLAN_DECISION, _str, _pint]),
    "arachne_replan_migration_get": (_int, [_REPLAN_DECISION, _int, _int, _pdbl]),
    "arachne_replan_to_json": (_int, [_REPLAN_DECISION, _pstr]),
}

# Header functions the binding leaves out on purpose, with the reason
# (tests/python/test_core.py checks that every other one is bound).
_NOT_BOUND = {
    "arachne_file_write": "the library's atomic writer is for C callers; Python code writes its own files",
}

# Functions the library must export for the module to load at all.
_REQUIRED = ("arachne_version", "arachne_version_string", "arachne_status_string",
             "arachne_last_error", "arachne_clear_error")

#: Set before first use to force a library file (same as load_library(path)).
LIBRARY_PATH = None  # type: Optional[str]

_lib = None  # type: Any
_lib_path = None  # type: Optional[str]
_lib_missing = ()  # type: Tuple[str, ...]
_load_lock = threading.Lock()
_refs_lock = threading.RLock()  # guards the borrower and in-flight counts of handles
_HERE = os.path.dirname(os.path.abspath(__file__))
_REPO = os.path.normpath(os.path.join(_HERE, os.pardir, os.pardir))
_SONAME = "libarachne.so.0"  # the ABI this binding declares (major version 0)

try:  # written by python/arachne_build.py into an installed package
    from . import _build_info as _BUILD  # type: ignore
except ImportError:  # running from the source tree (or through examples/python)
    _BUILD = None


def _in_source_tree():
    # type: () -> bool
    """True when this package is python/arachne of a libarachne checkout."""
    return os.path.isfile(os.path.join(_REPO, "include", "arachne.h"))


def install_prefix():
    # type: () -> str
    """The `make install` prefix this package searches (set by ARACHNE_PREFIX
    when it was pip-installed; /usr/local by default)."""
    return getattr(_BUILD, "PREFIX", None) or "/usr/local"


def _candidates(path):
    # type: (Optional[str]) -> Tuple[List[Tuple[str, str]], bool]
    """(how, path) pairs in lookup order, and whether the first is binding
    (must load: no fallback when it does not)."""
    if path is not None:
        return [("load_library() argument", os.fspath(path))], True
    if LIBRARY_PATH is not None:
        return [("arachne.LIBRARY_PATH", os.fspath(LIBRARY_PATH))], True
    env = os.environ.get("ARACHNE_LIB")
    if env:
        return [("ARACHNE_LIB", env)], True
    out = [("next to the package", os.path.join(_HERE, "libarachne.so"))]  # type: List[Tuple[str, str]]
    if _in_source_tree():
        out.append(("source tree lib/", os.path.join(_REPO, "lib", "libarachne.so")))
    out.append(("install prefix", os.path.join(install_prefix(), "lib", _SONAME)))
    prefix_lib = os.path.join(sys.prefix, "lib", _SONAME)
    if prefix_lib != out[-1][1]:
        out.append(("Python prefix", prefix_lib))
    # The dynamic loader itself: LD_LIBRARY_PATH, the ld.so cache, /usr/lib...
    out.append(("system loader", _SONAME))
    found = ctypes.util.find_library("arachne")
    if found and found != _SONAME:
        out.append(("ctypes.util.find_library", found))
    return out, False


def library_search():
    # type: () -> List[Tuple[str, str]]
    """The places load_library() would try now, as (how, path) pairs."""
    return _candidates(None)[0]


def load_library(path=None):
    # type: (Optional[str]) -> ctypes.CDLL
    """Loads libarachne (once) and declares every function's types.

    Lookup: the path given here (or arachne.LIBRARY_PATH), else the
    ARACHNE_LIB environment variable -- each a library file or a directory
    holding libarachne.so, and each binding: when it does not load, that is
    an error, never a silent fallback -- else, first that loads:
    libarachne.so next to this package, the source tree's lib/ (when the
    package runs from a checkout), PREFIX/lib/libarachne.so.0 of the install
    prefix (install_prefix()), sys.prefix/lib, then the system loader
    (LD_LIBRARY_PATH, ld.so cache) and ctypes.util.find_library.
    Calling it again with a path replaces the library for handles made later
    (do that before making any handle).  Returns the ctypes.CDLL.
    Raises OSError listing every place tried and why each failed.
    """
    global _lib, _lib_path, _lib_missing
    with _load_lock:
        if _lib is not None and path is None:
            return _lib
        cands, binding = _candidates(path)
        errors = []
        for how, cand in cands:
            if os.path.isdir(cand):
                cand = os.path.join(cand, "libarachne.so")
            if os.sep in cand and not os.path.exists(cand):
                errors.append("%s: %s does not exist" % (how, cand))
                continue
            try:
                lib = ctypes.CDLL(cand)
                _declare(lib)
            except (OSError, AttributeError) as e:
                errors.append("%s: %s: %s" % (how, cand, e))
                continue
            _lib, _lib_path = lib, _loaded_path(lib, cand)
            _lib_missing = tuple(sorted(n for n in _SIGNATURES if getattr(lib, "_ar_" + n, None) is None))
            return lib
        if binding:
            raise OSError("libarachne: %s (no other place is tried when %s is set)"
                          % (errors[0], cands[0][0]))
        raise OSError("libarachne not found (build it with `make`, `make install` it, or set ARACHNE_LIB); "
                      "tried:\n  " + "\n  ".join(errors))


def _loaded_path(lib, cand):
    # type: (Any, str) -> str
    """The file a CDLL came from: cand when it is a path, else the loader's pick."""
    if os.sep in cand:
        return cand
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                if "libarachne" in line and "/" in line:
                    return line[line.index("/"):].strip()
    except OSError:
        pass
    return cand


def _declare(lib):
    # type: (Any) -> None
    for name in _REQUIRED:
        getattr(lib, name)  # AttributeError when absent
    for name, (res, args) in _SIGNATURES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            setattr(lib, "_ar_" + name, None)
            continue
        f.restype = res
        f.argtypes = args
        setattr(lib, "_ar_" + name, _checked(name, f, args))


def _L():
    # type: () -> Any
    return _lib if _lib is not None else load_library()


# Integer ranges of the C parameter types: ctypes would wrap a Python int
# that does not fit (2**32 + 1 passed as int arrives as 1), so every integer
# is checked before the call.
_INT_RANGES = {}  # type: Dict[Any, Tuple[int, int]]
for _t, _signed in ((ctypes.c_int, True), (ctypes.c_uint, False), (ctypes.c_long, True),
                    (ctypes.c_uint64, False), (ctypes.c_size_t, False)):
    _bits = 8 * ctypes.sizeof(_t)
    _INT_RANGES[_t] = (-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1) if _signed else (0, (1 << _bits) - 1)
_C_TYPE_NAMES = {ctypes.c_int: "int", ctypes.c_uint: "unsigned", ctypes.c_long: "long",
                 ctypes.c_uint64: "uint64_t", ctypes.c_size_t: "size_t"}


class _Named(int):
    """An int argument that carries its Python parameter name, so a range
    error names it ("count = 4294967297 ...")."""


def _iarg(value, name):
    # type: (Any, str) -> int
    """An integer argument: int, bool, an object with __index__, or a float
    with an integral value; TypeError / ValueError naming `name` otherwise.
    The range is checked by the C call's wrapper (_checked)."""
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or value != int(value):
            raise ValueError("%s must be a whole number, got %r" % (name, value))
        value = int(value)
    try:
        v = _Named(operator.index(value))
    except TypeError:
        raise TypeError("%s must be an integer, got %s" % (name, type(value).__name__))
    v.argname = name
    return v


def _farg(value, name):
    # type: (Any, str) -> float
    """A float argument; TypeError / OverflowError naming `name`."""
    if isinstance(value, (str, bytes)):
        raise TypeError("%s must be a number, got %s" % (name, type(value).__name__))
    try:
        return float(value)
    except OverflowError:
        raise OverflowError("%s = %d does not fit in a C double" % (name, value))
    except (TypeError, ValueError):
        raise TypeError("%s must be a number, got %s" % (name, type(value).__name__))


def _checked(name, f, argtypes):
    # type: (str, Any, List[Any]) -> Any
    """Wraps a C function: integer arguments out of their C type's range
    raise OverflowError and strings with a NUL byte raise ValueError, each
    naming the argument, before anything reaches C."""
    checks = [(i, t) for i, t in enumerate(argtypes) if t in _INT_RANGES or t is _str]
    if not checks:
        return f

    def call(*args):
        for i, t in checks:
            if i >= len(args):
                break
            a = args[i]
            what = getattr(a, "argname", None) or "argument %d" % (i + 1)
            if t is _str:
                if isinstance(a, bytes) and b"\0" in a:
                    raise ValueError("%s of %s contains a NUL character" % (what, name))
            elif isinstance(a, int):
                lo, hi = _INT_RANGES[t]
                if not lo <= a <= hi:
                    raise OverflowError("%s = %d is out of range for %s (C %s, %d..%d)"
                                        % (what, a, name, _C_TYPE_NAMES[t], lo, hi))
        return f(*args)
    call.__name__ = name
    return call


def _fn(name):
    # type: (str) -> Any
    """The bound C function, or Error(E_UNSUPPORTED) when this build lacks it."""
    f = getattr(_L(), "_ar_" + name, None)
    if f is None:
        raise Error(E_UNSUPPORTED, "%s is not exported by %s (library %s)"
                    % (name, _lib_path, version()))
    return f


def has_function(name):
    # type: (str) -> bool
    """True when the loaded library exports the C function `name`."""
    return getattr(_L(), "_ar_" + name, None) is not None


def library_path():
    # type: () -> str
    """Path of the loaded library (loads it if needed)."""
    _L()
    return _lib_path or ""


def cdef_path():
    # type: () -> str
    """The header for cffi's ffi.cdef() -- include/arachne.h preprocessed by
    `make` (build/arachne_cdef.h, installed as share/arachne/arachne_cdef.h
    and packed into the wheel).  Looked for next to this package, in the
    source tree's build/, beside the loaded library (LIBDIR/../share/arachne)
    and under install_prefix().  OSError listing the places when none exists.

        import cffi, arachne
        ffi = cffi.FFI()
        ffi.cdef(open(arachne.cdef_path()).read())
        lib = ffi.dlopen(arachne.library_path())
    """
    places = [os.path.join(_HERE, "arachne_cdef.h")]
    if _in_source_tree():
        places.append(os.path.join(_REPO, "build", "arachne_cdef.h"))
    try:
        libdir = os.path.dirname(os.path.realpath(library_path()))
        places.append(os.path.normpath(os.path.join(libdir, os.pardir, "share", "arachne", "arachne_cdef.h")))
    except OSError:
        pass
    places.append(os.path.join(install_prefix(), "share", "arachne", "arachne_cdef.h"))
    for p in places:
        if os.path.isfile(p):
            return p
    raise OSError("arachne_cdef.h not found (run `make`); tried: " + ", ".join(places))


def _enc(s, name="string"):
    # type: (Any, str) -> bytes
    """A str/bytes argument as bytes for C; TypeError for other types and
    ValueError for an embedded NUL (C would see the text cut there)."""
    if isinstance(s, str):
        s = s.encode("utf-8")
    elif not isinstance(s, bytes):
        raise TypeError("%s must be str, got %s" % (name, type(s).__name__))
    if b"\0" in s:
        raise ValueError("%s contains a NUL character at offset %d" % (name, s.index(b"\0")))
    return s


def _path(p, name="path"):
    # type: (Any, str) -> bytes
    """A file path (str, bytes or os.PathLike) as bytes for C."""
    if not isinstance(p, (str, bytes)) and not hasattr(p, "__fspath__"):
        raise TypeError("%s must be a path (str, bytes or os.PathLike), got %s" % (name, type(p).__name__))
    b = os.fsencode(os.fspath(p))
    if b"\0" in b:
        raise ValueError("%s contains a NUL character" % name)
    return b


def _dec(b):
    # type: (Optional[bytes]) -> str
    return b.decode("utf-8", "replace") if b is not None else ""


def _opt_enc(s, name="string"):
    # type: (Any, str) -> Optional[bytes]
    return None if s is None else _enc(s, name)


def _kind(kind):
    # type: (Any) -> int
    if isinstance(kind, str):
        try:
            return LAYER_KINDS[kind.lower()]
        except KeyError:
            raise Error(E_INVALID_ARGUMENT, "unknown layer kind '%s' (want one of %s)"
                        % (kind, ", ".join(LAYER_KINDS)))
    return _iarg(kind, "layer kind")


def _recompute(mode):
    # type: (Any) -> int
    if isinstance(mode, str):
        try:
            return RECOMPUTE_MODES[mode.lower()]
        except KeyError:
            raise Error(E_INVALID_ARGUMENT, "unknown recompute mode '%s' (want none, selective or full)"
                        % mode)
    return _iarg(mode, "recompute mode")


def _field(table, field, what):
    # type: (Dict[str, int], Any, str) -> int
    if isinstance(field, str):
        try:
            return table[field.lower()]
        except KeyError:
            raise Error(E_INVALID_ARGUMENT, "unknown %s field '%s' (want one of %s)"
                        % (what, field, ", ".join(table)))
    return _iarg(field, "%s field" % what)


def _intish(x):
    # type: (float) -> Any
    return int(x) if x == int(x) else x


# --------------------------------------------------------------------------
# Library-wide functions
# --------------------------------------------------------------------------

def version():
    # type: () -> str
    """Version string "MAJOR.MINOR.PATCH" of the loaded library."""
    return _dec(_L().arachne_version_string())


def version_number():
    # type: () -> int
    """MAJOR*10000 + MINOR*100 + PATCH of the loaded library."""
    return int(_L().arachne_version())


def status_string(status):
    # type: (int) -> str
    """The library's fixed text for a status code (a C int: OverflowError
    outside its range, ValueError for a float that is not whole)."""
    return _dec(_fn("arachne_status_string")(_iarg(status, "status")))


def last_error():
    # type: () -> str
    """The calling thread's last library error message."""
    return _dec(_L().arachne_last_error())


def gpu_catalog():
    # type: () -> List[str]
    """Canonical names of the built-in GPU catalog, in catalog order."""
    n = _fn("arachne_gpu_catalog_count")()
    out = []
    for i in range(n):
        s = ctypes.c_char_p()
        _check(_fn("arachne_gpu_catalog_name")(i, ctypes.byref(s)))
        out.append(_dec(s.value))
    return out


def gpu_canonical_name(name):
    # type: (str) -> str
    """Resolves a GPU name or alias ("a100_40", "v100") to its catalog name."""
    s = ctypes.c_char_p()
    _check(_fn("arachne_gpu_canonical_name")(_enc(name, "name"), ctypes.byref(s)))
    return _dec(s.value)


def gpu_get(name, field):
    # type: (str, Any) -> float
    """One field of a catalog GPU type (name or number of GPU_FIELDS), SI units."""
    v = ctypes.c_double()
    _check(_fn("arachne_gpu_get")(_enc(name, "name"), _field(GPU_FIELDS, field, "GPU"), ctypes.byref(v)))
    return v.value


def gpu_info(name):
    # type: (str) -> Dict[str, Any]
    """Every field of a catalog GPU type as a dict (SI units), plus "name"."""
    d = {"name": gpu_canonical_name(name)}  # type: Dict[str, Any]
    for k in GPU_FIELDS:
        d[k] = gpu_get(name, k)
    return d


# --------------------------------------------------------------------------
# Handles
# --------------------------------------------------------------------------

_tls = threading.local()  # per thread: a stack of the handles each guarded call holds


def _release(held):
    # type: (List[Any]) -> None
    """Drops the holds one guarded call took; frees a handle closed meanwhile."""
    tid = threading.get_ident()
    with _refs_lock:
        for h in held:
            n = h._holders.get(tid, 0) - 1
            if n > 0:
                h._holders[tid] = n
            else:
                h._holders.pop(tid, None)
                if h._writer == tid:
                    h._writer = None
            if h._closed and not h._holders and h._borrowers == 0:
                h._free()


def _handle_type_message(e):
    # type: (BaseException) -> str
    """ctypes' "expected LP__CostModelS instance instead of LP__PlanS" in the
    binding's terms."""
    m = re.search(r"expected LP__(\w+?)S instance instead of (?:LP__(\w+?)S\b|(\w+))", str(e))
    if not m:
        return "a handle argument has the wrong type (%s)" % e
    got = m.group(2) or m.group(3)
    return "a %s is taken where a %s was given" % (m.group(1), got)


def _guarded(func):
    # type: (Any) -> Any
    """Runs func as one guarded call: every handle it reaches through _h() or
    _mutable() stays alive until it returns, even when another thread closes
    the handle meanwhile (the close then takes effect at the return)."""
    if getattr(func, "_arachne_guarded", False):
        return func

    @functools.wraps(func)
    def call(*args, **kwargs):
        stack = getattr(_tls, "stack", None)
        if stack is None:
            stack = _tls.stack = []
        stack.append([])
        try:
            return func(*args, **kwargs)
        except ctypes.ArgumentError as e:
            # a handle of another class (a Plan where a CostModel is taken)
            raise TypeError("%s(): %s" % (func.__qualname__, _handle_type_message(e))) from None
        except AttributeError as e:
            # None, a str, ... where a handle is taken
            m = re.match(r"'(\w+)' object has no attribute '(_h|_exclusive|_mutable)'$", str(e))
            if not m:
                raise
            raise TypeError("%s(): a handle argument (a Model, Cluster, Profile, CostModel, Policy or Plan) "
                            "got %s" % (func.__qualname__, m.group(1))) from None
        finally:
            _release(stack.pop())
    call._arachne_guarded = True  # type: ignore[attr-defined]
    return call


# Methods that manage the lifetime itself (never wrapped by _guarded).
_UNGUARDED = frozenset(("close", "_free", "_h", "_mutable", "_exclusive", "_hold", "__del__", "__enter__",
                        "__exit__", "closed",
                        "__init_subclass__", "__new__",
                        # Trainer._idle takes the trainer for the method that calls it: wrapped as a
                        # guarded call of its own, its hold ended when it returned, before the C call,
                        # and close() from another thread freed the trainer under run()
                        "_idle"))


class _Handle(object):
    """Owns one C handle.

    A handle that borrows others (a CostModel its Model, Cluster, Profile)
    keeps Python references to them and registers as their borrower; a
    borrowed handle's C object is freed only once it is closed AND no
    borrower is alive, so close() and garbage collection may happen in any
    order.  A closed handle cannot be used from Python any more.

    Threads: every method of a handle class runs as a guarded call (the
    class is wrapped by __init_subclass__), which holds each handle it uses
    for its duration.  close() from another thread marks the handle closed
    at once -- calls that start later raise Error -- and the C object is
    freed when the last running call returns, so closing never pulls memory
    from under a running call.  A mutator (add_nodes, set, ...) needs the
    handle to itself: it raises Error while another thread is inside a call
    on the same handle, and other threads' calls raise Error while it runs.
    """

    _destroy_fn = ""  # name of the C destroy function
    _what = "handle"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, v in list(vars(cls).items()):
            if name in _UNGUARDED:
                continue
            if isinstance(v, property):
                setattr(cls, name, property(_guarded(v.fget) if v.fget else None,
                                            _guarded(v.fset) if v.fset else None, v.fdel, v.__doc__))
            elif isinstance(v, classmethod):
                setattr(cls, name, classmethod(_guarded(v.__func__)))
            elif isinstance(v, staticmethod):
                setattr(cls, name, staticmethod(_guarded(v.__func__)))
            elif callable(v) and not isinstance(v, type):
                setattr(cls, name, _guarded(v))

    def __init__(self, ptr, parents=()):
        # type: (Any, Tuple[Any, ...]) -> None
        self._lib = _lib  # the library that made it frees it (and stays loaded until then)
        self._ptr = ptr
        self._closed = False
        self._freed = False
        self._borrowers = 0
        self._holders = {}  # type: Dict[int, int]  # thread id -> guarded holds in flight
        self._writer = None  # type: Optional[int]  # thread id of a running mutator
        self._parents = tuple(parents)
        with _refs_lock:
            for p in self._parents:
                p._borrowers += 1

    # -- lifetime -------------------------------------------------------
    def close(self):
        # type: () -> None
        """Releases the handle; later use raises Error.  Idempotent and
        thread-safe: calls running on the handle in other threads finish
        first (the C object is freed when the last one returns)."""
        if getattr(self, "_closed", True):
            return
        with _refs_lock:
            if self._closed:
                return
            self._closed = True
            if self._borrowers == 0 and not self._holders:
                self._free()

    def _free(self):
        # type: () -> None
        # called with _refs_lock held
        if self._freed:
            return
        self._freed = True
        ptr, self._ptr = self._ptr, None
        lib, self._lib = self._lib, None
        if ptr and lib is not None:
            getattr(lib, self._destroy_fn)(ptr)
        parents, self._parents = self._parents, ()
        for p in parents:
            p._borrowers -= 1
            if p._closed and p._borrowers == 0 and not p._holders:
                p._free()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def closed(self):
        # type: () -> bool
        return self._closed

    def _hold(self, exclusive, unborrowed=False):
        # type: (bool, bool) -> Any
        # with _refs_lock held: checks, then records a hold for the running guarded call
        tid = threading.get_ident()
        if self._closed or not self._ptr:
            raise Error(E_INVALID_ARGUMENT, "%s is closed" % self._what)
        if self._writer is not None and self._writer != tid:
            raise Error(E_INVALID_ARGUMENT, "%s is being changed by another thread" % self._what)
        if exclusive:
            if unborrowed and self._borrowers:
                raise Error(E_INVALID_ARGUMENT, "%s is borrowed by %d live handle(s) (a cost model or trainer); "
                            "close them before changing it" % (self._what, self._borrowers))
            if any(t != tid for t in self._holders):
                raise Error(E_INVALID_ARGUMENT, "%s is in use by another thread; it cannot be changed now"
                            % self._what)
        stack = getattr(_tls, "stack", None)
        if stack:
            self._holders[tid] = self._holders.get(tid, 0) + 1
            if exclusive:
                self._writer = tid
            stack[-1].append(self)
        return self._ptr

    def _h(self):
        # type: () -> Any
        """The pointer, held until the running guarded call returns."""
        with _refs_lock:
            return self._hold(False)

    def _mutable(self):
        # type: () -> Any
        """The pointer, for a mutator: refused while another handle borrows it
        or another thread is inside a call on it."""
        with _refs_lock:
            return self._hold(True, True)

    def _exclusive(self):
        # type: () -> Any
        """The pointer, for a call that changes the C object (a plan being
        priced, a cost model's setup, a trainer's run): refused while another
        thread is inside a call on it, and holds others off until it returns."""
        with _refs_lock:
            return self._hold(True)

    def _borrowed_str(self, fname, *args):
        # type: (str, Any) -> str
        s = ctypes.c_char_p()
        _check(_fn(fname)(self._h(), *(args + (ctypes.byref(s),))))
        return _dec(s.value)


def _make(ctype, fname, *args):
    # type: (Any, str, Any) -> Any
    """Calls a constructor fname(&out, *args) and returns the pointer."""
    out = ctype()
    _check(_fn(fname)(ctypes.byref(out), *args))
    if not out:
        raise Error(E_NO_MEMORY, "%s returned no handle" % fname)
    return out


def _buffer_text(fname, handle, *args):
    # type: (str, Any, Any) -> str
    """Reads text through the (buf, cap, needed) caller-buffer convention."""
    f = _fn(fname)
    needed = ctypes.c_size_t(0)
    rc = f(handle, *(args + (None, 0, ctypes.byref(needed))))
    if rc < 0 and rc != E_BUFFER_TOO_SMALL:
        _check(rc)
    while True:
        cap = max(int(needed.value), 1)
        buf = ctypes.create_string_buffer(cap)
        rc = f(handle, *(args + (buf, cap, ctypes.byref(needed))))
        if rc == E_BUFFER_TOO_SMALL and needed.value > cap:
            continue
        _check(rc)
        return _dec(buf.value)


# --------------------------------------------------------------------------
# Cluster
# --------------------------------------------------------------------------

class Cluster(_Handle):
    """A set of GPU nodes of one or more GPU types (arachne_cluster).

    Cluster() is empty; build one with add_nodes().  Cluster("a100-40:4x4,h100:2x8")
    takes a compact spec or a cluster JSON file (str or os.PathLike, as
    Cluster.open), Cluster({...}) the JSON form as a dict; anything else raises
    TypeError.  Also Cluster.parse(), Cluster.load(), Cluster.from_json().
    """

    _destroy_fn = "arachne_cluster_destroy"
    _what = "Cluster"

    def __init__(self, spec=None):
        if spec is None:
            ptr = _make(_CLUSTER, "arachne_cluster_create")
        elif isinstance(spec, _CLUSTER):  # a handle made by the classmethods
            ptr = spec
        elif isinstance(spec, (str, bytes)) or hasattr(spec, "__fspath__"):
            ptr = _make(_CLUSTER, "arachne_cluster_open", _path(spec, "spec"))
        elif isinstance(spec, dict):
            b = _enc(json.dumps(spec), "spec")
            ptr = _make(_CLUSTER, "arachne_cluster_from_json", b, len(b))
        else:
            raise TypeError("Cluster() takes a compact spec or file path (str, os.PathLike), "
                            "a dict (the JSON form) or nothing, got %s" % type(spec).__name__)
        _Handle.__init__(self, ptr)

    @classmethod
    def parse(cls, spec):
        # type: (str) -> Cluster
        """Parses a compact spec such as "a100-40:32x4,a6000:8x4+16x1,h100:16x8"."""
        return cls(_make(_CLUSTER, "arachne_cluster_parse", _enc(spec, "spec")))

    @classmethod
    def from_json(cls, text):
        # type: (Any) -> Cluster
        """Reads the cluster JSON form (str or bytes)."""
        b = _enc(text, "text")
        return cls(_make(_CLUSTER, "arachne_cluster_from_json", b, len(b)))

    @classmethod
    def from_dict(cls, d):
        # type: (Dict[str, Any]) -> Cluster
        return cls.from_json(json.dumps(d))

    @classmethod
    def load(cls, path):
        # type: (Any) -> Cluster
        """Reads a cluster JSON file."""
        return cls(_make(_CLUSTER, "arachne_cluster_load", _path(path, "path")))

    @classmethod
    def open(cls, spec_or_path):
        # type: (Any) -> Cluster
        """A JSON file when the argument names a file or ends in .json, else a compact spec."""
        if not isinstance(spec_or_path, (str, bytes)):
            spec_or_path = os.fspath(spec_or_path)
        return cls(_make(_CLUSTER, "arachne_cluster_open",
                         _path(spec_or_path, "spec_or_path") if isinstance(spec_or_path, str) else spec_or_path))

    def save(self, path):
        # type: (Any) -> None
        """Writes the JSON form to path atomically."""
        _check(_fn("arachne_cluster_save")(self._h(), _path(path, "path")))

    # -- mutators -------------------------------------------------------
    def add_nodes(self, gpu_type, count, gpus_per_node):
        # type: (str, int, int) -> Cluster
        """Adds `count` nodes of `gpus_per_node` GPUs of `gpu_type`.  Returns self."""
        _check(_fn("arachne_cluster_add_nodes")(self._mutable(), _enc(gpu_type, "gpu_type"), _iarg(count, "count"),
                                                _iarg(gpus_per_node, "gpus_per_node")))
        return self

    def add_gpu_type(self, name, mem_bytes, flops, hbm_bytes_per_s, intra_bytes_per_s, inter_bytes_per_s):
        # type: (str, float, float, float, float, float) -> Cluster
        """Adds (or overrides) a GPU type: bytes, FLOP/s, bytes/s, each within its physical bounds
        (docs/formats.md, "Cluster", "JSON"; Error otherwise).  Returns self."""
        _check(_fn("arachne_cluster_add_gpu_type")(self._mutable(), _enc(name, "name"), _farg(mem_bytes, "mem_bytes"),
                                                   _farg(flops, "flops"), _farg(hbm_bytes_per_s, "hbm_bytes_per_s"),
                                                   _farg(intra_bytes_per_s, "intra_bytes_per_s"),
                                                   _farg(inter_bytes_per_s, "inter_bytes_per_s")))
        return self

    def set_gpu_field(self, gpu_type, field, value):
        # type: (str, Any, float) -> Cluster
        """Sets one GPU_FIELDS entry (SI units) of a type in the cluster.  Returns self."""
        _check(_fn("arachne_cluster_set_gpu_field")(self._mutable(), _enc(gpu_type, "gpu_type"),
                                                    _field(GPU_FIELDS, field, "GPU"), _farg(value, "value")))
        return self

    def set_link_bandwidth(self, type_a, type_b, bytes_per_s):
        # type: (str, str, float) -> Cluster
        """Sets the inter-node bandwidth between two types (bytes/s per GPU per direction)."""
        _check(_fn("arachne_cluster_set_link_bandwidth")(self._mutable(), _enc(type_a, "type_a"),
                                                         _enc(type_b, "type_b"),
                                                         _farg(bytes_per_s, "bytes_per_s")))
        return self

    # -- getters --------------------------------------------------------
    def link_bandwidth(self, type_a, type_b):
        # type: (str, str) -> float
        v = ctypes.c_double()
        _check(_fn("arachne_cluster_link_bandwidth")(self._h(), _enc(type_a, "type_a"), _enc(type_b, "type_b"),
                                                     ctypes.byref(v)))
        return v.value

    @property
    def type_count(self):
        # type: () -> int
        v = ctypes.c_int()
        _check(_fn("arachne_cluster_type_count")(self._h(), ctypes.byref(v)))
        return v.value

    def type_name(self, index):
        # type: (int) -> str
        return self._borrowed_str("arachne_cluster_type_name", _iarg(index, "index"))

    @property
    def types(self):
        # type: () -> List[str]
        """GPU type names in cluster order."""
        return [self.type_name(i) for i in range(self.type_count)]

    def gpu_count(self, gpu_type=None):
        # type: (Optional[str]) -> int
        """GPUs of one type, or of all (None)."""
        v = ctypes.c_int()
        _check(_fn("arachne_cluster_gpu_count")(self._h(), _opt_enc(gpu_type, "gpu_type"), ctypes.byref(v)))
        return v.value

    def node_count(self, gpu_type=None):
        # type: (Optional[str]) -> int
        """Nodes of one type, or of all (None)."""
        v = ctypes.c_int()
        _check(_fn("arachne_cluster_node_count")(self._h(), _opt_enc(gpu_type, "gpu_type"), ctypes.byref(v)))
        return v.value

    def largest_node(self, gpu_type=None):
        # type: (Optional[str]) -> int
        """GPUs in the largest node of a type, or of any (None); 0 when none."""
        v = ctypes.c_int()
        _check(_fn("arachne_cluster_largest_node")(self._h(), _opt_enc(gpu_type, "gpu_type"), ctypes.byref(v)))
        return v.value

    def node(self, index):
        # type: (int) -> Tuple[str, int]
        """(GPU type, GPU count) of node `index` (0-based)."""
        t = ctypes.c_char_p()
        g = ctypes.c_int()
        _check(_fn("arachne_cluster_node")(self._h(), _iarg(index, "index"), ctypes.byref(t), ctypes.byref(g)))
        return _dec(t.value), g.value

    @property
    def nodes(self):
        # type: () -> List[Tuple[str, int]]
        return [self.node(i) for i in range(self.node_count())]

    def gpu_get(self, gpu_type, field):
        # type: (str, Any) -> float
        """One GPU_FIELDS entry (SI units) of a type in this cluster."""
        v = ctypes.c_double()
        _check(_fn("arachne_cluster_gpu_get")(self._h(), _enc(gpu_type, "gpu_type"), _field(GPU_FIELDS, field, "GPU"),
                                              ctypes.byref(v)))
        return v.value

    def gpu_info(self, gpu_type):
        # type: (str) -> Dict[str, float]
        return dict((k, self.gpu_get(gpu_type, k)) for k in GPU_FIELDS)

    def to_string(self):
        # type: () -> str
        """The compact spec ("" when empty)."""
        return self._borrowed_str("arachne_cluster_to_string")

    def to_json(self):
        # type: () -> str
        return self._borrowed_str("arachne_cluster_to_json")

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return json.loads(self.to_json())

    def __str__(self):
        return self.to_string() if not self._closed else "<closed Cluster>"

    def __repr__(self):
        return "Cluster(%r)" % str(self)


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

class Model(_Handle):
    """A model architecture (arachne_model).  Every MODEL_FIELDS name is a
    read-only attribute (model.total_params, model.hidden, ...); counts are ints.

    Model("llama3-8b") takes a preset name or a model JSON file (str or
    os.PathLike, as Model.open), Model({...}) the JSON form as a dict;
    anything else raises TypeError."""

    _destroy_fn = "arachne_model_destroy"
    _what = "Model"

    def __init__(self, name_or_path):
        if isinstance(name_or_path, _MODEL):  # a handle made by the classmethods
            ptr = name_or_path
        elif isinstance(name_or_path, (str, bytes)) or hasattr(name_or_path, "__fspath__"):
            ptr = _make(_MODEL, "arachne_model_open", _path(name_or_path, "name_or_path"))
        elif isinstance(name_or_path, dict):
            b = _enc(json.dumps(name_or_path), "name_or_path")
            ptr = _make(_MODEL, "arachne_model_from_json", b, len(b))
        else:
            raise TypeError("Model() takes a preset name or model file (str, os.PathLike) or a dict "
                            "(the JSON form), got %s" % type(name_or_path).__name__)
        _Handle.__init__(self, ptr)

    @classmethod
    def preset(cls, name):
        # type: (str) -> Model
        """A built-in preset ("llama3-8b", "qwen3-30b-a3b", "deepseek-v3", ...)."""
        return cls(_make(_MODEL, "arachne_model_preset", _enc(name, "name")))

    @staticmethod
    def presets():
        # type: () -> List[str]
        """Names of the built-in presets."""
        n = _fn("arachne_model_preset_count")()
        return [_dec(_fn("arachne_model_preset_name")(i)) for i in range(n)]

    @classmethod
    def from_json(cls, text):
        # type: (Any) -> Model
        b = _enc(text, "text")
        return cls(_make(_MODEL, "arachne_model_from_json", b, len(b)))

    @classmethod
    def from_dict(cls, d):
        # type: (Dict[str, Any]) -> Model
        return cls.from_json(json.dumps(d))

    @classmethod
    def load(cls, path):
        # type: (Any) -> Model
        return cls(_make(_MODEL, "arachne_model_load", _path(path, "path")))

    @classmethod
    def open(cls, name_or_path):
        # type: (Any) -> Model
        """A preset name when one matches, otherwise a model JSON file."""
        if not isinstance(name_or_path, (str, bytes)):
            name_or_path = os.fspath(name_or_path)
        return cls(_make(_MODEL, "arachne_model_open",
                         _path(name_or_path, "name_or_path") if isinstance(name_or_path, str) else name_or_path))

    def save(self, path):
        # type: (Any) -> None
        _check(_fn("arachne_model_save")(self._h(), _path(path, "path")))

    def to_json(self):
        # type: () -> str
        return self._borrowed_str("arachne_model_to_json")

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return json.loads(self.to_json())

    @property
    def name(self):
        # type: () -> str
        return self._borrowed_str("arachne_model_name")

    def get(self, field):
        # type: (Any) -> float
        """One MODEL_FIELDS entry (name or number) as a float."""
        v = ctypes.c_double()
        _check(_fn("arachne_model_get")(self._h(), _field(MODEL_FIELDS, field, "model"), ctypes.byref(v)))
        return v.value

    def fields(self):
        # type: () -> Dict[str, int]
        """Every MODEL_FIELDS entry as an int."""
        return dict((k, int(self.get(v))) for k, v in MODEL_FIELDS.items())

    def layer_params(self, kind):
        # type: (Any) -> int
        """Parameters of ONE layer of `kind` ("embed", "dense", "moe", "head" or a number)."""
        v = ctypes.c_double()
        _check(_fn("arachne_model_layer_params")(self._h(), _kind(kind), ctypes.byref(v)))
        return int(v.value)

    def layer_flops(self, kind, seq, mbs=1):
        # type: (Any, int, int) -> float
        """Forward FLOPs of ONE layer for mbs sequences of seq tokens."""
        v = ctypes.c_double()
        _check(_fn("arachne_model_layer_flops")(self._h(), _kind(kind), _iarg(seq, "seq"), _iarg(mbs, "mbs"),
                                                ctypes.byref(v)))
        return v.value

    def layer_act_bytes(self, kind, seq, mbs=1, tp=1, recompute="selective"):
        # type: (Any, int, int, int, Any) -> float
        """Activation bytes one GPU keeps for ONE layer (recompute: none/selective/full)."""
        v = ctypes.c_double()
        _check(_fn("arachne_model_layer_act_bytes")(self._h(), _kind(kind), _iarg(seq, "seq"), _iarg(mbs, "mbs"),
                                                    _iarg(tp, "tp"),
                                                    _recompute(recompute), ctypes.byref(v)))
        return v.value

    def __repr__(self):
        return "Model(%r)" % (self.name if not self._closed else "<closed>")


def _model_prop(field):
    def get(self):
        return int(self.get(field))
    get.__doc__ = "arachne_model_get(%s) as an int" % field
    return property(get)


for _k in MODEL_FIELDS:
    setattr(Model, _k, _model_prop(_k))

# --------------------------------------------------------------------------
# Profile
# --------------------------------------------------------------------------


class ProfileEntry(tuple):
    """One profile entry: gpu, kind, tp, mbs, fwd_s, bwd_s, tp_comm_s, act_bytes."""

    __slots__ = ()
    _fields = ("gpu", "kind", "tp", "mbs", "fwd_s", "bwd_s", "tp_comm_s", "act_bytes")

    def __new__(cls, *values):
        return tuple.__new__(cls, values)

    def _asdict(self):
        # type: () -> Dict[str, Any]
        return dict(zip(self._fields, self))

    def __repr__(self):
        return "ProfileEntry(%s)" % ", ".join("%s=%r" % kv for kv in zip(self._fields, self))


for _i, _k in enumerate(ProfileEntry._fields):
    setattr(ProfileEntry, _k, property(lambda self, _i=_i: self[_i]))


class Profile(_Handle):
    """A per-layer profile table (arachne_profile) keyed by
    (GPU type, layer kind, TP degree, micro-batch size)."""

    _destroy_fn = "arachne_profile_destroy"
    _what = "Profile"

    def __init__(self, model_name=None, seq_len=4096, _ptr=None):
        """Profile(model_name, seq_len) creates an empty table for a model
        (its name, or a Model); TypeError for anything else."""
        if _ptr is None:
            if isinstance(model_name, Model):
                model_name = model_name.name
            if not isinstance(model_name, (str, bytes)):
                raise TypeError("Profile(model_name, seq_len=4096) takes a model name (str) or a Model, got %s"
                                % type(model_name).__name__)
            _ptr = _make(_PROFILE, "arachne_profile_create", _enc(model_name, "model_name"),
                         _iarg(seq_len, "seq_len"))
        elif not isinstance(_ptr, _PROFILE):
            raise TypeError("Profile(_ptr=) is internal")
        _Handle.__init__(self, _ptr)

    @classmethod
    def generate(cls, model, cluster, seq_len=4096):
        # type: (Model, Cluster, int) -> Profile
        """The calibrated analytic profile for every GPU type of the cluster."""
        return cls(_ptr=_make(_PROFILE, "arachne_profile_generate", model._h(), cluster._h(),
                              _iarg(seq_len, "seq_len")))

    @classmethod
    def load(cls, path):
        # type: (Any) -> Profile
        return cls(_ptr=_make(_PROFILE, "arachne_profile_load", _path(path, "path")))

    @classmethod
    def from_json(cls, text):
        # type: (Any) -> Profile
        b = _enc(text, "text")
        return cls(_ptr=_make(_PROFILE, "arachne_profile_from_json", b, len(b)))

    @classmethod
    def import_sailor(cls, directory, model_name):
        # type: (Any, str) -> Profile
        """Imports Sailor's measured profiles (profiles.json, llm_info.json) from a directory."""
        return cls(_ptr=_make(_PROFILE, "arachne_profile_import_sailor", _path(directory, "directory"),
                              _enc(model_name, "model_name")))

    def save(self, path):
        # type: (Any) -> None
        _check(_fn("arachne_profile_save")(self._h(), _path(path, "path")))

    def to_json(self):
        # type: () -> str
        return _buffer_text("arachne_profile_to_json", self._h())

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return json.loads(self.to_json())

    def add(self, gpu, kind, tp, mbs, fwd_s, bwd_s, tp_comm_s=0.0, act_bytes=0.0):
        # type: (str, Any, int, int, float, float, float, float) -> Profile
        """Adds (or replaces) one entry; seconds and bytes.  Returns self."""
        _check(_fn("arachne_profile_add")(self._mutable(), _enc(gpu, "gpu"), _kind(kind), _iarg(tp, "tp"),
                                          _iarg(mbs, "mbs"),
                                          _farg(fwd_s, "fwd_s"), _farg(bwd_s, "bwd_s"), _farg(tp_comm_s, "tp_comm_s"),
                                          _farg(act_bytes, "act_bytes")))
        return self

    def generate_gpu(self, model, cluster, gpu_type):
        # type: (Model, Cluster, str) -> Profile
        """Adds the generated entries of one GPU type of the cluster.  Returns self."""
        _check(_fn("arachne_profile_generate_gpu")(self._mutable(), model._h(), cluster._h(),
                                                   _enc(gpu_type, "gpu_type")))
        return self

    def lookup(self, gpu, kind, tp, mbs):
        # type: (str, Any, int, int) -> ProfileEntry
        """The entry with exactly this key; Error(E_NOT_FOUND) when absent."""
        v = [ctypes.c_double() for _ in range(4)]
        k = _kind(kind)
        _check(_fn("arachne_profile_lookup")(self._h(), _enc(gpu, "gpu"), k, _iarg(tp, "tp"), _iarg(mbs, "mbs"),
                                             *[ctypes.byref(x) for x in v]))
        return ProfileEntry(gpu, k, int(tp), int(mbs), *[x.value for x in v])

    def __len__(self):
        v = ctypes.c_int()
        _check(_fn("arachne_profile_count")(self._h(), ctypes.byref(v)))
        return v.value

    @property
    def count(self):
        # type: () -> int
        return len(self)

    def entry(self, index):
        # type: (int) -> ProfileEntry
        """Entry `index` in key order."""
        g = ctypes.c_char_p()
        ints = [ctypes.c_int() for _ in range(3)]
        v = [ctypes.c_double() for _ in range(4)]
        _check(_fn("arachne_profile_entry")(self._h(), _iarg(index, "index"), ctypes.byref(g),
                                            *([ctypes.byref(x) for x in ints] + [ctypes.byref(x) for x in v])))
        return ProfileEntry(_dec(g.value), *([x.value for x in ints] + [x.value for x in v]))

    def entries(self):
        # type: () -> List[ProfileEntry]
        return [self.entry(i) for i in range(len(self))]

    def __iter__(self):
        return iter(self.entries())

    @property
    def model_name(self):
        # type: () -> str
        return self._borrowed_str("arachne_profile_model_name")

    @property
    def seq_len(self):
        # type: () -> int
        v = ctypes.c_int()
        _check(_fn("arachne_profile_seq_len")(self._h(), ctypes.byref(v)))
        return v.value

    def __repr__(self):
        if self._closed:
            return "Profile(<closed>)"
        return "Profile(%r, seq_len=%d, entries=%d)" % (self.model_name, self.seq_len, len(self))


# --------------------------------------------------------------------------
# Cost model
# --------------------------------------------------------------------------

class CostModel(_Handle):
    """Binds a Model, a Cluster and a Profile to a training setup and prices
    plans (arachne_cost_model).

    CostModel(model, cluster, profile=None, **setup): without a profile one is
    generated for the cluster (at setup's seq_len, default 4096).  setup
    keywords (OPTIONS): global_batch, seq_len, weight_bytes, grad_bytes,
    optim_bytes, dist_optimizer (bool), recompute ("none", "selective",
    "full"), headroom (fraction), expert_tiling (bool), max_depth, max_vp,
    recompute_search (0, 1 or 2: whether Policy.plan and replan may return
    a plan with full recomputation; 1, the default: where a probe says it
    pays or nothing else fits; 2: always plan both; the plan's recompute
    field says which mode it has).
    The cost model keeps its model, cluster and profile alive; they cannot be
    changed while it lives.
    """

    _destroy_fn = "arachne_cost_model_destroy"
    _what = "CostModel"

    def __init__(self, model, cluster, profile=None, **setup):
        for k in setup:
            if k not in OPTIONS:
                raise TypeError("CostModel() got an unexpected keyword argument '%s' (setup keywords: %s)"
                                % (k, ", ".join(OPTIONS)))
        if not isinstance(model, Model):
            if not isinstance(model, (str, bytes, dict)) and not hasattr(model, "__fspath__"):
                raise TypeError("CostModel(model, ...): model must be a Model, a preset name, a model "
                                "file or a dict, got %s" % type(model).__name__)
            model = Model(model)
        if not isinstance(cluster, Cluster):
            if not isinstance(cluster, (str, bytes, dict)) and not hasattr(cluster, "__fspath__"):
                raise TypeError("CostModel(model, cluster, ...): cluster must be a Cluster, a compact "
                                "spec, a cluster file or a dict, got %s" % type(cluster).__name__)
            cluster = Cluster(cluster)
        if profile is None:
            seq = setup.get("seq_len", 4096)
            profile = Profile.generate(model, cluster, seq_len=seq)
        elif isinstance(profile, (str, bytes)) or hasattr(profile, "__fspath__"):
            profile = Profile.load(profile)
        elif not isinstance(profile, Profile):
            raise TypeError("profile must be a Profile, a profile file or None, got %s" % type(profile).__name__)
        ptr = _make(_COST, "arachne_cost_model_create", model._h(), cluster._h(), profile._h())
        self._trainers = 0  # open Trainers it is a composition of (CostModel.set refuses then)
        _Handle.__init__(self, ptr, (model, cluster, profile))
        try:
            for k in OPTIONS:  # fixed order: seq_len before options that depend on it
                if k in setup:
                    self.set(k, setup[k])
        except BaseException:
            self.close()
            raise

    @property
    def model(self):
        # type: () -> Model
        return self._parents[0] if self._parents else None

    @property
    def cluster(self):
        # type: () -> Cluster
        return self._parents[1] if self._parents else None

    @property
    def profile(self):
        # type: () -> Profile
        return self._parents[2] if self._parents else None

    def set(self, option, value):
        # type: (Any, Any) -> CostModel
        """Sets one option (name or number); recompute takes a mode name too.  Returns self."""
        if isinstance(option, str) and option.lower() == "recompute":
            value = _recompute(value)
        elif isinstance(value, bool):
            value = 1 if value else 0
        # the handle first: while this call holds it to itself, no other
        # thread can add it to a trainer between the check and the change
        h = self._exclusive()
        with _refs_lock:
            if self._trainers:
                raise Error(E_INVALID_ARGUMENT, "CostModel is a composition of %d open Trainer(s): it must not "
                            "change while they live (close them first)" % self._trainers)
        _check(_fn("arachne_cost_model_set")(h, _field(OPTIONS, option, "option"), _farg(value, str(option))))
        return self

    def get(self, option):
        # type: (Any) -> Any
        """One option's value: an int for integer and flag options, else a float."""
        v = ctypes.c_double()
        _check(_fn("arachne_cost_model_get")(self._h(), _field(OPTIONS, option, "option"), ctypes.byref(v)))
        return _intish(v.value)

    @property
    def setup(self):
        # type: () -> Dict[str, Any]
        """Every option as a dict (recompute as its name, flags as bools)."""
        d = {}  # type: Dict[str, Any]
        names = dict((v, k) for k, v in RECOMPUTE_MODES.items())
        for k in OPTIONS:
            v = self.get(k)
            if k == "recompute":
                v = names.get(int(v), v)
            elif k in _BOOL_OPTIONS:
                v = bool(v)
            d[k] = v
        return d

    def price(self, plan):
        # type: (Plan) -> Plan
        """Reprices `plan` in place with this setup.  Returns the plan."""
        _check(_fn("arachne_cost_model_price")(self._h(), plan._exclusive()))
        return plan

    def load_plan(self, path):
        # type: (Any) -> Plan
        """Reads, validates and prices a plan file against this cost model."""
        return Plan(_make(_PLAN, "arachne_plan_load", self._h(), _path(path, "path")), self)

    def plan_from_json(self, text):
        # type: (Any) -> Plan
        b = _enc(text, "text")
        return Plan(_make(_PLAN, "arachne_plan_from_json", self._h(), b, len(b)), self)

    def plan_from_dict(self, d):
        # type: (Dict[str, Any]) -> Plan
        return self.plan_from_json(json.dumps(d))

    def plan_from_sailor(self, text):
        # type: (Any) -> Plan
        """A plan written by Sailor's planner (JSON text), placed on this cluster and priced."""
        b = _enc(text, "text")
        return Plan(_make(_PLAN, "arachne_plan_from_sailor", self._h(), b, len(b)), self)

    def plan_from_parallel(self, spec=None, **dims):
        # type: (Optional[str], Any) -> Plan
        """The priced plan of an explicit homogeneous configuration, given as
        the C spec string ("tp=8,pp=4,dp=16,mbs=1") or as keywords (tp=8,
        pp=4, dp=16, mbs=1, ep=.., etp=.., layers=[7, 8, ...], gpu="h100");
        see arachne_plan_from_parallel."""
        if spec is not None and dims:
            raise TypeError("plan_from_parallel: give a spec string or keywords, not both")
        if spec is None:
            parts = []
            for k, v in dims.items():
                if k == "layers" and not isinstance(v, str):
                    v = "/".join(str(_iarg(x, "layers")) for x in v)
                elif k == "gpu":
                    if not isinstance(v, str):
                        raise TypeError("plan_from_parallel: gpu must be a GPU type name (str), got %s"
                                        % type(v).__name__)
                    if "," in v or "=" in v:
                        raise ValueError("plan_from_parallel: gpu = %r is not a GPU type name (it holds ',' or "
                                         "'=', which would read as more keys)" % (v,))
                else:
                    v = _iarg(v, k)
                parts.append("%s=%s" % (k, v))
            spec = ",".join(parts)
        if not isinstance(spec, str):
            raise TypeError("plan_from_parallel: spec must be a str, got %r" % (spec,))
        return Plan(_make(_PLAN, "arachne_plan_from_parallel", self._h(), _enc(spec, "spec")), self)

    def search_random(self, budget=1000, seed=0, time_budget_s=0.0):
        # type: (int, int, float) -> Plan
        return search_random(self, budget, seed, time_budget_s)

    def search_exhaustive(self, max_templates=2, time_budget_s=0.0):
        # type: (int, float) -> Plan
        return search_exhaustive(self, max_templates, time_budget_s)

    def __repr__(self):
        if self._closed:
            return "CostModel(<closed>)"
        return "CostModel(%r, %r)" % (self.model.name, str(self.cluster))


# --------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------

class Plan(_Handle):
    """A complete, priced parallelisation plan (arachne_plan).

    Plans come from Policy.plan(), search_random(), search_exhaustive(),
    CostModel.load_plan() / plan_from_json() or Plan.load().  Read them with
    to_dict() (the "arachne-plan" v1 JSON as Python objects) or the getters:
    every PLAN_FIELDS name is an attribute (plan.iteration_s, plan.mfu, ...).
    A plan keeps the cost model it came from alive (plan.cost_model).
    """

    _destroy_fn = "arachne_plan_destroy"
    _what = "Plan"

    def __init__(self, _ptr, cost_model=None):
        """Plan(path) reads a plan file on its own (as Plan.open); Plan(path,
        cost_model) reads it against a cost model (as Plan.load)."""
        if isinstance(_ptr, (str, bytes)) or hasattr(_ptr, "__fspath__"):
            if cost_model is None:
                cost_model = Plan._recorded_cost_model(_ptr, None, {})
            elif not isinstance(cost_model, CostModel):
                raise TypeError("cost_model must be a CostModel, got %s" % type(cost_model).__name__)
            _ptr = _make(_PLAN, "arachne_plan_load", cost_model._h(), _path(_ptr, "path"))
        elif not isinstance(_ptr, _PLAN):
            raise TypeError("Plan() takes a plan file path (str, os.PathLike), got %s "
                            "(plans come from Policy.plan(), search_random(), ...)" % type(_ptr).__name__)
        if cost_model is not None and not isinstance(cost_model, CostModel):
            raise TypeError("cost_model must be a CostModel, got %s" % type(cost_model).__name__)
        _Handle.__init__(self, _ptr, (cost_model,) if cost_model is not None else ())

    @classmethod
    def load(cls, cost_model, path):
        # type: (CostModel, Any) -> Plan
        return cost_model.load_plan(path)

    def refine(self, cost_model, evaluations=None, time_cap_s=0.0):
        # type: (CostModel, Any, float) -> Plan
        """A new plan at least as fast as this one: local search over the template
        decisions with the cost model (arachne_plan_refine); evaluations is the
        budget in fills (default REFINE_EVALUATIONS), time_cap_s > 0 a wall-clock cap."""
        n = REFINE_EVALUATIONS if evaluations is None else _iarg(evaluations, "evaluations")
        return Plan(_make(_PLAN, "arachne_plan_refine", self._h(), cost_model._h(), n,
                          _farg(time_cap_s, "time_cap_s")),
                    cost_model)

    @classmethod
    def from_json(cls, cost_model, text):
        # type: (CostModel, Any) -> Plan
        return cost_model.plan_from_json(text)

    @staticmethod
    def read_header(path):
        # type: (Any) -> Dict[str, Any]
        """The recorded header of a plan file, without a cost model and without
        validating the plan: model, cluster, global_batch, seq_len, iteration_s,
        the setup fields the file records (recompute, dist_optimizer, headroom,
        weight/grad/optim bytes, the overlap flags) and a version-2 plan's
        embedded model_json, cluster_json, profile_json and profile_crc32
        (PLAN_HEADER_FIELDS); fields the file lacks are left out."""
        out = {}  # type: Dict[str, Any]
        for k, key in PLAN_HEADER_FIELDS.items():
            try:
                text = _buffer_text("arachne_plan_file_header", _path(path, "path"), key)
            except Error as e:
                if e.status == E_NOT_FOUND:
                    continue
                raise
            out[k] = _PLAN_HEADER_TYPES.get(k, str)(text)
        return out

    @classmethod
    def open(cls, path, profile=None, **setup):
        # type: (Any, Optional[Profile], Any) -> Plan
        """Reads a plan file on its own: rebuilds the model, cluster and profile
        the file embeds (a version-2 plan; a version-1 plan: its preset name and
        compact cluster string, and a generated profile) and the training setup
        it records (keywords override them), then validates and prices the plan
        (like `arachne price`).  The file's fields are text, never opened as
        paths."""
        return cls._recorded_cost_model(path, profile, setup).load_plan(path)

    @staticmethod
    def _recorded_cost_model(path, profile, setup):
        # type: (Any, Optional[Profile], Dict[str, Any]) -> CostModel
        """The cost model a plan file records (setup keywords override it)."""
        h = Plan.read_header(path)
        for k in ("global_batch", "seq_len", "recompute", "dist_optimizer", "headroom", "weight_bytes",
                  "grad_bytes", "optim_bytes", "overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap"):
            if k in h and k not in setup:
                setup[k] = h[k]
        if profile is None and h.get("profile_json"):
            profile = Profile.from_json(h["profile_json"])
        if profile is not None:
            setup.pop("seq_len", None)  # a profile fixes the sequence length itself
        if h.get("model_json"):
            model = Model.from_json(h["model_json"])
        elif "model" in h:
            # a version-1 plan: the model's name, a preset or nothing (a plan
            # file's text is never a path to open)
            model = Model.preset(h["model"])
        else:
            raise Error(E_PARSE, "%s: the plan records no model" % (path,))
        cluster = Cluster.from_json(h["cluster_json"]) if h.get("cluster_json") else Cluster.parse(h["cluster"])
        return CostModel(model, cluster, profile, **setup)

    @property
    def cost_model(self):
        # type: () -> Optional[CostModel]
        return self._parents[0] if self._parents else None

    def to_json(self):
        # type: () -> str
        return self._borrowed_str("arachne_plan_to_json")

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return json.loads(self.to_json())

    def save(self, path):
        # type: (Any) -> None
        _check(_fn("arachne_plan_save")(self._h(), _path(path, "path")))

    def export(self, fmt):
        # type: (Any) -> str
        """The plan in a launcher format: "ranks", "megatron", "torchtitan", "torchtitan-cli", "flashflex", "sailor"."""
        return _buffer_text("arachne_plan_export", self._h(), _field(EXPORT_FORMATS, fmt, "export format"))

    def to_svg(self):
        # type: () -> str
        """The plan drawn as an SVG picture (nodes and GPUs coloured by template and stage)."""
        return _buffer_text("arachne_plan_to_svg", self._h())

    def save_svg(self, path):
        # type: (Any) -> None
        """Writes the SVG picture to path atomically."""
        _check(_fn("arachne_plan_save_svg")(self._h(), _path(path, "path")))

    def get(self, field):
        # type: (Any) -> Any
        """A PLAN_FIELDS value (ints for counts)."""
        v = ctypes.c_double()
        f = _field(PLAN_FIELDS, field, "plan")
        _check(_fn("arachne_plan_get")(self._h(), f, ctypes.byref(v)))
        return int(v.value) if f in [PLAN_FIELDS[k] for k in _PLAN_INT_FIELDS] else v.value

    def template_get(self, t, field):
        # type: (int, Any) -> Any
        v = ctypes.c_double()
        f = _field(TEMPLATE_FIELDS, field, "template")
        _check(_fn("arachne_plan_template_get")(self._h(), _iarg(t, "t"), f, ctypes.byref(v)))
        return int(v.value) if f in [TEMPLATE_FIELDS[k] for k in _TEMPLATE_INT_FIELDS] else v.value

    def stage_get(self, t, s, field):
        # type: (int, int, Any) -> Any
        v = ctypes.c_double()
        f = _field(STAGE_FIELDS, field, "stage")
        _check(_fn("arachne_plan_stage_get")(self._h(), _iarg(t, "t"), _iarg(s, "s"), f, ctypes.byref(v)))
        return int(v.value) if f in [STAGE_FIELDS[k] for k in _STAGE_INT_FIELDS] else v.value

    def stage_gpu(self, t, s):
        # type: (int, int) -> str
        return self._borrowed_str("arachne_plan_stage_gpu", _iarg(t, "t"), _iarg(s, "s"))

    def rank_get(self, r, field):
        # type: (int, Any) -> int
        v = ctypes.c_int()
        _check(_fn("arachne_plan_rank_get")(self._h(), _iarg(r, "r"), _field(RANK_FIELDS, field, "rank"),
                                            ctypes.byref(v)))
        return v.value

    @property
    def method(self):
        # type: () -> str
        return self._borrowed_str("arachne_plan_method")

    @property
    def num_templates(self):
        # type: () -> int
        return self.get("templates")

    @property
    def num_ranks(self):
        # type: () -> int
        return self.get("ranks")

    def template(self, t):
        # type: (int) -> Dict[str, Any]
        """Template t from the getters: TEMPLATE_FIELDS plus "stages" (list of dicts with
        "gpu" and every STAGE_FIELDS entry)."""
        d = dict((k, self.template_get(t, k)) for k in TEMPLATE_FIELDS)  # type: Dict[str, Any]
        stages = []
        for s in range(d["depth"]):
            st = {"gpu": self.stage_gpu(t, s)}  # type: Dict[str, Any]
            for k in STAGE_FIELDS:
                st[k] = self.stage_get(t, s, k)
            stages.append(st)
        d["stages"] = stages
        return d

    def templates(self):
        # type: () -> List[Dict[str, Any]]
        return [self.template(t) for t in range(self.num_templates)]

    def rank(self, r):
        # type: (int) -> Dict[str, int]
        return dict((k, self.rank_get(r, k)) for k in RANK_FIELDS)

    def ranks(self):
        # type: () -> List[Dict[str, int]]
        return [self.rank(r) for r in range(self.num_ranks)]

    def __repr__(self):
        if self._closed:
            return "Plan(<closed>)"
        return "Plan(method=%r, templates=%d, gpus_used=%d, iteration_s=%.6g)" % (
            self.method, self.num_templates, self.gpus_used, self.iteration_s)


def _plan_prop(field):
    def get(self):
        return self.get(field)
    get.__doc__ = "arachne_plan_get(%s)" % field
    return property(get)


for _k in PLAN_FIELDS:
    if _k not in ("templates", "ranks"):
        setattr(Plan, _k, _plan_prop(_k))


@_guarded
def search_random(cost_model, budget=1000, seed=0, time_budget_s=0.0):
    # type: (CostModel, int, int, float) -> Plan
    """Random search: the fastest of `budget` priced plans (time_budget_s 0: no time limit)."""
    return Plan(_make(_PLAN, "arachne_search_random", cost_model._h(), _iarg(budget, "budget"), _iarg(seed, "seed"),
                      _farg(time_budget_s, "time_budget_s")), cost_model)


@_guarded
def search_exhaustive(cost_model, max_templates=2, time_budget_s=0.0):
    # type: (CostModel, int, float) -> Plan
    """Exhaustive search over plans of at most max_templates templates (small clusters)."""
    return Plan(_make(_PLAN, "arachne_search_exhaustive", cost_model._h(), _iarg(max_templates, "max_templates"),
                      _farg(time_budget_s, "time_budget_s")), cost_model)


# --------------------------------------------------------------------------
# Policy
# --------------------------------------------------------------------------

class Policy(_Handle):
    """The learned planning policy (arachne_policy).  Every POLICY_FIELDS name
    is a read-only int attribute (policy.params, policy.hidden, ...)."""

    _destroy_fn = "arachne_policy_destroy"
    _what = "Policy"

    def __init__(self, path):
        """Policy(path) loads a policy file (as Policy.load); see also
        Policy.create() and Policy.bundled()."""
        if isinstance(path, _POLICY):  # a handle made by the classmethods
            ptr = path
        elif isinstance(path, (str, bytes)) or hasattr(path, "__fspath__"):
            ptr = _make(_POLICY, "arachne_policy_load", _path(path, "path"))
        else:
            raise TypeError("Policy() takes a policy file path (str, os.PathLike), got %s "
                            "(Policy.create(seed) makes an untrained one)" % type(path).__name__)
        _Handle.__init__(self, ptr)

    @classmethod
    def create(cls, seed=0, hidden=0, layers=0):
        # type: (int, int, int) -> Policy
        """A randomly initialised (untrained) policy; 0 sizes pick the defaults."""
        return cls(_make(_POLICY, "arachne_policy_create", _iarg(seed, "seed"), _iarg(hidden, "hidden"),
                         _iarg(layers, "layers")))

    @classmethod
    def load(cls, path):
        # type: (Any) -> Policy
        return cls(_make(_POLICY, "arachne_policy_load", _path(path, "path")))

    @staticmethod
    def bundled_search():
        # type: () -> List[Tuple[str, str]]
        """Where the bundled policy is looked for, as (how, path) pairs in
        order -- the lookup of `arachne plan`: $ARACHNE_POLICY alone when set;
        else default.arpol in the source tree the loaded library was built in
        (LIBDIR/../examples/policies), then in its install prefix
        (LIBDIR/../share/arachne), then in this package's source tree and in
        install_prefix()/share/arachne, and last the copy packed next to
        this package by pip install."""
        env = os.environ.get("ARACHNE_POLICY")
        if env:
            return [("ARACHNE_POLICY", env)]
        libdir = os.path.dirname(os.path.realpath(library_path()))
        out = [("source tree of the library", os.path.join(libdir, os.pardir, "examples", "policies", "default.arpol")),
               ("install prefix of the library", os.path.join(libdir, os.pardir, "share", "arachne", "default.arpol"))]
        if _in_source_tree():
            out.append(("source tree", os.path.join(_REPO, "examples", "policies", "default.arpol")))
        out.append(("install prefix", os.path.join(install_prefix(), "share", "arachne", "default.arpol")))
        out.append(("next to the package", os.path.join(_HERE, "default.arpol")))
        seen = set()  # type: Set[str]
        uniq = []
        for how, p in out:
            p = os.path.normpath(p)
            if p not in seen:
                seen.add(p)
                uniq.append((how, p))
        return uniq

    @staticmethod
    def bundled_path():
        # type: () -> Optional[str]
        """The bundled policy file `arachne plan` would use (bundled_search()),
        or None when none is found.  $ARACHNE_POLICY is returned as set."""
        search = Policy.bundled_search()
        if search[0][0] == "ARACHNE_POLICY":
            return search[0][1]
        for _how, p in search:
            if os.path.isfile(p) and os.access(p, os.R_OK):
                return p
        return None

    @classmethod
    def bundled(cls):
        # type: () -> Policy
        """Loads the bundled policy (see bundled_search()).  Error(E_NOT_FOUND)
        listing the places tried when there is none; a policy named by
        $ARACHNE_POLICY that does not load is an error, not skipped."""
        p = cls.bundled_path()
        if p is None:
            raise Error(E_NOT_FOUND, "no bundled policy; tried: " +
                        "; ".join("%s: %s" % hp for hp in cls.bundled_search()))
        try:
            return cls.load(p)
        except Error as e:
            if os.environ.get("ARACHNE_POLICY"):
                raise Error(e.status, "ARACHNE_POLICY=%s: %s" % (p, e.message), e.status_name)
            raise

    def save(self, path):
        # type: (Any) -> None
        _check(_fn("arachne_policy_save")(self._h(), _path(path, "path")))

    def info(self, field):
        # type: (Any) -> int
        v = ctypes.c_double()
        _check(_fn("arachne_policy_info")(self._h(), _field(POLICY_FIELDS, field, "policy"), ctypes.byref(v)))
        return int(v.value)

    @property
    def metadata(self):
        # type: () -> str
        """The JSON metadata saved with the policy ("" when none)."""
        return self._borrowed_str("arachne_policy_metadata")

    @metadata.setter
    def metadata(self, text):
        # type: (Any) -> None
        if not isinstance(text, (str, bytes)):
            try:
                text = json.dumps(text, allow_nan=False)
            except (TypeError, ValueError) as e:
                raise ValueError("metadata: %s is not JSON (%s)" % (type(text).__name__, e)) from None
        _check(_fn("arachne_policy_set_metadata")(self._mutable(), _enc(text, "text")))

    def plan(self, cost_model, samples=1, seed=0, refine=0, refine_time_cap_s=0.0):
        # type: (CostModel, int, int, int, float) -> Plan
        """Plans the cost model's cluster: greedy (samples 1) or best of `samples`;
        refine > 0 then improves the plan with that many evaluations of local
        search from the best sample, the greedy plan and the best sample on
        other GPU types (half as many from each of the last two), as `arachne plan`
        does (arachne_plan_build_refined; REFINE_EVALUATIONS is the CLI
        default), refine_time_cap_s > 0 caps the refinement's wall time.  With
        the cost model's recompute_search 1 (the default) or 2, the plan may
        come back with full recomputation (arachne_plan_build_refined; its
        recompute field says so); with 0, in the cost model's mode."""
        if refine or (isinstance(cost_model, CostModel) and cost_model.get("recompute_search")):
            return Plan(_make(_PLAN, "arachne_plan_build_refined", self._h(), cost_model._h(),
                              _iarg(samples, "samples"), _iarg(seed, "seed"), _iarg(refine, "refine"),
                              _farg(refine_time_cap_s, "refine_time_cap_s")),
                        cost_model)
        return Plan(_make(_PLAN, "arachne_plan_build", self._h(), cost_model._h(), _iarg(samples, "samples"),
                          _iarg(seed, "seed")),
                    cost_model)

    def plan_rollout(self, cost_model, evaluations=0, time_cap_s=0.0, refine=0, refine_time_cap_s=0.0):
        # type: (CostModel, int, float, int, float) -> Plan
        """Plans the cost model's cluster by rollout decoding (arachne_plan_rollout):
        at every decision each allowed choice is completed greedily and priced, and
        the best is kept; never slower than the greedy plan.  evaluations > 0 caps
        the fills it spends, time_cap_s > 0 its wall time (0: no cap).  refine as
        in plan()."""
        plan = Plan(_make(_PLAN, "arachne_plan_rollout", self._h(), cost_model._h(),
                          _iarg(evaluations, "evaluations"), _farg(time_cap_s, "time_cap_s")),
                    cost_model)
        if refine:
            plan = plan.refine(cost_model, refine, refine_time_cap_s)
        return plan


def _policy_prop(field):
    def get(self):
        return self.info(field)
    get.__doc__ = "arachne_policy_info(%s)" % field
    return property(get)


for _k in POLICY_FIELDS:
    setattr(Policy, _k, _policy_prop(_k))

# --------------------------------------------------------------------------
# Trainer
# --------------------------------------------------------------------------

class Trainer(_Handle):
    """Trains a Policy in place on a list of compositions (arachne_trainer).

        t = arachne.Trainer(policy, seed=1, group_size=4)
        t.add_composition(cm, "llama-small")
        t.run(10, callback=lambda update, updates, mean_reward, best: print(update, mean_reward))
        plan = t.best_plan(0)

    The trainer keeps its policy and every added cost model alive; the policy
    cannot be changed from Python (its metadata) while the trainer lives.
    Options: TRAIN_OPTIONS keywords to the constructor or set(); statistics:
    get(field, composition) with TRAIN_STATS names.  Method: docs/training.md.
    """

    _destroy_fn = "arachne_trainer_destroy"
    _what = "Trainer"

    def __init__(self, policy, seed=0, **options):
        # type: (Policy, int, Any) -> None
        if not isinstance(policy, Policy):
            raise TypeError("Trainer(policy, seed=0, **options) takes a Policy")
        for k in options:
            if k not in TRAIN_OPTIONS:
                raise TypeError("Trainer() got an unexpected keyword argument '%s' (options: %s)"
                                % (k, ", ".join(TRAIN_OPTIONS)))
        ptr = _make(_TRAINER, "arachne_trainer_create", policy._h(), _iarg(seed, "seed"))
        _Handle.__init__(self, ptr, (policy,))
        self._running = False
        try:
            self.set(**options)
        except BaseException:
            self.close()
            raise

    @property
    def policy(self):
        # type: () -> Policy
        return self._parents[0] if self._parents else None

    @property
    def cost_models(self):
        # type: () -> List[CostModel]
        """The compositions' cost models, in composition order."""
        return list(self._parents[1:])

    def _free(self):
        # type: () -> None
        # called with _refs_lock held: the cost models may change again once no trainer holds them
        if not self._freed:
            for cm in self._parents[1:]:
                cm._trainers -= 1
        _Handle._free(self)

    def _idle(self):
        # type: () -> Any
        """The pointer, for calls the C library forbids during run() (they
        change the trainer: no other thread may be inside a call on it)."""
        h = self._exclusive()
        if self._running:
            raise Error(E_INVALID_ARGUMENT, "Trainer is running: only get(), get_option(), "
                        "composition_name() and save_checkpoint() may be called from its callback")
        return h

    def add_composition(self, cost_model, name=None):
        # type: (CostModel, Optional[str]) -> int
        """Adds a composition (a cost model, kept alive by the trainer; it must not
        change afterwards) and returns its index.  name None gives "comp<i>"."""
        if not isinstance(cost_model, CostModel):
            raise TypeError("add_composition() takes a CostModel")
        _check(_fn("arachne_trainer_add_composition")(self._idle(), cost_model._h(), _opt_enc(name, "name")))
        with _refs_lock:
            cost_model._borrowers += 1
            cost_model._trainers += 1  # CostModel.set refuses from now on
            self._parents = self._parents + (cost_model,)
        return len(self._parents) - 2

    def set(self, option=None, value=None, **options):
        # type: (Any, Any, Any) -> Trainer
        """Sets options: set("group_size", 4) or set(group_size=4, clip=0.1)
        (TRAIN_OPTIONS names or numbers; bools for pcgrad).  Returns self."""
        items = list(options.items())
        if option is not None:
            items.insert(0, (option, value))
        elif value is not None:
            raise TypeError("Trainer.set: an option name or number is needed, got None (value %r)" % (value,))
        for k, v in items:
            if isinstance(v, bool):
                v = 1 if v else 0
            _check(_fn("arachne_trainer_set")(self._idle(), _field(TRAIN_OPTIONS, k, "trainer option"),
                                              _farg(v, str(k))))
        return self

    def get_option(self, option):
        # type: (Any) -> Any
        """One option's value (an int for integer options)."""
        v = ctypes.c_double()
        _check(_fn("arachne_trainer_get_option")(self._h(), _field(TRAIN_OPTIONS, option, "trainer option"),
                                                 ctypes.byref(v)))
        return _intish(v.value)

    @property
    def options(self):
        # type: () -> Dict[str, Any]
        """Every option as a dict."""
        return dict((k, self.get_option(k)) for k in TRAIN_OPTIONS)

    def get(self, field, composition=-1):
        # type: (Any, int) -> Any
        """One TRAIN_STATS value; per-composition fields need the composition index."""
        v = ctypes.c_double()
        f = _field(TRAIN_STATS, field, "trainer stat")
        _check(_fn("arachne_trainer_get")(self._h(), _iarg(composition, "composition"), f, ctypes.byref(v)))
        return int(v.value) if f in [TRAIN_STATS[k] for k in _TRAIN_INT_STATS] else v.value

    @property
    def num_compositions(self):
        # type: () -> int
        return self.get("compositions")

    @property
    def updates_done(self):
        # type: () -> int
        return self.get("updates_done")

    def composition_name(self, composition):
        # type: (int) -> str
        return self._borrowed_str("arachne_trainer_composition_name", _iarg(composition, "composition"))

    def stats(self):
        # type: () -> Dict[str, Any]
        """Every global statistic, plus "compositions_stats": one dict per
        composition with its name and the per-composition statistics."""
        d = dict((k, self.get(k)) for k in TRAIN_STATS if k not in _TRAIN_COMP_STATS)  # type: Dict[str, Any]
        comps = []
        for i in range(d["compositions"]):
            c = {"name": self.composition_name(i)}  # type: Dict[str, Any]
            for k in _TRAIN_COMP_STATS:
                c[k] = self.get(k, i)
            comps.append(c)
        d["compositions_stats"] = comps
        return d

    def run(self, updates, callback=None):
        # type: (int, Any) -> int
        """Runs `updates` more updates.  callback(update, updates, mean_reward,
        best_iter_per_s) is called after each (best_iter_per_s: a list, one
        value per composition); a true return value stops the run early.  An
        exception raised by the callback stops the run and is re-raised here.
        Returns the number of updates done in total (updates_done); raises
        Error(E_CANCELLED) when the callback stopped the run."""
        h = self._idle()
        if self._parents:
            self._parents[0]._exclusive()  # training changes the policy's weights
            for cm in self._parents[1:]:
                cm._h()  # read by the run: held, so no other thread changes or frees them meanwhile
        if callback is None:
            cfun = TRAIN_CALLBACK()  # NULL
        else:
            if not callable(callback):
                raise TypeError("callback must be callable or None")
            caught = []  # type: List[BaseException]

            def trampoline(user, update, total, mean_reward, best, n):
                try:
                    values = [best[i] for i in range(n)] if best else []
                    return 1 if callback(update, total, mean_reward, values) else 0
                except BaseException as e:  # never let it cross the C boundary
                    caught.append(e)
                    return 1
            cfun = TRAIN_CALLBACK(trampoline)
        self._running = True
        try:
            rc = _fn("arachne_trainer_run")(h, _iarg(updates, "updates"), cfun, None)
        finally:
            self._running = False
        if callback is not None and caught:
            raise caught[0]
        _check(rc)
        del cfun  # kept alive until here: the C library calls it only during the run
        return self.updates_done

    def best_plan(self, composition=0):
        # type: (int) -> Plan
        """The best plan found for a composition, priced with its cost model
        (Error E_NOT_FOUND before any was found)."""
        cm = self._parents[1 + int(composition)] if 0 <= int(composition) < len(self._parents) - 1 else None
        out = _PLAN()
        _check(_fn("arachne_trainer_best_plan")(self._idle(), _iarg(composition, "composition"), ctypes.byref(out)))
        return Plan(out, cm)

    def save_checkpoint(self, path):
        # type: (Any) -> None
        """Writes a training checkpoint atomically (allowed from the callback)."""
        _check(_fn("arachne_trainer_save_checkpoint")(self._h(), _path(path, "path")))

    def load_checkpoint(self, path):
        # type: (Any) -> None
        """Restores a checkpoint into a trainer built the same way."""
        _check(_fn("arachne_trainer_load_checkpoint")(self._idle(), _path(path, "path")))

    def __repr__(self):
        if self._closed:
            return "Trainer(<closed>)"
        return "Trainer(compositions=%d, updates_done=%d)" % (self.num_compositions, self.updates_done)


# --------------------------------------------------------------------------
# Replanning
# --------------------------------------------------------------------------

class _ReplanOptions(_Handle):
    _destroy_fn = "arachne_replan_options_destroy"
    _what = "replan options"


class Decision(_Handle):
    """The outcome of arachne.replan(): keep or switch, why, and the migration
    to the new plan (arachne_replan_decision).  Every DECISION_FIELDS name is
    an attribute (decision.cost_s, decision.bytes_moved, ...; action and
    reason as their names "keep"/"switch" and "not-faster", ...; the count
    of migration entries as num_migrations, the entries by migrations()).  It keeps
    the cost model and the running plan of the replan alive."""

    _destroy_fn = "arachne_replan_decision_destroy"
    _what = "Decision"

    def __init__(self, _ptr, parents=()):
        if not isinstance(_ptr, _REPLAN_DECISION):
            raise TypeError("Decision objects come from arachne.replan(), got %s" % type(_ptr).__name__)
        _Handle.__init__(self, _ptr, parents)

    def get(self, field):
        # type: (Any) -> Any
        """One DECISION_FIELDS value as a number (ints for counts, enums, bytes)."""
        v = ctypes.c_double()
        f = _field(DECISION_FIELDS, field, "decision")
        _check(_fn("arachne_replan_get")(self._h(), f, ctypes.byref(v)))
        return int(v.value) if f in [DECISION_FIELDS[k] for k in _DECISION_INT_FIELDS] else v.value

    @property
    def action(self):
        # type: () -> str
        """ "keep" or "switch"."""
        return REPLAN_ACTIONS.get(self.get("action"), str(self.get("action")))

    @property
    def reason(self):
        # type: () -> str
        return REPLAN_REASONS.get(self.get("reason"), str(self.get("reason")))

    @property
    def keep(self):
        # type: () -> bool
        return self.get("action") == REPLAN_KEEP

    @property
    def switch(self):
        # type: () -> bool
        return self.get("action") == REPLAN_SWITCH

    @property
    def gain(self):
        # type: () -> float
        """Net samples of switching over the horizon (NET_SAMPLES; > 0 pays off)."""
        return self.get("net_samples")

    @property
    def explanation(self):
        # type: () -> str
        return self._borrowed_str("arachne_replan_explain")

    def idle(self, gpu_type=None):
        # type: (Optional[str]) -> int
        """GPUs of a type (None: all types) of the new cluster the chosen plan leaves idle."""
        v = ctypes.c_int()
        _check(_fn("arachne_replan_idle_gpus")(self._h(), _opt_enc(gpu_type, "gpu_type"), ctypes.byref(v)))
        return v.value

    def migration_get(self, i, field):
        # type: (int, Any) -> Any
        v = ctypes.c_double()
        f = _field(MIGRATION_FIELDS, field, "migration")
        _check(_fn("arachne_replan_migration_get")(self._h(), _iarg(i, "i"), f, ctypes.byref(v)))
        return int(v.value) if f in [MIGRATION_FIELDS[k] for k in _MIGRATION_INT_FIELDS] else v.value

    def migration(self, i):
        # type: (int) -> Dict[str, Any]
        """Migration entry i as a dict (MIGRATION_FIELDS; link as "intra", "inter" or "checkpoint")."""
        d = dict((k, self.migration_get(i, k)) for k in MIGRATION_FIELDS)  # type: Dict[str, Any]
        d["link"] = MIGRATION_LINKS.get(int(d["link"]), int(d["link"]))
        return d

    def migrations(self):
        # type: () -> List[Dict[str, Any]]
        return [self.migration(i) for i in range(self.get("migrations"))]

    def to_json(self):
        # type: () -> str
        """The "arachne-replan" version 1 JSON (docs/replan.md)."""
        return self._borrowed_str("arachne_replan_to_json")

    def to_dict(self):
        # type: () -> Dict[str, Any]
        return json.loads(self.to_json())

    def __repr__(self):
        if self._closed:
            return "Decision(<closed>)"
        return "Decision(action=%r, reason=%r, net_samples=%.6g)" % (self.action, self.reason, self.gain)


def _decision_prop(field):
    def get(self):
        return self.get(field)
    get.__doc__ = "arachne_replan_get(%s)" % field
    return property(get)


for _k in DECISION_FIELDS:
    if _k not in ("action", "reason", "migrations"):
        setattr(Decision, _k, _decision_prop(_k))
Decision.num_migrations = _decision_prop("migrations")


@_guarded
def replan(policy, cost_model_new, running_plan, horizon_s=None, restart_cost_s=None, samples=None, seed=None,
           refine_evaluations=None):
    # type: (Policy, CostModel, Plan, Any, Any, Any, Any, Any) -> Tuple[Plan, Decision]
    """Replans a running plan for the cluster of cost_model_new (same model and
    setup) and decides whether to keep it or switch (docs/replan.md).
    Options left None keep the library defaults (horizon 1800 s, restart
    20 s, 1 sample = greedy, seed 0, no refinement of the new plan).  Returns (plan to run from now on,
    Decision); the plan belongs to cost_model_new."""
    if not isinstance(policy, Policy) or not isinstance(cost_model_new, CostModel) \
            or not isinstance(running_plan, Plan):
        raise TypeError("replan(policy, cost_model_new, running_plan, ...) takes a Policy, "
                        "a CostModel and a Plan")
    given = {"horizon_s": horizon_s, "restart_cost_s": restart_cost_s, "samples": samples, "seed": seed,
             "refine_evaluations": refine_evaluations}
    with _ReplanOptions(_make(_REPLAN_OPTIONS, "arachne_replan_options_create")) as opts:
        for k, v in given.items():
            if v is None:
                continue
            if k in ("samples", "seed", "refine_evaluations"):
                # the options travel as a C double: an integer above 2**53 would arrive rounded
                v = _iarg(v, k)
                if abs(v) > 1 << 53:
                    raise OverflowError("%s = %d does not fit exactly in a replan option (at most 2**53)" % (k, v))
            _check(_fn("arachne_replan_options_set")(opts._h(), REPLAN_OPTIONS[k], _farg(v, k)))
        plan = _PLAN()
        dec = _REPLAN_DECISION()
        _check(_fn("arachne_replan")(ctypes.byref(plan), ctypes.byref(dec), policy._h(), cost_model_new._h(),
                                     running_plan._h(), opts._h()))
    p = Plan(plan, cost_model_new)
    return p, Decision(dec, (cost_model_new, running_plan))


del _k, _i
