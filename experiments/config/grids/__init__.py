"""The paper's experiment grids (Section 5, Appendix I), shipped as experiment files.

Every preset is a TOML file of this directory, ``experiments/config/grids/<name>.toml``, read by
`experiments.config.load` exactly like a user's file: ``--preset fig2`` and
``--config experiments/config/grids/fig2.toml`` are the same sweep. Every algorithm runs on the ε
grid
of its trust model (local or global DP, from the registry `jaxbai.ALGORITHMS`); non-private
algorithms run once per (instance, δ) at ε = ∞.

Examples:
    >>> cfg = config_from_preset("fig2")
    >>> cfg.epsilons_for("adap_tt")[:3], cfg.epsilons_for("ttucb")
    ((0.001, 0.005, 0.01), (inf,))
    >>> import dataclasses, jaxbai
    >>> def adap_tt_b3(**options):
    ...     return dataclasses.replace(jaxbai.adap_tt(beta=0.3, **options), name="adap_tt_b3")
    >>> _ = jaxbai.register("adap_tt_b3", adap_tt_b3, "AdaP-TT (β = 0.3)")
    >>> jaxbai.ALGORITHMS["adap_tt_b3"].info().privacy, jaxbai.ALGORITHMS["adap_tt_b3"].display_name
    ('global', 'AdaP-TT (β = 0.3)')
    >>> cfg.epsilons_for("adap_tt_b3") == cfg.global_epsilons
    True
    >>> jaxbai.unregister("adap_tt_b3")
"""

from experiments.config.presets import (
    GLOBAL_EPSILONS,
    GRID_DIR,
    LOCAL_EPSILONS,
    PRESETS,
    Preset,
    SweepConfig,
    config_from_preset,
    validate,
)

__all__ = [
    "GLOBAL_EPSILONS",
    "GRID_DIR",
    "LOCAL_EPSILONS",
    "PRESETS",
    "Preset",
    "SweepConfig",
    "config_from_preset",
    "validate",
]
