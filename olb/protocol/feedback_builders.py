"""The feedback a learner receives after it predicts, built by ``FEEDBACK[learner.feedback]`` from its prediction
and the true labels, with the learner's settings (``FEEDBACK_SETTINGS``) bound."""

from __future__ import annotations

import functools
from collections.abc import Callable

from olb.feedback import TopKFeedback

FEEDBACK: dict[str, Callable] = {
    "full": lambda prediction, y: y,
    "topk": TopKFeedback.from_prediction,  # (prediction, y, k): the top k of sigma(prediction), their relevance
}
# Learner attributes a feedback builder takes as keyword arguments (e.g. the learner's k for "topk").
FEEDBACK_SETTINGS: dict[str, tuple[str, ...]] = {"full": (), "topk": ("k",)}


def _feedback_builder(learner) -> Callable:
    """``(prediction, y) -> feedback`` for ``learner``, with its settings (``FEEDBACK_SETTINGS``) bound."""
    kind = learner.feedback
    if kind not in FEEDBACK:
        raise ValueError(
            f"learner {type(learner).__name__} asks for unknown feedback {kind!r}; allowed: {', '.join(FEEDBACK)}"
        )
    settings = {name: getattr(learner, name) for name in FEEDBACK_SETTINGS.get(kind, ())}
    return functools.partial(FEEDBACK[kind], **settings) if settings else FEEDBACK[kind]
