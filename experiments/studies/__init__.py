"""The studies beside the paper, ``python -m experiments.studies STUDY [options]``.

The comparisons with the published code (`experiments.studies.published_code`, rebuilt in
`experiments.studies.published_reference`), the AdaP-TT* ablation
(`experiments.studies.adap_tt_star_ablation`), the threshold-aware challenger
(`experiments.studies.ratio_challenger`), DP-TT (`experiments.studies.dp_tt`,
`experiments.studies.dp_tt_theory`), their shared per-cell statistics
(`experiments.studies.cells`), and the plain-Python transcription of the paper's algorithms
(`experiments.studies.reference` and its companions). The command line is
`experiments.studies.cli`.
"""

from experiments.studies.cli import main

__all__ = ["main"]
