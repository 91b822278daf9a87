"""The driver: one grid run's stages in order (:mod:`~olb.grid.driver.app`), the stages themselves
(:mod:`~olb.grid.driver.stages`, :mod:`~olb.grid.driver.crossval`), what they share
(:mod:`~olb.grid.driver.context`), the dry run (:mod:`~olb.grid.driver.dryrun`) and the last stage's output files
(:mod:`~olb.grid.driver.finish`)."""
