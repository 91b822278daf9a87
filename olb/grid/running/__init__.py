"""Running: tasks fanned out (:mod:`~olb.grid.running.fanout`) to a backend (:mod:`~olb.grid.running.backends`)
whose workers run each cell or cross-validation task (:mod:`~olb.grid.running.worker`, what a Ray worker imports).
"""
