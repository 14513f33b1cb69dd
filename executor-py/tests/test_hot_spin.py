"""Unit tests of blockx_executor.hot_spin: which way the executor waits for its next request, from
the waits it reports (no clocks, no sockets)."""

import unittest

from blockx_executor.hot_spin import EXPLORE_EVERY, MIN_WAITS, SPIN_MARGIN, WINDOW, HotSpinPolicy

LIMIT_S = 0.001
FAST = 0.000100  # a request that came 100 µs after the answer
SLOW = 0.000300


def feed(policy, spin_wait, sleep_wait, n):
    """feed makes n eligible waits the policy's way, each taking what that way costs here;
    returns how many of them spun."""
    spun = 0
    for _ in range(n):
        spin = policy.choose()
        spun += spin
        policy.observe(spin, spin_wait if spin else sleep_wait)
    return spun


class HotSpinPolicyTest(unittest.TestCase):
    def test_spins_as_configured_until_both_ways_are_measured(self):
        p = HotSpinPolicy(LIMIT_S)
        # Spinning measured, sleeping not yet (fewer than MIN_WAITS): sleeping's cheaper waits do not count yet.
        for _ in range(WINDOW):
            p.observe(True, SLOW)
        for _ in range(MIN_WAITS - 1):
            p.observe(False, FAST)
        self.assertTrue(p.prefers_spin)
        p.observe(False, FAST)
        self.assertFalse(p.prefers_spin)

    def test_one_wait_in_explore_every_goes_the_other_way(self):
        p = HotSpinPolicy(LIMIT_S)
        ways = [p.choose() for _ in range(4 * EXPLORE_EVERY)]
        self.assertEqual(ways.count(False), 4)
        self.assertEqual([i for i, w in enumerate(ways) if not w], [EXPLORE_EVERY * k - 1 for k in range(1, 5)])

    def test_keeps_spinning_where_spinning_is_cheaper(self):
        p = HotSpinPolicy(LIMIT_S)
        spun = feed(p, FAST, SLOW, 20 * EXPLORE_EVERY)
        self.assertTrue(p.prefers_spin)
        self.assertEqual(spun, 20 * (EXPLORE_EVERY - 1))

    def test_stops_spinning_where_sleeping_is_cheaper(self):
        # A host where the spin holds the core the request needs: the next request comes later
        # while the executor spins than the wake-up it saves.
        p = HotSpinPolicy(LIMIT_S)
        feed(p, SLOW, FAST, MIN_WAITS * EXPLORE_EVERY)
        self.assertFalse(p.prefers_spin)
        spun = feed(p, SLOW, FAST, 20 * EXPLORE_EVERY)
        self.assertEqual(spun, 20)  # only the exploring waits
        self.assertFalse(p.prefers_spin)

    def test_follows_the_host_when_it_changes(self):
        p = HotSpinPolicy(LIMIT_S)
        feed(p, SLOW, FAST, 40 * EXPLORE_EVERY)
        self.assertFalse(p.prefers_spin)
        # The host quietens: spinning now saves the wake-up. The exploring spins see it, and once
        # the window's median of them is below sleeping's, the executor spins again.
        feed(p, FAST, SLOW, (WINDOW + 1) * EXPLORE_EVERY)
        self.assertTrue(p.prefers_spin)
        feed(p, SLOW, FAST, (WINDOW + 1) * EXPLORE_EVERY)
        self.assertFalse(p.prefers_spin)

    def test_a_spin_that_saves_less_than_the_margin_is_not_kept(self):
        # The spin's CPU is paid on every wait; a gain within the noise does not pay for it.
        p = HotSpinPolicy(LIMIT_S)
        feed(p, SLOW * (1.0 - SPIN_MARGIN / 2), SLOW, 20 * EXPLORE_EVERY)
        self.assertFalse(p.prefers_spin)
        p = HotSpinPolicy(LIMIT_S)
        feed(p, SLOW * (1.0 - SPIN_MARGIN * 2), SLOW, 20 * EXPLORE_EVERY)
        self.assertTrue(p.prefers_spin)

    def test_a_few_slow_waits_do_not_turn_the_spin_off(self):
        # Medians: a minority of outliers (a preempted client, a page fault) does not decide.
        p = HotSpinPolicy(LIMIT_S)
        for i in range(WINDOW):
            p.observe(True, SLOW * 3 if i % 4 == 0 else FAST)
            p.observe(False, SLOW)
        self.assertTrue(p.prefers_spin)

    def test_waits_longer_than_the_spin_say_nothing(self):
        # The caller paused between requests: neither way would have caught the request in time.
        p = HotSpinPolicy(LIMIT_S)
        for _ in range(WINDOW):
            p.observe(True, FAST)
            p.observe(False, SLOW)
        for _ in range(4 * WINDOW):
            p.observe(True, LIMIT_S * 1.5)
        self.assertTrue(p.prefers_spin)
        for _ in range(WINDOW):
            p.observe(False, FAST / 2)
        self.assertFalse(p.prefers_spin)


if __name__ == "__main__":
    unittest.main()
