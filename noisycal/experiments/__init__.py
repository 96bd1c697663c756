"""Paper protocols (not imported by ``import noisycal``): ``set_mass`` runs the
calibration/test-split comparison of "Adaptive Set-Mass Calibration with Conformal
Prediction"."""
