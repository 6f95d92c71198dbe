"""Privacy audit of every private mechanism and algorithm (``python -m experiments.audit``).

For each claimed ε (default 0.1, 0.5, 1, 2) it prints, and writes under ``--out`` (default
``results/audit``: ``audit.csv``, ``audit.json``, ``audit.png``), the certified lower bound
ε_lower of `jaxbai.audit` at 95% confidence, the event that achieved it and the number of
samples (mechanisms, per input) or runs (algorithms, per table), and plots ε_lower against ε.
An ε_lower above the claimed ε would be a privacy violation.

Neighbouring inputs (chosen to make the bound large):

* scalar mechanisms: the reward x = 0 against x′ = 1 (sensitivity 1);
* ``daf_release``: AdaP-TT's ask/tell ``update`` on eight rewards of arm 0, the output being
  μ̃ after the update that closes phase 3 (Ñ = 4, rewards 4–7, Alg. 5); all rewards 0, against
  reward 4 = 1;
* ``dpse_release``: one DP-SE ``step`` (epoch 1, both arms, Lap(1/(εR₁)) on each mean) on the
  DP-SE tables below; the output is the pair of private means;
* jaxbai's Top Two global-DP algorithms (AdaP-TT, AdaP-TT*, either episode mode): two arms,
  horizon 16, every reward 0, against participant 0 (the first pull of arm 0) with reward 1;
* jaxbai's DP-SE: two arms, horizon 2R₁ at the smallest ε (R₁ pulls per arm in epoch 1); arm
  0's rewards are v (arm 1's are 0), with v placing epoch 1's elimination test
  μ̃₀ − μ̃₁ > 2(h₁ + c₁) four Laplace scales 1/(εR₁) into the tail; participant 0 (arm 0's
  first pull) has reward 0, against 1 (`dpse_tables`, docs/audits.md gives the formula). With
  two arms the record is (τ, â), i.e. whether epoch 1 eliminates arm 1;
* any other registered global-DP algorithm (a plugin's, or one registered from Python): the
  tables `jaxbai.audit.neighbouring_tables` finds for it at each ε, on pilot runs of half the
  runs per table (at most `jaxbai.audit.SEARCH_RUNS`) from a key stream the audit never uses.

``--algorithms NAME ...`` audits only those registered algorithms (a plugin's too, loaded with
``--plugin MODULE``) and no mechanism; without it, every mechanism and every registered
private algorithm. An audit where no event separates the inputs is reported as "no evidence
at these tables (N events tried)", its ``epsilon_lower`` cell empty (never a bound of 0).

Each participant-side mechanism (`PARTICIPANT_MECHANISMS`, `jaxbai.base.Mechanism`) has two
rows built from the object: its name, for its simulation sampler (`Mechanism.privatize`), and
``secure`` and its name, for its real trials' sampler (`Mechanism.secure_privatize`, of
`jaxbai.mechanisms.secure`), with δ = its γ where it is (ε, γ)-DP (the Gaussian mechanism,
at γ = 10⁻³). Local-DP algorithms (CTB-TT, Gauss-LDP-TT, any registered one) are audited at
their own participant mechanism, ``alg.info.participant_mechanism`` (their guarantee): their
rows repeat the mechanism's. The ``secure_snapped_laplace`` row is the snapped Laplace release
of a trial of schema 1. The ``secure`` rows run on the host through
`jaxbai.audit.host_mechanism`, with seeded uniforms, on a fiftieth of the samples; the DP-SE
release on a tenth (each sample sums a whole table).

Planted bugs (``--planted``; `tests/test_audit.py` uses the same definitions): Laplace noise at
half its scale, randomised response at 3× its claimed ε, a wrapper that runs AdaP-TT at 8× the
ε it reports (`Overspending`, on the Top Two tables), AdaP-TT with a DAF that does not forget
earlier phases (`remembering_adap_tt`, whose loss only shows through composition over phases:
participant 0 enters every later release of arm 0) and DP-TT whose estimator re-noises the sum
of all rewards at each phase change (`renoising_dp_tt`, the same loss), all in
`experiments.audit.planted`. The last two run on `remembering_tables`: every reward ½ (the
arms' all-time means stay close, so every release of arm 0 keeps steering the pulls),
participant 0 with 0 against 1, horizon 64 (about five phases of arm 0; at horizon 16 too few,
at 128 the prefixes spread over too many values).

Usage:
    python -m experiments.audit [--runs N] [--samples N] [--epsilons E ...]
                                [--algorithms NAME ...] [--plugin MODULE] [--planted]
                                [--device cpu|gpu] [--out DIR] [--seed S]
"""

from experiments.audit.cli import main
from experiments.audit.planted import (
    Overspending,
    RememberingDAF,
    RenoisingCumulative,
    half_scale_laplace,
    remembering_adap_tt,
    renoising_dp_tt,
    tripled_randomised_response,
)
from experiments.audit.table import (
    EPSILONS,
    MECHANISMS,
    PARTICIPANT_MECHANISMS,
    REMEMBERING_HORIZON,
    TOPTWO_HORIZON,
    Row,
    algorithm_rows,
    audit_row,
    dpse_tables,
    remembering_tables,
    rows,
    toptwo_tables,
)

__all__ = [
    "EPSILONS",
    "MECHANISMS",
    "PARTICIPANT_MECHANISMS",
    "REMEMBERING_HORIZON",
    "TOPTWO_HORIZON",
    "Overspending",
    "RememberingDAF",
    "RenoisingCumulative",
    "Row",
    "algorithm_rows",
    "audit_row",
    "dpse_tables",
    "half_scale_laplace",
    "main",
    "remembering_adap_tt",
    "remembering_tables",
    "renoising_dp_tt",
    "rows",
    "toptwo_tables",
    "tripled_randomised_response",
]
