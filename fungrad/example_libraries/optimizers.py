"""``jax.example_libraries.optimizers``: optimizers as triples of functions.

    opt_init, opt_update, get_params = optimizers.adam(step_size=1e-3)
    opt_state = opt_init(params)                     # params: any pytree
    opt_state = opt_update(i, grads, opt_state)      # step i (0, 1, ...)
    params = get_params(opt_state)

Each optimizer is written for one array (``init(x0) -> state``,
``update(i, g, state) -> state``, ``get_params(state) -> x``); the
``optimizer`` decorator lifts it to pytrees: the state of a pytree of
parameters is an ``OptimizerState`` (itself a pytree, so it passes through
``jit`` and ``lax.scan``) holding each leaf's state flattened.

``step_size`` is a number or a schedule ``i -> step size`` (``constant``,
``exponential_decay``, ``inverse_time_decay``, ``polynomial_decay``,
``piecewise_constant``).  The update rules are JAX's, written again here.
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable

import fungrad.numpy as jnp
from fungrad.tree_util import register_pytree_node, tree_flatten, tree_map, tree_unflatten

__all__ = ["OptimizerState", "Optimizer", "optimizer", "sgd", "momentum", "nesterov",
           "adagrad", "rmsprop", "rmsprop_momentum", "adam", "adamax", "sm3",
           "constant", "exponential_decay", "inverse_time_decay", "polynomial_decay",
           "piecewise_constant", "make_schedule", "l2_norm", "clip_grads", "JoinPoint",
           "unpack_optimizer_state", "pack_optimizer_state"]

# ----------------------------------------------------------------------------
# the pytree state and the decorator that lifts per-array optimizers
# ----------------------------------------------------------------------------

#: the state of a pytree of parameters: each leaf's state flattened, the
#: parameters' tree structure and each leaf state's tree structure
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Optimizer = namedtuple("Optimizer", ["init_fn", "update_fn", "params_fn"])

Schedule = Callable[[Any], Any]


def _flatten_states(states):
    """(tuple of each state's leaves, tuple of their tree structures): tuples,
    so that the structures, an OptimizerState's aux data, hash (jit keys)."""
    flat = [tree_flatten(s) for s in states]
    return tuple(leaves for leaves, _ in flat), tuple(tree for _, tree in flat)


def optimizer(opt_maker: Callable) -> Callable[..., Optimizer]:
    """Decorate a maker of a per-array ``(init, update, get_params)`` into one
    whose functions take and return pytrees (an ``OptimizerState``)."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree):
            x0_flat, tree = tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_states([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not "
                    f"match the parameter tree structure with which it was initialized: "
                    f"parameter tree {tree} and grad tree {grad_tree_def}.")
            states = map(tree_unflatten, subtrees, states_flat)
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
            new_flat, new_subtrees = _flatten_states(new_states)
            for before, after in zip(subtrees, new_subtrees):
                if before != after:
                    raise TypeError(
                        "optimizer update function produced an output structure that did "
                        f"not match its input structure: input {before} and output {after}.")
            return OptimizerState(new_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, tree, subtrees = opt_state
            states = map(tree_unflatten, subtrees, states_flat)
            return tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


# ----------------------------------------------------------------------------
# the optimizers (per array)
# ----------------------------------------------------------------------------

@optimizer
def sgd(step_size):
    """x <- x - step_size(i) g."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0,
            lambda i, g, x: x - step_size(i) * g,
            lambda x: x)


@optimizer
def momentum(step_size, mass: float):
    """v <- mass v + g;  x <- x - step_size(i) v."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def nesterov(step_size, mass: float):
    """v <- mass v + g;  x <- x - step_size(i) (mass v + g)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def adagrad(step_size, momentum: float = 0.9):
    """Adagrad (Duchi et al. 2011) with momentum on the scaled gradient:
    s <- s + g^2;  m <- (1 - momentum) g / sqrt(s) + momentum m;  x <- x - step m
    (1/sqrt(s) is 0 where s is 0)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv_sqrt = jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return init, update, lambda state: state[0]


@optimizer
def rmsprop(step_size, gamma: float = 0.9, eps: float = 1e-8):
    """a <- gamma a + (1 - gamma) g^2;  x <- x - step g / sqrt(a + eps)."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad
    return (lambda x0: (x0, jnp.zeros_like(x0)), update, lambda state: state[0])


@optimizer
def rmsprop_momentum(step_size, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9):
    """a <- gamma a + (1 - gamma) g^2;  m <- momentum m + step g / sqrt(a + eps);
    x <- x - m."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom
    return init, update, lambda state: state[0]


@optimizer
def adam(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """Adam (Kingma & Ba 2015): bias-corrected first and second moments,
    x <- x - step m_hat / (sqrt(v_hat) + eps)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat = m / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))
        v_hat = v / (1 - jnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v
    return init, update, lambda state: state[0]


@optimizer
def adamax(step_size, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """AdaMax (Kingma & Ba 2015, section 7): the infinity-norm variant of Adam,
    u <- max(b2 u, |g|);  x <- x - step / (1 - b1^(i+1)) m / (u + eps)."""
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - jnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u
    return init, update, lambda state: state[0]


def _other_axes(ndim: int, axis: int) -> tuple:
    return tuple(a for a in range(ndim) if a != axis)


class _StaticShape(tuple):
    """A parameter's shape kept in SM3's state as tree structure, not as
    leaves, so that the state passes through ``jit`` and ``scan`` (JAX keeps a
    plain tuple there, whose ints become tracers under ``jit``)."""


register_pytree_node(_StaticShape, lambda s: ((), tuple(s)), lambda aux, _: _StaticShape(aux))


@optimizer
def sm3(step_size, momentum: float = 0.9):
    """SM3 (Anil et al. 2019): one accumulator per axis instead of one per
    entry; each entry's accumulator is the minimum over its axes' accumulators
    plus g^2, and each axis keeps the maximum over the others."""
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = _StaticShape(jnp.shape(x0))
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(size, dtype=x0.dtype) for size in x0.shape]
        return x0, jnp.zeros_like(x0), vs, x_shape

    def update(i, g, state):
        x, m, vs, x_shape = state
        g = jnp.reshape(g, x.shape)
        vs = [jnp.expand_dims(v, _other_axes(x.ndim, axis)) for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
        inv_sqrt = jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0.0)
        m = (1.0 - momentum) * (g * inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        vs = [accum.max(_other_axes(x.ndim, axis)) for axis in range(x.ndim)]
        return x, m, vs, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        return jnp.reshape(x, tuple(x_shape))
    return init, update, get_params


# ----------------------------------------------------------------------------
# step-size schedules
# ----------------------------------------------------------------------------

def constant(step_size) -> Schedule:
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate) -> Schedule:
    """step_size * decay_rate ** (i / decay_steps)."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase: bool = False) -> Schedule:
    """step_size / (1 + decay_rate * i / decay_steps), the ratio floored if staircase."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power: float = 1.0) -> Schedule:
    """From step_size to final_step_size over decay_steps steps along
    (1 - i / decay_steps) ** power, then constant."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries, values) -> Schedule:
    """values[k] for steps i with k boundaries below i (len(values) =
    len(boundaries) + 1)."""
    boundaries, values = jnp.asarray(boundaries), jnp.asarray(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("piecewise_constant: boundaries length must be one shorter than "
                         f"values length, got {boundaries.shape[0]} and {values.shape[0]}")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(f"step_size must be a scalar or a schedule (a function of the step), "
                    f"got {type(scalar_or_schedule).__name__} of shape "
                    f"{jnp.shape(scalar_or_schedule)}")


# ----------------------------------------------------------------------------
# utilities
# ----------------------------------------------------------------------------

def l2_norm(tree):
    """The l2 norm of a pytree of arrays (all leaves as one vector)."""
    leaves, _ = tree_flatten(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """Rescale the gradients so that their l2 norm is at most max_norm."""
    norm = l2_norm(grad_tree)
    return tree_map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """Marks where a parameter leaf's optimizer state sits in the pytree that
    ``unpack_optimizer_state`` returns (so that pytree can be pickled)."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree

    def __eq__(self, other):
        return isinstance(other, JoinPoint) and self.subtree == other.subtree

    __hash__ = None


def unpack_optimizer_state(opt_state: OptimizerState):
    """The state as a pytree shaped like the parameters, each leaf a
    ``JoinPoint`` holding that parameter's state (for saving)."""
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = map(tree_unflatten, subtree_defs, states_flat)
    return tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree) -> OptimizerState:
    """The inverse of ``unpack_optimizer_state``."""
    sentinels, tree_def = tree_flatten(marked_pytree, is_leaf=lambda x: isinstance(x, JoinPoint))
    if not all(isinstance(s, JoinPoint) for s in sentinels):
        raise TypeError("pack_optimizer_state takes the pytree of JoinPoints that "
                        "unpack_optimizer_state returns")
    states_flat, subtree_defs = _flatten_states([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
