"""Optimizers as pure functions over pytrees, mirroring ``optax``.

A :class:`GradientTransformation` is a pair of pure functions::

    init   : params -> state
    update : (updates, state, params=None) -> (new_updates, new_state)

States are NamedTuples of arrays (pytrees), so a whole training step can be
passed through ``fungrad.jit``, ``fungrad.grad`` or ``fungrad.vmap``.  All
arithmetic uses ``fungrad.numpy``; nothing here is a new primitive.

Typical use::

    opt = optim.adam(1e-2)
    state = opt.init(params)
    grads = fungrad.grad(loss)(params)
    updates, state = opt.update(grads, state, params)
    params = optim.apply_updates(params, updates)

Formulas follow optax (``scale_by_adam``: bias-corrected moments, ``eps``
outside the square root; ``scale_by_rms``: ``eps`` inside it; ``adamw``:
weight decay added to the Adam direction before scaling by the learning
rate; schedules are evaluated at the step count *before* it is
incremented, so the first update uses ``schedule(0)``).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple, Union

import numpy as np

import fungrad.numpy as fnp
from fungrad import tree_util

__all__ = [
    "GradientTransformation", "EmptyState", "ScaleByScheduleState",
    "ScaleByAdamState", "ScaleByRmsState", "ScaleByRStdDevState", "TraceState",
    "identity", "scale", "scale_by_schedule", "scale_by_learning_rate",
    "scale_by_adam", "scale_by_rms", "scale_by_stddev", "trace",
    "add_decayed_weights", "clip_by_global_norm", "global_norm", "chain",
    "apply_updates", "sgd", "adam", "adamw", "rmsprop",
    "constant_schedule", "exponential_decay", "cosine_decay_schedule",
    "polynomial_schedule", "linear_schedule", "piecewise_constant_schedule",
    "join_schedules", "warmup_cosine_decay_schedule",
]

Schedule = Callable[[Any], Any]
ScalarOrSchedule = Union[float, Schedule]


class GradientTransformation(NamedTuple):
    """``init(params) -> state``; ``update(updates, state, params=None) ->
    (new_updates, new_state)``."""
    init: Callable
    update: Callable


class EmptyState(NamedTuple):
    """State of a stateless transformation."""


class ScaleByScheduleState(NamedTuple):
    count: Any          # int32 scalar: number of updates applied so far


class ScaleByAdamState(NamedTuple):
    count: Any          # int32 scalar
    mu: Any             # first moment, same pytree as params
    nu: Any             # second moment, same pytree as params


class ScaleByRmsState(NamedTuple):
    nu: Any


class ScaleByRStdDevState(NamedTuple):
    mu: Any
    nu: Any


class TraceState(NamedTuple):
    trace: Any


# ---------------------------------------------------------------------------
# Pytree checking: clear errors instead of silent broadcasting
# ---------------------------------------------------------------------------

class _TreeMismatchError(ValueError):
    """Raised when two pytrees an optimizer combines do not line up."""


_NO_PARAMS = ("needs `params`: call `update(updates, state, params)` with the "
              "current parameters")


def _leaf_shape(x):
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else np.shape(x)


def _path_strings(tree) -> list[str]:
    pairs, _ = tree_util.tree_flatten_with_path(tree)
    return [tree_util.keystr(path) or "<root>" for path, _ in pairs]


def _structure_message(where, name_a, tree_a, name_b, tree_b) -> str:
    paths_a, paths_b = _path_strings(tree_a), _path_strings(tree_b)
    only_a = [p for p in paths_a if p not in set(paths_b)]
    only_b = [p for p in paths_b if p not in set(paths_a)]
    lines = [f"{where}: `{name_a}` and `{name_b}` have different pytree structures."]
    if only_a:
        lines.append(f"  leaf paths only in `{name_a}`: {', '.join(only_a)}")
    if only_b:
        lines.append(f"  leaf paths only in `{name_b}`: {', '.join(only_b)}")
    lines.append(f"  `{name_a}` structure: {tree_util.tree_structure(tree_a)!r}")
    lines.append(f"  `{name_b}` structure: {tree_util.tree_structure(tree_b)!r}")
    lines.append("  Fix: pass gradients with the structure of the params the "
                 "optimizer state was initialised with (`opt.init(params)`).")
    return "\n".join(lines)


def _check_trees(where: str, *named_trees) -> None:
    """Raise if the ``(name, tree)`` pairs differ in structure or leaf shapes.
    Fast path: flatten and compare treedefs; paths are only computed to
    explain a mismatch."""
    (name0, tree0), *others = named_trees
    leaves0, def0 = tree_util.tree_flatten(tree0)
    for name, tree in others:
        leaves, treedef = tree_util.tree_flatten(tree)
        if treedef != def0:
            raise _TreeMismatchError(_structure_message(where, name0, tree0, name, tree))
        for i, (a, b) in enumerate(zip(leaves0, leaves)):
            if _leaf_shape(a) != _leaf_shape(b):
                path = _path_strings(tree0)[i]
                raise _TreeMismatchError(
                    f"{where}: leaf at path {path} has shape {_leaf_shape(a)} in "
                    f"`{name0}` but {_leaf_shape(b)} in `{name}`. Fix: the "
                    "updates must have the shapes of the params.")


def _map(where: str, f: Callable, *named_trees):
    """``tree_map(f, *trees)`` after checking that the trees line up."""
    _check_trees(where, *named_trees)
    return tree_util.tree_map(f, *(tree for _, tree in named_trees))


def _named(name: str, transform: GradientTransformation) -> GradientTransformation:
    """Prefix pytree-mismatch errors raised inside ``transform.update`` with
    the public optimizer's name (``adam`` is a chain of building blocks)."""
    def update(updates, state, params=None):
        try:
            return transform.update(updates, state, params)
        except _TreeMismatchError as err:
            raise _TreeMismatchError(f"optim.{name}: {err}") from None
    return GradientTransformation(transform.init, update)


def _int_count():
    return fnp.zeros([], fnp.int32)


def _zeros_like_tree(params):
    return tree_util.tree_map(fnp.zeros_like, params)


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------

def identity() -> GradientTransformation:
    """Leaves updates unchanged."""
    return GradientTransformation(lambda params: EmptyState(),
                                  lambda updates, state, params=None: (updates, state))


def scale(step_size) -> GradientTransformation:
    """Multiply updates by a fixed ``step_size``."""
    def update(updates, state, params=None):
        return tree_util.tree_map(lambda g: step_size * g, updates), state
    return GradientTransformation(lambda params: EmptyState(), update)


def scale_by_schedule(step_size_fn: Schedule) -> GradientTransformation:
    """Multiply updates by ``step_size_fn(count)``; count starts at 0."""
    if not callable(step_size_fn):
        raise TypeError(f"scale_by_schedule: step_size_fn must be callable "
                        f"(step -> value), got {type(step_size_fn).__name__}")

    def init(params):
        return ScaleByScheduleState(count=_int_count())

    def update(updates, state, params=None):
        step_size = step_size_fn(state.count)
        # Keep the dtype of each update (a float64 schedule must not upcast
        # float32 parameters).
        new = tree_util.tree_map(
            lambda g: fnp.astype(fnp.asarray(step_size), fnp.result_type(g)) * g, updates)
        return new, ScaleByScheduleState(count=state.count + 1)
    return GradientTransformation(init, update)


def scale_by_learning_rate(learning_rate: ScalarOrSchedule, *, flip_sign=True):
    """``scale(-lr)`` for a number, ``scale_by_schedule(-lr(step))`` for a
    schedule (descent direction when ``flip_sign``)."""
    sign = -1 if flip_sign else 1
    if callable(learning_rate):
        return scale_by_schedule(lambda count: sign * learning_rate(count))
    is_scalar = np.isscalar(learning_rate) or np.ndim(learning_rate) == 0
    if isinstance(learning_rate, (bool, str)) or not is_scalar:
        raise TypeError("learning_rate must be a number or a schedule (a callable "
                        f"step -> value), got {learning_rate!r}")
    return scale(sign * learning_rate)


def _bias_corrected(moment, decay, count):
    """``moment / (1 - decay**count)`` in the moment's dtype."""
    correction = 1 - decay ** count
    return tree_util.tree_map(
        lambda m: m / fnp.astype(correction, fnp.result_type(m)), moment)


def scale_by_adam(b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0) -> GradientTransformation:
    """Adam direction: ``m̂ / (sqrt(v̂ + eps_root) + eps)`` with
    ``m = b1 m + (1-b1) g``, ``v = b2 v + (1-b2) g²`` and bias correction
    by ``1 - b^t`` where ``t`` counts this update (starts at 1)."""
    _check_decay("scale_by_adam", b1=b1, b2=b2)

    def init(params):
        return ScaleByAdamState(_int_count(), _zeros_like_tree(params), _zeros_like_tree(params))

    def update(updates, state, params=None):
        where = "scale_by_adam"
        mu = _map(where, lambda g, m: b1 * m + (1 - b1) * g,
                  ("updates", updates), ("state.mu", state.mu))
        nu = _map(where, lambda g, v: b2 * v + (1 - b2) * g * g,
                  ("updates", updates), ("state.nu", state.nu))
        count = state.count + 1
        mu_hat, nu_hat = _bias_corrected(mu, b1, count), _bias_corrected(nu, b2, count)
        new = tree_util.tree_map(lambda m, v: m / (fnp.sqrt(v + eps_root) + eps),
                                 mu_hat, nu_hat)
        return new, ScaleByAdamState(count, mu, nu)
    return GradientTransformation(init, update)


def scale_by_rms(decay=0.9, eps=1e-8, initial_scale=0.0) -> GradientTransformation:
    """RMSprop direction ``g / sqrt(v + eps)``, ``v = decay v + (1-decay) g²``
    (no bias correction; ``eps`` inside the root, as optax)."""
    _check_decay("scale_by_rms", decay=decay)

    def init(params):
        return ScaleByRmsState(tree_util.tree_map(
            lambda p: fnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        nu = _map("scale_by_rms", lambda g, v: decay * v + (1 - decay) * g * g,
                  ("updates", updates), ("state.nu", state.nu))
        new = tree_util.tree_map(lambda g, v: g / fnp.sqrt(v + eps), updates, nu)
        return new, ScaleByRmsState(nu)
    return GradientTransformation(init, update)


def scale_by_stddev(decay=0.9, eps=1e-8, initial_scale=0.0) -> GradientTransformation:
    """Centered RMSprop direction ``g / sqrt(v - m² + eps)``."""
    _check_decay("scale_by_stddev", decay=decay)

    def init(params):
        return ScaleByRStdDevState(
            _zeros_like_tree(params),
            tree_util.tree_map(lambda p: fnp.full_like(p, initial_scale), params))

    def update(updates, state, params=None):
        where = "scale_by_stddev"
        mu = _map(where, lambda g, m: decay * m + (1 - decay) * g,
                  ("updates", updates), ("state.mu", state.mu))
        nu = _map(where, lambda g, v: decay * v + (1 - decay) * g * g,
                  ("updates", updates), ("state.nu", state.nu))
        new = tree_util.tree_map(lambda g, m, v: g / fnp.sqrt(v - m * m + eps),
                                 updates, mu, nu)
        return new, ScaleByRStdDevState(mu, nu)
    return GradientTransformation(init, update)


def trace(decay: float, nesterov: bool = False) -> GradientTransformation:
    """Momentum: ``t = g + decay t``; the update is ``t`` (or ``g + decay t``
    with ``nesterov``)."""
    def init(params):
        return TraceState(_zeros_like_tree(params))

    def update(updates, state, params=None):
        new_trace = _map("trace", lambda g, t: g + decay * t,
                         ("updates", updates), ("state.trace", state.trace))
        if nesterov:
            new = tree_util.tree_map(lambda g, t: g + decay * t, updates, new_trace)
        else:
            new = new_trace
        return new, TraceState(new_trace)
    return GradientTransformation(init, update)


def add_decayed_weights(weight_decay=0.0) -> GradientTransformation:
    """``updates + weight_decay * params`` (decoupled weight decay when
    placed before the learning-rate scaling, as in ``adamw``)."""
    def update(updates, state, params=None):
        if params is None:
            raise ValueError(f"add_decayed_weights {_NO_PARAMS}")
        new = _map("add_decayed_weights", lambda g, p: g + weight_decay * p,
                   ("updates", updates), ("params", params))
        return new, state
    return GradientTransformation(lambda params: EmptyState(), update)


def global_norm(tree):
    """``sqrt(sum of squares of every leaf)``."""
    leaves = tree_util.tree_leaves(tree)
    if not leaves:
        return fnp.asarray(0.0)
    return fnp.sqrt(sum(fnp.sum(fnp.square(x)) for x in leaves))


def clip_by_global_norm(max_norm) -> GradientTransformation:
    """Scale all updates by ``max_norm / global_norm`` when the global norm
    exceeds ``max_norm``; leave them unchanged otherwise."""
    if not max_norm > 0:
        raise ValueError(f"clip_by_global_norm: max_norm must be positive, got {max_norm}")

    def update(updates, state, params=None):
        norm = global_norm(updates)
        # max_norm / max(norm, max_norm) is exactly 1 below the threshold and
        # never divides by zero (a zero gradient stays zero, without NaNs).
        factor = max_norm / fnp.maximum(norm, max_norm)
        new = tree_util.tree_map(
            lambda g: g * fnp.astype(factor, fnp.result_type(g)), updates)
        return new, state
    return GradientTransformation(lambda params: EmptyState(), update)


def chain(*transforms: GradientTransformation) -> GradientTransformation:
    """Apply ``transforms`` in order; the state is the tuple of their states."""
    for i, t in enumerate(transforms):
        if not isinstance(t, GradientTransformation):
            raise TypeError(f"chain: argument {i} is a {type(t).__name__}, expected a "
                            "GradientTransformation (e.g. optim.scale(0.1))")

    def init(params):
        return tuple(t.init(params) for t in transforms)

    def update(updates, state, params=None):
        if not isinstance(state, tuple) or len(state) != len(transforms):
            raise _TreeMismatchError(
                f"chain: expected a state tuple of {len(transforms)} entries (one per "
                f"transformation) but got {type(state).__name__}"
                f"{'' if not isinstance(state, tuple) else f' of length {len(state)}'}. "
                "Fix: pass the state returned by this chain's init/update.")
        new_states = []
        for t, s in zip(transforms, state):
            updates, s = t.update(updates, s, params)
            new_states.append(s)
        return updates, tuple(new_states)
    return GradientTransformation(init, update)


def apply_updates(params, updates):
    """``params + updates`` leafwise, keeping each parameter's dtype."""
    return _map("optim.apply_updates",
                lambda p, u: fnp.astype(p + u, fnp.result_type(p)),
                ("params", params), ("updates", updates))


def _check_decay(where, **decays):
    for name, value in decays.items():
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{where}: {name} must be in [0, 1], got {value}")


# ---------------------------------------------------------------------------
# Optimizers
# ---------------------------------------------------------------------------

def sgd(learning_rate: ScalarOrSchedule, momentum=None, nesterov=False):
    """Stochastic gradient descent, optionally with (Nesterov) momentum:
    ``t = g + momentum t``, update ``-lr t``."""
    momentum_tx = trace(momentum, nesterov) if momentum is not None else identity()
    return _named("sgd", chain(momentum_tx, scale_by_learning_rate(learning_rate)))


def adam(learning_rate: ScalarOrSchedule, b1=0.9, b2=0.999, eps=1e-8, eps_root=0.0):
    """Adam (Kingma & Ba): ``-lr · m̂ / (sqrt(v̂ + eps_root) + eps)``."""
    return _named("adam", chain(scale_by_adam(b1, b2, eps, eps_root),
                                scale_by_learning_rate(learning_rate)))


def adamw(learning_rate: ScalarOrSchedule, b1=0.9, b2=0.999, eps=1e-8,
          eps_root=0.0, weight_decay=1e-4):
    """AdamW (Loshchilov & Hutter): ``-lr · (adam_direction + wd · params)``;
    the decay is decoupled from the moments and scaled by the learning rate."""
    return _named("adamw", chain(scale_by_adam(b1, b2, eps, eps_root),
                                 add_decayed_weights(weight_decay),
                                 scale_by_learning_rate(learning_rate)))


def rmsprop(learning_rate: ScalarOrSchedule, decay=0.9, eps=1e-8, initial_scale=0.0,
            centered=False, momentum=None, nesterov=False):
    """RMSprop; the momentum trace acts on the learning-rate-scaled step, as
    in optax."""
    direction = (scale_by_stddev if centered else scale_by_rms)(decay, eps, initial_scale)
    momentum_tx = trace(momentum, nesterov) if momentum is not None else identity()
    return _named("rmsprop", chain(direction, scale_by_learning_rate(learning_rate),
                                   momentum_tx))


# ---------------------------------------------------------------------------
# Schedules: step -> value, built from fungrad.numpy so they trace under jit
# ---------------------------------------------------------------------------

def _require_positive(where, name, value):
    if not value > 0:
        raise ValueError(f"{where}: {name} must be positive, got {value}")


def constant_schedule(value) -> Schedule:
    """Always ``value``."""
    return lambda count: value


def exponential_decay(init_value, transition_steps, decay_rate, transition_begin=0,
                      staircase=False, end_value=None) -> Schedule:
    """``init · decay_rate ** ((count - begin) / transition_steps)`` after
    ``transition_begin`` (exponent floored when ``staircase``), optionally
    bounded by ``end_value``."""
    _require_positive("exponential_decay", "transition_steps", transition_steps)
    if decay_rate == 0:
        raise ValueError("exponential_decay: decay_rate must be nonzero")
    if transition_begin < 0:
        raise ValueError(f"exponential_decay: transition_begin must be >= 0, "
                         f"got {transition_begin}")

    def schedule(count):
        steps = count - transition_begin
        exponent = steps / transition_steps
        if staircase:
            exponent = fnp.floor(exponent)
        value = fnp.where(steps <= 0, init_value, init_value * fnp.power(decay_rate, exponent))
        if end_value is not None:
            bound = fnp.maximum if decay_rate < 1 else fnp.minimum
            value = bound(value, end_value)
        return value
    return schedule


def cosine_decay_schedule(init_value, decay_steps, alpha=0.0, exponent=1.0) -> Schedule:
    """``init · ((1-alpha) · (½(1 + cos(π t/T)))**exponent + alpha)`` with
    ``t = min(count, T)``."""
    _require_positive("cosine_decay_schedule", "decay_steps", decay_steps)

    def schedule(count):
        t = fnp.minimum(count, decay_steps)
        cosine = 0.5 * (1 + fnp.cos(np.pi * t / decay_steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)
    return schedule


def polynomial_schedule(init_value, end_value, power, transition_steps,
                        transition_begin=0) -> Schedule:
    """``(init - end) · (1 - t/T)**power + end`` with ``t`` clipped to [0, T]
    and counted from ``transition_begin``."""
    _require_positive("polynomial_schedule", "transition_steps", transition_steps)

    def schedule(count):
        t = fnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - t / transition_steps
        return (init_value - end_value) * frac ** power + end_value
    return schedule


def linear_schedule(init_value, end_value, transition_steps, transition_begin=0):
    """Linear interpolation from ``init_value`` to ``end_value``."""
    return polynomial_schedule(init_value, end_value, 1, transition_steps, transition_begin)


def piecewise_constant_schedule(init_value, boundaries_and_scales=None) -> Schedule:
    """``init_value`` times every ``scale`` whose boundary ``b`` has been
    reached (``count >= b``, as optax computes it)."""
    items = sorted((boundaries_and_scales or {}).items())
    if any(s < 0 for _, s in items):
        raise ValueError("piecewise_constant_schedule: scales must be non-negative, "
                         f"got {dict(items)}")

    def schedule(count):
        value = init_value
        for boundary, factor in items:
            value = fnp.where(count < boundary, value, value * factor)
        return value
    return schedule


def join_schedules(schedules, boundaries) -> Schedule:
    """Run ``schedules[i+1]`` from ``boundaries[i]`` on, with its step
    counted from that boundary."""
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"join_schedules: need one more schedule than boundaries, got "
                         f"{len(schedules)} schedules and {len(boundaries)} boundaries")

    def schedule(count):
        value = schedules[0](count)
        for boundary, later in zip(boundaries, schedules[1:]):
            value = fnp.where(count < boundary, value, later(count - boundary))
        return value
    return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps, decay_steps,
                                 end_value=0.0, exponent=1.0) -> Schedule:
    """Linear warmup to ``peak_value`` over ``warmup_steps``, then cosine
    decay to ``end_value`` at ``decay_steps`` (total, warmup included)."""
    if not decay_steps > warmup_steps:
        raise ValueError("warmup_cosine_decay_schedule: decay_steps (the total length, "
                         f"warmup included) must exceed warmup_steps, got decay_steps="
                         f"{decay_steps}, warmup_steps={warmup_steps}")
    alpha = 0.0 if peak_value == 0 else end_value / peak_value
    warmup = (linear_schedule(init_value, peak_value, warmup_steps) if warmup_steps > 0
              else constant_schedule(peak_value))
    return join_schedules(
        [warmup, cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
        [warmup_steps])
