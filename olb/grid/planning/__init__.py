"""Planning: the grid's structured config (:mod:`~olb.grid.planning.config`) checked
(:mod:`~olb.grid.planning.configcheck`) and expanded into the plan's cells (:mod:`~olb.grid.planning.expand`,
:mod:`~olb.grid.planning.plan`), every problem at once, before any work; and what the plan will cost
(:mod:`~olb.grid.planning.cost`)."""
