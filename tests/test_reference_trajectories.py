"""Trajectory equality between the JAX ask/tell API and the plain-Python transcription.

Both sides consume the same reward table (Beta arms, so no two means tie), the same
privatised observations (randomised response, Alg. 4; Gaussian mechanism, Alg. 8 — computed
here, then fed to `update`), the same Laplace draws (injected through ``release=`` for DAF,
Alg. 5, and DP-SE) and the same tie-breaking priority (read from the JAX state). They must
pull the same arms in the same order, stop at the same τ and recommend the same arm: TTUCB
(Alg. 6), CTB-TT (Alg. 7), (ε, γ)-DP TTUCB (Alg. 8), AdaP-TT (Alg. 9), AdaP-TT* (Alg. 10) and
DP-SE, for both threshold families and both AdaP-TT(*) leader bonuses; and AdaP-TT* with the
threshold-aware challenger (``adap_tt_star_ratio``, beyond the paper), with ε/2 above every gap,
between them and below them.

Appendix H: TTUCB with DPA (Alg. 11, docs/semantics.md §17) with per-arm or one global episode,
AdaP-TT(*) with one global episode (§18), compared with the rounds of adaptivity (§20); and the
batch plans of the episodic algorithms (§19) against what `select` pulls.
"""

from __future__ import annotations

import functools
import math
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _trajectories import (
    BATCH_STEPS,
    DELTA,
    MAX_DEFERRED,
    MAX_STEPS,
    MEANS,
    NO_NOISE,
    NUM_ARMS,
    TOLERANCE,
    assert_same,
    tables,
    trajectory_jax,
)
from test_dp_tt import TRAJECTORY_CASES as DP_TT_CASES

import jaxbai
from experiments.studies import reference

DPSE_MEANS = (0.8, 0.65, 0.5, 0.2)
"""For DP-SE: a 0.15 gap lies between 2h_1 and 2(h_1 + c_1) at ε = 0.05, so c_e matters."""
RATIO_SAMPLES_PER_DEFERRAL = 5000
"""The threshold-aware challenger may defer once more per this many samples: it equalises the
real-valued ratios W/c, so two arms' ratios cross at nearly every challenger pull once the
allocation has settled (the deferred near-ties of the cases below are within 3e-7, relative)."""
PLAN_LEN = 4096
"""``max_len`` of the batch plans."""
PLAN_STEPS = 10_000
"""The plan test follows a trajectory up to its stop or up to this many samples."""


def observations(name: str, epsilon: float, gamma: float | None, seed: int) -> np.ndarray:
    """What the algorithm sees: the rewards, privatised by the user-side mechanism if local DP
    (``gamma``: the Gaussian mechanism's)."""
    t = tables(seed)
    reward = t["reward"].astype(np.float64)
    if name == "ctb_tt":
        obs = [
            [reference.randomised_response(r, u, epsilon) for r, u in zip(row, urow, strict=True)]
            for row, urow in zip(reward.tolist(), t["uniform"].tolist(), strict=True)
        ]
    elif name == "gauss_ldp_tt":
        obs = [
            [
                reference.gaussian_mechanism(r, g, epsilon, gamma)
                for r, g in zip(row, grow, strict=True)
            ]
            for row, grow in zip(reward.tolist(), t["normal"].tolist(), strict=True)
        ]
    else:
        obs = reward
    return np.asarray(obs, np.float32)


def case(name, epsilon, threshold=None, leader_bonus=None, seed=0, episodes=None, cost=None):
    """One parametrisation: (factory name, factory kwargs, ε, seed)."""
    options = (
        ("threshold", threshold),
        ("leader_bonus", leader_bonus),
        ("episodes", episodes),
        ("cost", cost),
    )
    kwargs = {k: v for k, v in options if v}
    eps = None if epsilon is None else f"eps{epsilon:g}"
    label = "-".join(x for x in (name, threshold, leader_bonus, episodes, cost, eps) if x)
    if seed:
        label += f"-seed{seed}"
    return pytest.param(name, kwargs, epsilon, seed, id=label)


def slow(param):
    """``param`` marked slow (excluded by default; ``-m slow`` runs it)."""
    return pytest.param(*param.values, id=param.id, marks=pytest.mark.slow)


TOP_TWO_CASES = [
    *(case("ttucb", None, t) for t in ("heuristic", "theory")),
    # Beyond the paper: the Bernoulli-KL cost (rewards of the tables are Beta, in [0, 1]).
    *(case("ttucb", None, "heuristic", seed=s, cost="kl_bernoulli") for s in (0, 1)),
    *(case("ctb_tt", 2.0, t) for t in ("heuristic", "theory")),
    *(case("gauss_ldp_tt", 10.0, t) for t in ("heuristic", "theory")),
    *(
        case(name, eps, t, b)
        for name in ("adap_tt", "adap_tt_star")
        for t in ("heuristic", "theory")
        for b in ("time", "eq11")
        for eps in (NO_NOISE, 1.0)
    ),
    # ε/2 below the gaps: the second branch of Eq. (14) and of its heuristic form.
    *(case("adap_tt_star", 0.3, t) for t in ("heuristic", "theory")),
    # The threshold-aware challenger: W/c in one branch of Eq. (14) (ε = 1e9: ε/2 above every
    # gap; ε = 0.3: below them), in both (ε = 1: gap 0.6 from the best arm, the others < 0.5).
    *(case("adap_tt_star_ratio", eps, "heuristic") for eps in (NO_NOISE, 1.0, 0.3)),
    case("adap_tt_star_ratio", 0.3, "theory"),
    slow(case("adap_tt_star_ratio", 1.0, "theory")),
    slow(case("adap_tt_star_ratio", NO_NOISE, "theory")),
    slow(case("adap_tt_star_ratio", 1.0, "heuristic", "eq11")),
]


@pytest.mark.integration
@pytest.mark.parametrize(("name", "kwargs", "epsilon", "seed"), TOP_TWO_CASES)
def test_top_two_matches_reference(name, kwargs, epsilon, seed):
    """Alg. 6–10 (Alg. 1 instances): identical arms, τ and recommendation."""

    def table(alg, eps):
        mechanism = alg.info.participant_mechanism
        return observations(name, eps, None if mechanism is None else mechanism.measure.delta, seed)

    jax_and_reference(name, kwargs, epsilon, seed, table)


def jax_and_reference(name, kwargs, epsilon, seed, table, *, batched=False):
    """The JAX trajectory and the transcription's on the same tables; asserts they agree.

    ``table(alg, eps)`` gives the observations. ``batched`` runs Appendix H cases: capped at
    `BATCH_STEPS`, censored runs compared as censored.
    """
    alg = jaxbai.ALGORITHMS[name](**kwargs)
    params = alg.params(delta=DELTA) if epsilon is None else alg.params(epsilon, DELTA)
    eps = math.inf if epsilon is None else epsilon
    inject = epsilon is not None and epsilon != NO_NOISE
    observed = table(alg, eps)
    laplace = tables(seed)["laplace"]
    got, priority = trajectory_jax(alg, params, observed, laplace, inject, seed, batched=batched)
    want = reference.top_two(
        name,
        observed.astype(np.float64).tolist(),
        priority,
        DELTA,
        eps,
        laplace=laplace.tolist() if inject else None,
        max_samples=BATCH_STEPS if batched else MAX_STEPS,
        follow=got.arms,
        tolerance=TOLERANCE,
        censor=batched,
        **kwargs,
    )
    assert_same(got, want)
    limit = MAX_DEFERRED
    if name == "adap_tt_star_ratio":
        limit += got.tau // RATIO_SAMPLES_PER_DEFERRAL
    assert len(want.deferred) <= limit, f"float32 near-ties at samples {want.deferred}"
    return got, want


@pytest.mark.integration
@pytest.mark.parametrize("epsilon", [NO_NOISE, 0.05])
def test_dp_se_matches_reference(epsilon):
    """DP-SE: identical round-robin epochs, eliminations, τ and recommendation."""
    seed = 0
    alg = jaxbai.dp_se()
    params = alg.params(epsilon, DELTA)
    inject = epsilon != NO_NOISE
    table, laplace = tables(seed, DPSE_MEANS)["reward"], tables(seed, DPSE_MEANS)["laplace"]
    got, priority = trajectory_jax(alg, params, table, laplace, inject, seed)
    del priority  # DP-SE has no ties to break with continuous rewards
    want = reference.dp_se(
        table.astype(np.float64).tolist(), DELTA, epsilon, laplace.tolist() if inject else None
    )
    # R_e is floored; the JAX code computes it in float32. Flag a boundary case rather than
    # let float32 rounding masquerade as an algorithmic difference.
    active, epoch, start = NUM_ARMS, 1, 0
    while start < want.tau:
        real = reference.dpse_epoch(active, epoch, DELTA, epsilon)[0]
        assert abs(real - round(real)) > 1e-5 * real, f"R_{epoch} = {real} near an integer"
        pulls = math.floor(real) * active
        active = len(set(want.arms[start + pulls :])) or 1
        start, epoch = start + pulls, epoch + 1
    assert_same(got, want)


# ----------------------------------------------------------------------------- Appendix H
def batched(name, epsilon, threshold, episodes):
    """An Appendix H parametrisation."""
    return case(name, epsilon, threshold, seed=0, episodes=episodes)


BATCHED_CASES = [
    *(
        batched("ttucb_dpa", None, t, e)
        for t in ("heuristic", "theory")
        for e in ("per_arm", "global")
    ),
    *(
        batched(name, eps, t, "global")
        for name in ("adap_tt", "adap_tt_star")
        for t in ("heuristic", "theory")
        for eps in (NO_NOISE, 1.0)
    ),
    slow(batched("adap_tt_star_ratio", 1.0, "heuristic", "global")),
    batched("adap_tt_star_ratio", 0.3, "heuristic", "global"),
    batched("adap_tt_star_ratio", 0.3, "theory", "global"),
    slow(batched("adap_tt_star_ratio", 1.0, "theory", "global")),
]


@pytest.mark.integration
@pytest.mark.parametrize(("name", "kwargs", "epsilon", "seed"), BATCHED_CASES)
def test_batched_matches_reference(name, kwargs, epsilon, seed):
    """Alg. 11 and one global episode (Appendix H): identical arms, τ, recommendation, rounds.

    Runs are capped at `BATCH_STEPS` samples; one that does not stop must be censored on both
    sides, and must still pull every arm in its last quarter: with one global episode the
    leader reads the global counts, so no arm is starved (docs/semantics.md §18).
    """
    got, want = jax_and_reference(
        name, kwargs, epsilon, seed, lambda alg, eps: tables(seed)["reward"], batched=True
    )
    if want.recommendation < 0:
        starved = set(range(NUM_ARMS)) - set(want.arms[-BATCH_STEPS // 4 :])
        assert not starved, f"arms {starved} starved"
    assert got.rounds == want.rounds, f"rounds: JAX {got.rounds}, reference {want.rounds}"


def test_every_registered_algorithm_has_a_transcription_case():
    """The cases above build every registered algorithm (the global-episode entries as their
    per-arm factory with ``episodes="global"``), DP-SE aside (`test_dp_se_matches_reference`),
    DP-TT and EB-TCI (their own transcription, tests/test_dp_tt.py) and the published-code
    variants (tests/test_published.py); the transcription's own lists (kept independent of
    jaxbai) name registered algorithms, its episodic ones exactly the registered episodic ones."""
    cases = (*TOP_TWO_CASES, *BATCHED_CASES, *DP_TT_CASES)
    built = {jaxbai.ALGORITHMS[p.values[0]](**p.values[1]).name for p in cases}
    published = {n for n, e in jaxbai.ALGORITHMS.items() if e.published_code_of}
    assert set(jaxbai.ALGORITHMS) - {"dp_se", *published} <= built
    assert set(reference.TOP_TWO) <= set(jaxbai.ALGORITHMS)
    episodic = {n for n in reference.TOP_TWO if jaxbai.ALGORITHMS.get_entry(n).episodic}
    assert set(reference.EPISODIC) == episodic


@functools.partial(jax.jit, static_argnames=("alg",))
def follow_select(alg, state, params, key, table, taken, length):
    """``length`` ask/tell pulls from ``state``, the rewards read from ``table``.

    Returns (arms, rounds after each pull, stopped before each pull, state, taken), the arrays
    `PLAN_LEN` long (−1 / False past ``length``).
    """

    def cond(carry):
        return carry[-1] < length

    def body(carry):
        state, taken, arms, rounds, stopped, i = carry
        stopped = stopped.at[i].set(alg.stopping(state, params)[0])
        arm = alg.select(state, params)
        z = table[arm, taken[arm]]
        state = alg.update(jax.random.fold_in(key, state.n), state, arm, z, params)
        arms = arms.at[i].set(arm)
        rounds = rounds.at[i].set(alg.rounds(state))
        return state, taken.at[arm].add(1), arms, rounds, stopped, i + 1

    arms = jnp.full(PLAN_LEN, -1, jnp.int32)
    rounds = jnp.full(PLAN_LEN, -1, jnp.int32)
    stopped = jnp.zeros(PLAN_LEN, bool)
    carry = (state, taken, arms, rounds, stopped, jnp.int32(0))
    state, taken, arms, rounds, stopped, _ = jax.lax.while_loop(cond, body, carry)
    return arms, rounds, stopped, state, taken


PLAN_CASES = [
    case("ttucb_dpa", None, episodes="per_arm"),
    case("ttucb_dpa", None, episodes="global"),
    case("adap_tt", 1.0, episodes="per_arm"),
    case("adap_tt", 1.0, episodes="global"),
    case("adap_tt_star_ratio", 1.0, episodes="per_arm"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("name", "kwargs", "epsilon", "seed"), PLAN_CASES)
def test_plan_matches_select(name, kwargs, epsilon, seed):
    """Batch plans (docs/semantics.md §19) are what `select` pulls, whatever the rewards.

    At the start and at every episode end of a trajectory, and at one random point inside each
    episode: the planned arms are the arms pulled by the ask/tell loop over the next ``length``
    pulls, both with the trajectory's rewards and with an unrelated reward table; entries past
    ``length`` are −1; no planned pull comes after the stop; no episode ends before the last
    planned pull, and the last one ends an episode unless ``length`` is `PLAN_LEN` (after the
    K initial pulls; before them only the arms are checked).
    """
    alg = jaxbai.ALGORITHMS[name](**kwargs)
    params = alg.params(delta=DELTA) if epsilon is None else alg.params(epsilon, DELTA)
    key = jax.random.key(seed)
    rewards = jnp.asarray(tables(seed)["reward"])
    other = jnp.asarray(tables(seed + 1, MEANS[::-1])["reward"])
    plan = jax.jit(alg.plan, static_argnames=("max_len",))
    rng = np.random.default_rng(seed)

    def check(state, taken):
        """Checks the plan at ``state``; returns it and the state and reads after it."""
        planned, length = plan(state, params, max_len=PLAN_LEN)
        planned, length = np.asarray(planned), int(length)
        n, before = int(state.n), int(alg.rounds(state))
        where = f"plan at n={n} (rounds {before}, length {length}): "
        assert 1 <= length <= PLAN_LEN, where
        assert planned.shape == (PLAN_LEN,) and (planned[length:] == -1).all(), where
        for table in (rewards, other):
            arms, rounds, stopped, after, read = follow_select(
                alg, state, params, key, table, taken, length
            )
            arms, rounds, stopped = np.asarray(arms), np.asarray(rounds), np.asarray(stopped)
            first = int(np.argmax(arms[:length] != planned[:length]))
            assert (arms[:length] == planned[:length]).all(), (
                f"{where}pull {n + first}: planned {planned[first]}, select {arms[first]}"
            )
            assert not stopped[:length].any(), f"{where}planned pulls after the stop"
            if n >= NUM_ARMS:
                assert (rounds[: length - 1] == before).all(), f"{where}episode ends inside"
                ended = rounds[length - 1] > before or bool(alg.stopping(after, params)[0])
                assert ended or length == PLAN_LEN, f"{where}last pull ends no episode"
            if table is rewards:
                result = after, read
        return planned, length, *result

    state = alg.init(key, params, NUM_ARMS)
    taken = jnp.zeros(NUM_ARMS, jnp.int32)
    checked = 0
    while int(state.n) < PLAN_STEPS and not bool(alg.stopping(state, params)[0]):
        planned, length, end, end_taken = check(state, taken)
        checked += 1
        if length > 1:  # a random point inside the episode: the rest of the same plan
            j = int(rng.integers(1, length))
            _, _, _, mid, mid_taken = follow_select(alg, state, params, key, rewards, taken, j)
            rest, rest_length, _, _ = check(mid, mid_taken)
            if length < PLAN_LEN:
                assert rest_length == length - j, f"plan at n={int(mid.n)}: length"
            assert (rest[: length - j] == planned[j:length]).all(), f"plan at n={int(mid.n)}"
            checked += 1
        state, taken = end, end_taken
    assert checked > NUM_ARMS + 2


def test_plan_rejects_sequential():
    """A fully sequential algorithm has no batch plan (docs/semantics.md §19): it is not
    `Episodic`, and a cohort of it is a ValueError."""
    alg = jaxbai.ALGORITHMS["ttucb"]()
    assert not isinstance(alg, jaxbai.base.Episodic) and not hasattr(alg, "plan")
    with (
        pytest.raises(ValueError),
        jaxbai.Trial.create(
            tempfile.mkdtemp() + "/t.trial", "ttucb", NUM_ARMS, None, DELTA, 0, noise="prng"
        ) as trial,
    ):
        trial.next_batch()
