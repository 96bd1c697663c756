"""Paper protocols: task grids, label-noise injection, method registries and reports.

Not imported by ``import noisycal``. The modules here may import scikit-learn (the
``experiments`` extra: ``pip install noisycal[experiments]``).

- :mod:`noisycal.experiments.set_mass`: the calibration/test-split comparison of
  "Adaptive Set-Mass Calibration with Conformal Prediction";
- :mod:`noisycal.experiments.tasks`: the nine binary tabular tasks of Table II of
  "LWCal: Loss-Weighted Calibration for Tabular Classifiers with Noisy Calibration Labels";
- :mod:`noisycal.experiments.noise`: stratified splits and nested label noise;
- :mod:`noisycal.experiments.methods`: base learners and the calibration methods compared;
- :mod:`noisycal.experiments.evaluate`: test metrics and the paired bootstrap over cells;
- :mod:`noisycal.experiments.grid`: the resumable, parallel grid runner;
- :mod:`noisycal.experiments.report`: the tables beside the paper's;
- ``python -m noisycal.experiments.lwcal_protocol``: the command line.
"""

__all__: list[str] = []
