"""Recording: the trackers (MLflow or none) that keep each cell's and cross-validation task's run, the resume
that reads them back, and the driver's handler of each result (:mod:`~olb.grid.recording.recorder`)."""
