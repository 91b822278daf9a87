"""A forest of Very Fast Decision Trees (Domingos & Hulten 2000) updated together in shared arrays.

The boosters of papers 000, 001 and 004 use N = 10..100 VFDTs as weak learners, each a single-label
learner over the k labels that returns its leaf's normalized class histogram as a distribution h in
Delta[k]. Every example touches every tree, so this module keeps all N trees in shared arrays and
routes, predicts and updates them together in compiled loops (:mod:`olb.weak.vfdt_core`): each example is
routed once per round, the statistics of all trees are updated in one call, and the due split attempts
are evaluated together. That is where olb's speed comes from (see ``docs/speed.md``).

The trees mirror the VFDT port the papers' authors used (``docs/authors_code.md``),
since the papers themselves only say "VFDT":

* information gain (bits) as split criterion; a candidate where fewer than two branches hold more than
  1% of the weight scores -inf;
* numeric attributes: per class a weighted Gaussian estimator with min and max; 10 equally spaced
  candidate thresholds strictly between the observed min and max; the weight of class c left of a
  threshold t is W_c Phi((t - mu_c) / sigma_c) (all of it right below the class's min, left above its max);
* Hoeffding bound eps = sqrt(R^2 ln(1/delta) / (2 n)) with R = log2(#classes seen, at least 2) and n the
  leaf's total weight; split when best - second best > eps or eps < tau;
* a class first seen at a node starts with ``pseudo_count`` (1.0) mass, and classes never seen at a leaf
  count 1.0 in its prediction (the smoothed histogram of the authors' port);
* split attempts when the leaf's weight grew by more than the grace period since the last attempt.

Per tree, the split confidence delta and tie threshold tau are drawn log-uniformly and the grace period
uniformly (real-valued) from the given ranges, and each tree sees a fixed random subset of
``num_covariates`` features (all features when there are no more than that).

Missing values (NaN) are skipped in the statistics and routed to the heavier child.
Nominal features are treated as numeric codes (``docs/data.md``).

Differences from the authors' port, all minor: the |Y| labels of one example are added to a tree
together before its split check (the port checks after each); a leaf whose candidates all score -inf
keeps trying instead of being deactivated; the stale-sigma quirk of the port's first threshold
(``docs/authors_code.md``) is not reproduced.

Examples
--------
>>> import numpy as np
>>> forest = VFDTForest(n_learners=3, n_features=4, n_labels=2, seed=0)
>>> x = np.array([0.1, 0.5, 0.2, 0.9])
>>> forest.predict_proba(x)  # empty trees predict uniformly
array([[0.5, 0.5],
       [0.5, 0.5],
       [0.5, 0.5]])
>>> forest.learn(x, np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]))
>>> forest.predict_proba(x).round(3)
array([[0.667, 0.333],
       [0.25 , 0.75 ],
       [0.5  , 0.5  ]])
"""

from __future__ import annotations

import numpy as np

from olb.kernels import KernelModule
from olb.weak.base import DELTA_RANGE, GRACE_RANGE, TAU_RANGE, WeakLearners, log_uniform
from olb.weak.vfdt_arrays import ForestArrays

vfdt_core = KernelModule("olb.weak.vfdt_core")

_N_THRESHOLDS = 10
_MIN_BRANCH_FRACTION = 0.01
_MIN_VARIANCE = 1e-12


class VFDTForest(WeakLearners):
    """N Hoeffding trees with random parameters, routed and updated together.

    Parameters
    ----------
    n_learners : number of trees N.
    n_features, n_labels : input dimension d and number of labels (classes) k.
    num_covariates : features per tree, drawn without replacement (all if d <= num_covariates).
    delta_range, tau_range : log-uniform ranges of the split confidence and the tie threshold.
    grace_range : uniform range of the grace period (in weight units).
    importance_scale_range : if given, every importance weight sent to tree i is multiplied by a constant
        drawn uniformly from this range (the authors' code: (3, 10) for papers 000/004, (5, 200) for 001;
        not in the papers).
    pseudo_count : initial mass of a class first seen at a node.
    seed : fixes every random draw.

    A leaf whose best merit is exactly tied across covariates splits on the lowest tied covariate index (numpy's
    ``argsort``, used before, orders ties by the CPU's SIMD extensions).
    """

    def __init__(
        self,
        n_learners: int,
        n_features: int,
        n_labels: int,
        num_covariates: int = 20,
        delta_range: tuple[float, float] = DELTA_RANGE,
        tau_range: tuple[float, float] = TAU_RANGE,
        grace_range: tuple[float, float] = GRACE_RANGE,
        importance_scale_range: tuple[float, float] | None = None,
        pseudo_count: float = 1.0,
        seed: int | np.random.Generator | None = None,
    ):
        rng = np.random.default_rng(seed)
        super().__init__(n_learners, n_features, n_labels)
        N = n_learners
        draws = np.array(
            [
                (log_uniform(rng, *delta_range), rng.uniform(*grace_range), log_uniform(rng, *tau_range))
                for _ in range(N)
            ]
        ).reshape(N, 3)
        self.delta, grace, tau = draws.T.copy()
        self.importance_scale = (
            rng.uniform(*importance_scale_range, size=N) if importance_scale_range is not None else None
        )
        if n_features <= num_covariates:
            covariates = np.tile(np.arange(n_features), (N, 1))
        else:
            covariates = np.stack([rng.choice(n_features, num_covariates, replace=False) for _ in range(N)])
        self._d = covariates.shape[1]
        self.arrays = self._new_storage(
            capacity=4 * N, covariates=covariates, grace=grace, tau=tau, pseudo_count=pseudo_count
        )
        self._round_leaves: tuple[np.ndarray, np.ndarray] | None = None  # (x, leaves) of the round's prediction
        for i in range(N):
            self.arrays.root[i] = self._new_leaf(np.zeros(n_labels), np.zeros(n_labels, bool), self._new_slot())

    # the trees' parameters, kept in the record the kernels take
    @property
    def covariates(self) -> np.ndarray:
        """The features each tree sees (N, d')."""
        return self.arrays.covariates

    @property
    def grace(self) -> np.ndarray:
        """Each tree's grace period."""
        return self.arrays.grace

    @property
    def tau(self) -> np.ndarray:
        """Each tree's tie threshold."""
        return self.arrays.tau

    @property
    def pseudo_count(self) -> float:
        return self.arrays.pseudo_count

    @staticmethod
    def planned_memory_mb(n_learners: int, n_covariates: int, n_labels: int, n_rows: int) -> float:
        """A rough peak (MB) of the forest's storage after ``n_rows`` training rows, for planning (the grid's
        memory request per cell). Per tree, L = 0.35 n^0.79 k^-0.31 leaves and R = 0.77 n^0.58 k^0.43 pool rows
        (least squares in log space on Ada.OLMR's forests after a training split: 100 trees of 20 covariates,
        the authors' weights, eight multi-label data sets; single data sets are up to 2.1x above the fit, so both
        are taken 1.25x); 2L nodes of 9k + 49 bytes and L slots of 4k bytes, held 2.5x while they grow by half
        by copying; and R pool rows of d' x 5 float64 (the reserved rest is never touched)."""
        n, k = max(n_rows, 1), n_labels
        leaves = 1.25 * 0.35 * n**0.79 * k**-0.31
        pool_rows = 1.25 * 0.77 * n**0.58 * k**0.43
        per_tree = 2.5 * leaves * (2 * (9 * k + 49) + 4 * k) + pool_rows * n_covariates * 5 * 8
        return n_learners * per_tree / 2**20

    # ------------------------------------------------------------------ storage
    # The forest's arrays are one record (``self.arrays``, olb.weak.vfdt_arrays.ForestArrays), which the kernels
    # take whole. Nodes (internal and leaves) live in small per-node arrays. Every leaf has a slot
    # (``slot[node]``): a splitting leaf hands its slot, cleared, to its left child, so there is one slot per leaf,
    # not per node. The Gaussian statistics are kept only for the labels a leaf has seen (a leaf sees a few of
    # the k labels): d' estimators per (slot, label) in a row of the pool (``pair_of[slot, label]``, -1: none), and
    # a split frees its leaf's rows for reuse. The pool is reserved once, as zeros, for every label of every tree
    # ``_POOL_LEAVES_PER_TREE`` times over: the operating system gives memory only to the rows in use.
    _NODE_ARRAYS = (
        "split_feature",
        "threshold",
        "left",
        "right",
        "nan_left",
        "slot",
        "class_mass",
        "seen",
        "weight_at_last_attempt",
    )
    _SLOT_ARRAYS = ("pair_of",)
    _POOL_ARRAYS = ("g_weight", "g_mean", "g_m2", "g_min", "g_max")
    _POOL_LEAVES_PER_TREE = 64
    _FILL = {"split_feature": -1, "slot": -1, "pair_of": -1}

    def _new_storage(
        self, capacity: int, covariates: np.ndarray, grace: np.ndarray, tau: np.ndarray, pseudo_count: float
    ) -> ForestArrays:
        """Empty storage for ``capacity`` nodes, with the trees' parameters and the settings (no node yet)."""
        k, d, N = self.n_labels, self._d, self.n_learners
        self.n_nodes = self.n_slots = 0
        rows = self._POOL_LEAVES_PER_TREE * N * k
        return ForestArrays(
            root=np.zeros(N, np.int64),
            covariates=covariates,
            grace=grace,
            ln_inv_delta=np.log(1.0 / self.delta),
            tau=tau,
            split_feature=np.full(capacity, -1, np.int64),
            threshold=np.zeros(capacity),
            left=np.zeros(capacity, np.int64),
            right=np.zeros(capacity, np.int64),
            nan_left=np.zeros(capacity, bool),
            slot=np.full(capacity, -1, np.int64),
            class_mass=np.zeros((capacity, k)),
            seen=np.zeros((capacity, k), bool),
            weight_at_last_attempt=np.zeros(capacity),
            pair_of=np.full((capacity, k), -1, np.int32),
            **{name: np.zeros((rows, d)) for name in self._POOL_ARRAYS},
            pairs=np.zeros(2, np.int64),
            free_pairs=np.zeros(rows, np.int64),
            fractions=np.arange(1, _N_THRESHOLDS + 1) / (_N_THRESHOLDS + 1),
            eps_factor=np.array([np.log2(c) ** 2 if c >= 2 else 0.0 for c in range(k + 1)]),
            **dict(zip(("plan_starts", "plan_lengths", "plan_ops"), pairwise_plan(k), strict=True)),
            pseudo_count=pseudo_count,
            min_variance=_MIN_VARIANCE,
            min_branch_fraction=_MIN_BRANCH_FRACTION,
        )

    def _reserve_pool(self, rows: int) -> None:
        """Room for ``rows`` more pool rows; beyond the reservation the pool doubles, copying only the rows in use
        (and the free list), so the untouched rest stays free of memory."""
        arrays = self.arrays
        used, n_free = int(arrays.pairs[0]), int(arrays.pairs[1])
        if used + rows <= len(arrays.g_weight):
            return
        new_size = max(2 * len(arrays.g_weight), used + rows)
        grown: dict[str, np.ndarray] = {}
        for name in self._POOL_ARRAYS:
            grown[name] = np.zeros((new_size, self._d))
            grown[name][:used] = getattr(arrays, name)[:used]
        grown["free_pairs"] = np.zeros(new_size, np.int64)
        grown["free_pairs"][:n_free] = arrays.free_pairs[:n_free]
        self.arrays = arrays._replace(**grown)  # type: ignore[arg-type]  # arrays only, no scalar field

    def _grow(self, names: tuple[str, ...]) -> None:
        grown: dict[str, np.ndarray] = {}
        for name in names:
            arr = getattr(self.arrays, name)
            extra = np.full((max(len(arr) // 2, 1),) + arr.shape[1:], self._FILL.get(name, 0), arr.dtype)
            grown[name] = np.concatenate([arr, extra])
        self.arrays = self.arrays._replace(**grown)  # type: ignore[arg-type]  # arrays only, no scalar field

    def _new_slot(self) -> int:
        if self.n_slots == len(self.arrays.pair_of):
            self._grow(self._SLOT_ARRAYS)
        self.n_slots += 1
        return self.n_slots - 1

    def _new_leaf(self, class_mass: np.ndarray, seen: np.ndarray, slot: int) -> int:
        if self.n_nodes == len(self.arrays.split_feature):
            self._grow(self._NODE_ARRAYS)
        node = self.n_nodes
        self.n_nodes += 1
        arrays = self.arrays
        arrays.slot[node] = slot
        arrays.class_mass[node] = class_mass
        arrays.seen[node] = seen
        arrays.weight_at_last_attempt[node] = class_mass.sum()
        return node

    # ------------------------------------------------------------------ routing and prediction
    def _masses(self, x: np.ndarray, normalize: bool) -> np.ndarray:
        """Every tree's leaf masses for ``x`` (:meth:`leaf_masses`, normalized: :meth:`predict_proba`); the leaves
        are routed once per round: ``learn`` reuses what the round's prediction routed for the same x (the trees
        do not change in between)."""
        cached = self._round_leaves
        if cached is not None and cached[0] is x:
            return vfdt_core.leaf_masses(self.arrays, cached[1], normalize)
        leaves, masses = vfdt_core.predict_row(self.arrays, x, normalize)
        self._round_leaves = (x, leaves)
        return masses

    def leaf_masses(self, x: np.ndarray) -> np.ndarray:
        """Unnormalized prediction masses (N, k) of every tree's leaf for ``x``: the class masses, with 1 for
        a class the leaf has not seen (the smoothed histogram)."""
        return self._masses(x, False)

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        return self._masses(x, True)

    # ------------------------------------------------------------------ learning
    def learn(self, x: np.ndarray, weights: np.ndarray) -> None:
        """Feed label l to tree i with importance weight ``weights[i, l]`` (0: not fed): the statistics and the
        split attempts they make due, in one compiled call (``vfdt_core.learn_row``)."""
        if self.importance_scale is not None:
            weights = weights * self.importance_scale[:, None]
        cached = self._round_leaves
        leaves = cached[1] if cached is not None and cached[0] is x else vfdt_core.route(self.arrays, x)
        self._round_leaves = None
        self.make_room()
        weights = np.ascontiguousarray(weights, dtype=float)
        self.n_nodes, self.n_slots = vfdt_core.learn_row(self.arrays, x, weights, leaves, self.n_nodes, self.n_slots)

    def make_room(self) -> None:
        """Room for one more update (``vfdt_core.has_room``): a pool row for every (tree, label), N splits."""
        N = self.n_learners
        self._reserve_pool(N * self.n_labels)
        while self.n_nodes + 2 * N > len(self.arrays.split_feature):
            self._grow(self._NODE_ARRAYS)
        while self.n_slots + N > len(self.arrays.pair_of):
            self._grow(self._SLOT_ARRAYS)

    def begin_pass(self) -> None:
        """Forget the leaves the round's prediction routed: a compiled pass changes the trees under them."""
        self._round_leaves = None

    def voting_pass(self, X: np.ndarray, Y: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A prequential pass of the trees each fed every row with weight 1 (``vfdt_core.voting_pass``): the
        predictions of the tree right most often so far (``correct``, updated) and which trees were right (rows x
        N). Compiled rows at a time, the arrays grown in between."""
        if self.importance_scale is not None:
            raise ValueError("VFDTForest.voting_pass feeds weight 1: the forest must have no importance scales")
        X = np.ascontiguousarray(X, dtype=float)
        Y = np.ascontiguousarray(Y, dtype=np.int64)
        predictions = np.empty(len(Y), np.int64)
        hits = np.empty((len(Y), self.n_learners), bool)
        self.begin_pass()
        row = 0
        while row < len(Y):
            self.make_room()
            row, self.n_nodes, self.n_slots = vfdt_core.voting_pass(
                self.arrays, X, Y, correct, predictions, hits, row, self.n_nodes, self.n_slots
            )
        return predictions, hits

    @property
    def n_leaves(self) -> int:
        return int((self.arrays.split_feature[: self.n_nodes] < 0).sum())


def pairwise_plan(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shape of numpy's pairwise sum over n values (``vfdt_sums.pairwise_sum``), for the compiled
    ``vfdt_core.planned_sum``: its blocks of at most 128 values (starts, lengths, left to right) and the order in
    which their sums are added, in postfix (``i >= 0``: push block i's sum; -1: replace the top two by their
    sum, left + right).

    >>> [part.tolist() for part in pairwise_plan(300)]
    [[0, 72, 144, 216], [72, 72, 72, 84], [0, 1, -1, 2, 3, -1, -1]]
    """
    starts: list[int] = []
    lengths: list[int] = []
    ops: list[int] = []

    def visit(start: int, size: int) -> None:
        if size <= 128:
            ops.append(len(starts))
            starts.append(start)
            lengths.append(size)
            return
        half = size // 2
        half -= half % 8
        visit(start, half)
        visit(start + half, size - half)
        ops.append(-1)

    visit(0, n)
    return np.array(starts, np.int64), np.array(lengths, np.int64), np.array(ops, np.int64)
