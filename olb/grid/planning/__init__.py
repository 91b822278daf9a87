"""Planning: the experiment config checked (:mod:`~olb.grid.planning.configcheck`) and expanded into the plan's
cells (:mod:`~olb.grid.planning.expand`), every problem at once, before any work."""
