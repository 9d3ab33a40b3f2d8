"""A small agent the contract tests build on (not registered): each test overrides one
method to probe, or to break, the contract."""

from dpbandits.agents import Agent


class RandomArms(Agent):
    """Uniformly random arms from the generator given to ``reset``; learns nothing; not
    private."""

    def _reset(self, n_reps, rng):
        self.rng = rng

    def act(self, contexts):
        return self.rng.integers(0, self.n_arms, len(contexts))

    def _update(self, contexts, arms, rewards):
        pass

    @property
    def privacy(self):
        return None
