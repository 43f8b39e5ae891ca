"""arachne.Trainer: options, a tiny run with a recording callback, callback
exceptions and cancellation, statistics, best plans and checkpoints."""
import os
import tempfile
import unittest

from support import SMALL_SPEC, arachne, need, read

TRAINER = ("arachne_trainer_create", "arachne_trainer_add_composition", "arachne_trainer_run",
           "arachne_trainer_get", "arachne_policy_create", "arachne_cost_model_create",
           "arachne_profile_generate")


def small_setup(seed=3):
    """A small policy and a trainer on llama3-8b x SMALL_SPEC with a small group."""
    cm = arachne.CostModel(arachne.Model.preset("llama3-8b"), arachne.Cluster.parse(SMALL_SPEC),
                           global_batch=64)
    policy = arachne.Policy.create(seed=1, hidden=32, layers=1)
    t = arachne.Trainer(policy, seed=seed, group_size=2, ppo_epochs=1, max_steps=4)
    return policy, cm, t


class TrainerTest(unittest.TestCase):
    def setUp(self):
        need(*TRAINER)

    def test_options(self):
        policy = arachne.Policy.create(seed=1, hidden=32, layers=1)
        with arachne.Trainer(policy, group_size=4, clip=0.1, pcgrad=False) as t:
            self.assertEqual(t.get_option("group_size"), 4)
            self.assertAlmostEqual(t.get_option("clip"), 0.1)
            self.assertEqual(t.get_option("pcgrad"), 0)
            self.assertEqual(t.options["ppo_epochs"], 3)        # default
            self.assertAlmostEqual(t.options["sil_top"], 0.9)   # default
            self.assertEqual(t.options["greedy_rollouts"], 0)   # default
            self.assertEqual(t.options["size_curriculum"], 0)   # default
            self.assertEqual(t.options["refine_interval"], 0)   # default: off
            self.assertEqual(t.options["refine_evaluations"], 500)
            t.set(sil_top=0.97, greedy_rollouts=1, size_curriculum=40, refine_interval=5,
                  refine_evaluations=200)
            self.assertEqual(t.get_option("size_curriculum"), 40)
            self.assertEqual(t.get_option("refine_interval"), 5)
            self.assertEqual(t.get_option("refine_evaluations"), 200)
            with self.assertRaises(arachne.Error):
                t.set(refine_evaluations=0)                       # below 1
            self.assertEqual(t.options["entropy_end_scale"], 1)   # default: constant
            t.set(entropy=0.02, entropy_end_scale=0.5, entropy_decay_start=0, updates=4)
            self.assertAlmostEqual(t.stats()["entropy_coef"], 0.02)  # no update done yet
            with self.assertRaises(arachne.Error):
                t.set(entropy_end_scale=2)                        # above 1
            with self.assertRaises(arachne.Error):
                t.set(entropy_decay_start=0.5)                    # not an integer
            self.assertEqual(t.options["rollout_interval"], 0)  # default: off
            self.assertEqual(t.options["rollout_evaluations"], 2000)
            self.assertEqual(t.options["rollout_weight"], 1)
            t.set(rollout_interval=10, rollout_evaluations=0, rollout_weight=0.5)
            self.assertEqual(t.get_option("rollout_interval"), 10)
            self.assertAlmostEqual(t.get_option("rollout_weight"), 0.5)
            with self.assertRaises(arachne.Error):
                t.set(rollout_weight=-1)                          # below 0
            self.assertAlmostEqual(t.get_option("sil_top"), 0.97)
            self.assertEqual(t.get_option(arachne.TRAIN_OPTIONS["greedy_rollouts"]), 1)
            with self.assertRaises(arachne.Error):
                t.set(greedy_rollouts=1.5)                        # not an integer
            self.assertIs(t.set("ppo_epochs", 2), t)
            self.assertEqual(t.get_option(arachne.TRAIN_OPTIONS["ppo_epochs"]), 2)
            with self.assertRaises(arachne.Error) as e:
                t.set(group_size=1)                               # below 2
            self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
            self.assertEqual(t.get_option("group_size"), 4)       # unchanged
            with self.assertRaises(arachne.Error):
                t.set(no_such_option=1)
            self.assertEqual(t.num_compositions, 0)
            with self.assertRaises(arachne.Error) as e:
                t.run(1)                                          # no composition
            self.assertEqual(e.exception.status, arachne.E_INVALID_ARGUMENT)
        self.assertTrue(t.closed)
        with self.assertRaises(TypeError):
            arachne.Trainer(policy, bogus=1)
        with self.assertRaises(TypeError):
            arachne.Trainer("not a policy")

    def test_tiny_run_with_callback(self):
        policy, cm, t = small_setup()
        self.assertEqual(t.add_composition(cm, "small"), 0)
        self.assertEqual(t.composition_name(0), "small")
        self.assertIs(t.cost_models[0], cm)
        with self.assertRaises(arachne.Error) as e:
            t.best_plan(0)                                        # nothing found yet
        self.assertEqual(e.exception.status, arachne.E_NOT_FOUND)
        calls = []

        def cb(update, updates, mean_reward, best):
            calls.append((update, updates, mean_reward, list(best)))

        self.assertEqual(t.run(3, callback=cb), 3)
        self.assertEqual([c[0] for c in calls], [1, 2, 3])
        self.assertTrue(all(c[1] == 3 for c in calls))
        self.assertTrue(all(len(c[3]) == 1 and c[3][0] > 0 for c in calls))
        self.assertEqual(t.updates_done, 3)
        self.assertEqual(policy.train_steps, 3)                   # trained in place
        st = t.stats()
        self.assertEqual(st["compositions"], 1)
        self.assertEqual(st["updates_done"], 3)
        self.assertEqual(st["refined_plans"], 0)                  # refinement off
        self.assertEqual(st["refine_misses"], 0)
        comp = st["compositions_stats"][0]
        self.assertEqual(comp["name"], "small")
        self.assertAlmostEqual(comp["best_iter_per_s"], calls[-1][3][0])
        self.assertGreater(comp["ref_iter_per_s"], 0)
        self.assertGreater(comp["evaluations"], 0)
        self.assertAlmostEqual(st["mean_norm_reward"], calls[-1][2])
        plan = t.best_plan(0)
        self.assertIs(plan.cost_model, cm)
        self.assertAlmostEqual(plan.iter_per_s, comp["best_iter_per_s"], places=6)
        self.assertEqual(t.run(1), 4)                             # no callback
        # a same-seed trainer gives the same policy bytes
        policy2, cm2, t2 = small_setup()
        t2.add_composition(cm2, "small")
        t2.run(3)
        t2.run(1)
        with tempfile.TemporaryDirectory() as tmp:
            a, b = os.path.join(tmp, "a.arpol"), os.path.join(tmp, "b.arpol")
            policy.save(a)
            policy2.save(b)
            self.assertEqual(read(a, "rb"), read(b, "rb"))
        # the trainer keeps what it borrows alive
        del policy, cm
        self.assertFalse(t.policy.closed)
        self.assertGreater(t.best_plan(0).iter_per_s, 0)
        t.close()
        t2.close()

    def test_callback_stop_and_exception(self):
        policy, cm, t = small_setup()
        t.add_composition(cm)
        self.assertEqual(t.composition_name(0), "comp0")
        seen = []
        with self.assertRaises(arachne.Error) as e:
            t.run(5, callback=lambda u, n, r, b: seen.append(u) or u >= 2)   # stop after update 2
        self.assertEqual(e.exception.status, arachne.E_CANCELLED)
        self.assertEqual(seen, [1, 2])
        self.assertEqual(t.updates_done, 2)                       # kept

        class Boom(Exception):
            pass

        def bad(update, updates, mean_reward, best):
            seen.append(update)
            raise Boom("from the callback at %d" % update)

        del seen[:]
        with self.assertRaises(Boom) as e:
            t.run(4, callback=bad)
        self.assertIn("at 3", str(e.exception))
        self.assertEqual(seen, [3])                               # cancelled at once
        self.assertEqual(t.updates_done, 3)
        self.assertEqual(t.run(1), 4)                             # still usable

        def reenter(update, updates, mean_reward, best):
            t.set(clip=0.3)                                       # not allowed during run

        with self.assertRaises(arachne.Error) as e:
            t.run(1, callback=reenter)
        self.assertIn("running", e.exception.message)
        self.assertAlmostEqual(t.get_option("clip"), 0.2)

    def test_checkpoint_from_callback(self):
        need("arachne_trainer_save_checkpoint", "arachne_trainer_load_checkpoint")
        with tempfile.TemporaryDirectory() as tmp:
            ck = os.path.join(tmp, "t.ckpt")
            policy, cm, t = small_setup()
            t.add_composition(cm, "small")
            t.run(2, callback=lambda u, n, r, b: t.save_checkpoint(ck) if u == 1 else None)
            self.assertTrue(os.path.exists(ck))
            policy2, cm2, t2 = small_setup()
            t2.add_composition(cm2, "small")
            t2.load_checkpoint(ck)
            self.assertEqual(t2.updates_done, 1)
            t2.run(1)
            a, b = os.path.join(tmp, "a.arpol"), os.path.join(tmp, "b.arpol")
            policy.save(a)
            policy2.save(b)
            self.assertEqual(read(a, "rb"), read(b, "rb"))        # resumed bit-identically
            with self.assertRaises(arachne.Error) as e:
                t2.load_checkpoint(os.path.join(tmp, "missing.ckpt"))
            self.assertEqual(e.exception.status, arachne.E_IO)

    def test_policy_locked_while_training(self):
        policy, cm, t = small_setup()
        with self.assertRaises(arachne.Error):
            policy.metadata = {"x": 1}
        t.close()
        policy.metadata = {"x": 1}
        self.assertIn("x", policy.metadata)


if __name__ == "__main__":
    unittest.main()
