"""olb's tools around the library, for its operators and developers: the tracking server's set-up
(:mod:`~olb.ops.serve`), the generator of the docs' result tables (:mod:`~olb.ops.doc_tables`) and the grid's fault
injection (:mod:`~olb.ops.testing`). The library itself never imports this package."""
