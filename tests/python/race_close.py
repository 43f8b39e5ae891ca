#!/usr/bin/env python3
"""race_close.py BINDING_DIR [ROUNDS] -- the close/use race of every handle type.

Each round makes a fresh Model, Cluster, Profile, CostModel, Plan, Policy,
Trainer and replan Decision, then starts 12 threads: 10 call methods on them
in a loop, 2 close them in random order after a short random delay.  A call
may fail with arachne.Error (the handle is closed, or being changed); any
other exception, or a crash of this process, is a failure.  Prints
"ok ROUNDS CALLS ERRORS" on success, where ERRORS counts the arachne.Error
refusals seen (some must be seen, or the race was not exercised).  Runs as
its own process so that a crash fails the calling test instead of killing
the test runner.  BINDING_DIR is put first on sys.path (examples/python or
an old copy of the binding, to show the crash it fixes).
"""
import random
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])
import arachne  # noqa: E402

ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
SPEC = "a100-40:2x4,h100:1x8"
THREADS = 12
CLOSERS = 2


def make_handles(policy_seed):
    model = arachne.Model.preset("llama3-8b")
    cluster = arachne.Cluster.parse(SPEC)
    profile = arachne.Profile.generate(model, cluster, seq_len=4096)
    cm = arachne.CostModel(model, cluster, profile, global_batch=64)
    policy = arachne.Policy.create(seed=policy_seed)
    plan = policy.plan(cm, samples=1, seed=0)
    cm2 = arachne.CostModel(model, arachne.Cluster.parse("a100-40:2x4,h100:2x8"), global_batch=64)
    _, decision = arachne.replan(policy, cm2, plan, samples=1)
    trainer = arachne.Trainer(policy, seed=1)
    return [model, cluster, profile, cm, plan, policy, trainer, decision, cm2]


def uses(h):
    """Calls on the handles (each may raise arachne.Error once they close)."""
    model, cluster, profile, cm, plan, policy, trainer, decision, cm2 = h
    return [
        lambda: model.to_json(), lambda: model.get("hidden"), lambda: model.layer_flops("dense", 4096),
        lambda: cluster.to_string(), lambda: cluster.nodes, lambda: cluster.gpu_info("H100"),
        lambda: profile.lookup("H100", "dense", 1, 1), lambda: len(profile.entries()),
        lambda: cm.price(plan), lambda: cm.setup, lambda: cm.get("global_batch"),
        lambda: plan.to_dict(), lambda: plan.export("megatron"), lambda: plan.template(0), lambda: plan.to_svg(),
        lambda: policy.plan(cm, samples=1), lambda: policy.metadata, lambda: policy.params,
        lambda: trainer.options, lambda: trainer.stats(), lambda: trainer.set(group_size=4),
        lambda: decision.to_dict(), lambda: decision.migrations(), lambda: decision.explanation,
        lambda: arachne.search_random(cm, budget=3, seed=1),
        lambda: cm.plan_from_json(plan.to_json()),
    ]


def main():
    calls = [0]
    refused = [0]
    failures = []
    lock = threading.Lock()
    for rnd in range(ROUNDS):
        handles = make_handles(rnd)
        fns = uses(handles)
        start = threading.Barrier(THREADS)
        stop = threading.Event()

        def user(seed):
            rng = random.Random(seed)
            start.wait()
            n = bad = 0
            while not stop.is_set() and n < 400:
                n += 1
                try:
                    rng.choice(fns)()
                except arachne.Error:
                    bad += 1
                except Exception as e:  # noqa: BLE001 -- anything else is a binding bug
                    with lock:
                        failures.append("%s: %r" % (type(e).__name__, e))
                    return
            with lock:
                calls[0] += n
                refused[0] += bad

        def closer(seed):
            rng = random.Random(seed)
            start.wait()
            time.sleep(rng.uniform(0.0, 0.02))
            order = list(handles)
            rng.shuffle(order)
            for h in order:
                h.close()
                time.sleep(rng.uniform(0.0, 0.002))

        threads = [threading.Thread(target=closer if i < CLOSERS else user, args=(rnd * 100 + i,))
                   for i in range(THREADS)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        stop.set()
        for t in threads:
            t.join()
        not_freed = [type(h).__name__ for h in handles if not h._freed]
        if not_freed:
            failures.append("round %d: closed but never freed: %s" % (rnd, ", ".join(not_freed)))
        del handles, fns
    if failures:
        print("FAIL %d: %s" % (len(failures), "; ".join(failures[:5])))
        return 1
    print("ok %d %d %d" % (ROUNDS, calls[0], refused[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
