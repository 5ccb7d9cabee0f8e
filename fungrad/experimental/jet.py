"""``jet``: Taylor-mode propagation of a truncated power series through a
function (``jax.experimental.jet.jet``).

    primal_out, series_out = jet(f, (x0,), ((x1, x2, x3),))

The input path is ``x(t) = x0 + x1 t + x2 t²/2! + x3 t³/3!``: the series
terms are derivatives of the path at ``t = 0`` (JAX's convention), and so are
the results: ``series_out[k-1]`` is the k-th derivative of ``f(x(t))`` at 0.
``jet(f, (x,), ((v, 0, 0),))`` gives the first three directional derivatives
of ``f`` along ``v`` in one pass.

How: a trace (``JetTrace``) carries each value with its normalised Taylor
coefficients ``c_k = x_k / k!`` (``None`` for a constant), and each primitive
maps input coefficients to output coefficients:

* structurally linear primitives (add, reshape, slicing, gathers, ...) apply
  themselves to each coefficient;
* products (``mul``, ``dot_general``, ``conv_general_dilated``) are Cauchy
  products, ``(a·b)_k = Σ_j a_j·b_{k-j}``; ``div`` its inverse recurrence;
* ``exp``, ``log``, ``sin``/``cos``, ``tanh``, ``logistic`` and ``sqrt`` use the
  recurrences of the ODEs they satisfy (``y' = y x'`` for exp, ...), O(K²);
* every other primitive (control flow, linear algebra, special functions,
  custom rules, ...) by its own JVP rule: the coefficients of
  ``prim(x(t))`` are its derivatives in ``t``, taken by nested ``jvp`` along
  the polynomial path (exact; cost grows as 2^K, fine for the few terms jet
  is used with).

Rules run on the parent trace, so ``jet`` composes with ``jit``, ``vmap`` and
``grad``.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from fungrad._dtype_classes import is_inexact
from fungrad import core, lax
from fungrad.core import Tracer, get_aval, new_trace_context
from fungrad.interpreters import ad
from fungrad.tree_util import tree_flatten, tree_unflatten

__all__ = ["jet"]


class JetTracer(Tracer):
    __slots__ = ("primal", "coefs")

    def __init__(self, trace, primal, coefs):
        self._trace = trace
        self.primal = primal
        self.coefs = coefs           # K normalised coefficients, or None (a constant)

    @property
    def aval(self):
        return get_aval(self.primal)

    def _concrete_value(self):
        p = self.primal
        return p._concrete_value() if isinstance(p, Tracer) else np.asarray(p)


class JetTrace(core.Trace):
    """Pairs every value with its Taylor coefficients; rules run on the parent."""
    __slots__ = ("order",)
    kind = "jet"

    def __init__(self, parent, order: int):
        super().__init__(parent)
        self.order = order

    def lift(self, x):
        if isinstance(x, JetTracer) and x._trace is self:
            return x.primal, x.coefs
        if isinstance(x, Tracer):
            self.check_foreign(x)
        return x, None

    def process_primitive(self, prim, args, params):
        primals, coefs = zip(*(self.lift(a) for a in args)) if args else ((), ())
        if all(c is None for c in coefs):
            return core.bind_on(self.parent, prim, list(primals), params)
        rule = _RULES.get(prim.name, _by_nested_jvp)
        with core.set_current_trace(self.parent):
            out, out_coefs = rule(prim, list(primals), list(coefs), self.order, params)
        if prim.multiple_results:
            return [self.pure(o, c) for o, c in zip(out, out_coefs)]
        return self.pure(out, out_coefs)

    def pure(self, primal, coefs):
        return primal if coefs is None else JetTracer(self, primal, coefs)


# ----------------------------------------------------------------------------
# Rules: rule(prim, primals, coefs, K, params) -> (out, out_coefs)
# ----------------------------------------------------------------------------

def _inexact(x) -> bool:
    return is_inexact(get_aval(x).dtype)


def _term(x, cs, k):
    """Coefficient ``k`` of an input (0 is the primal); zeros for a constant."""
    if k == 0:
        return x
    return cs[k - 1] if cs is not None else lax.zeros_like_array(x)


def _linear(prim, primals, coefs, K, params):
    """A linear primitive maps each coefficient alone; integer and boolean
    operands (indices, predicates) are the primal's at every order."""
    out = prim.bind(*primals, **params)

    def coefficient(k):
        args = [_term(x, cs, k) if _inexact(x) else x for x, cs in zip(primals, coefs)]
        return prim.bind(*args, **params)
    return out, [coefficient(k) for k in range(1, K + 1)]


def _bilinear(prim, primals, coefs, K, params):
    """``(a·b)_k = Σ_j a_j·b_{k-j}`` (the Cauchy product)."""
    (a, b), (ca, cb) = primals, coefs
    out = prim.bind(a, b, **params)
    terms = []
    for k in range(1, K + 1):
        pairs = [(j, k - j) for j in range(k + 1)
                 if (j == 0 or ca is not None) and (k - j == 0 or cb is not None)]
        parts = [prim.bind(_term(a, ca, i), _term(b, cb, j), **params) for i, j in pairs]
        terms.append(_sum(parts))
    return out, terms


def _sum(parts):
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _div(prim, primals, coefs, K, params):
    """q = a/b: ``q_k = (a_k - Σ_{j≥1} b_j q_{k-j}) / b_0``."""
    (a, b), (ca, cb) = primals, coefs
    q = [a / b]
    for k in range(1, K + 1):
        num = _term(a, ca, k)
        if cb is not None:
            num = num - _sum([cb[j - 1] * q[k - j] for j in range(1, k + 1)])
        q.append(num / b)
    return q[0], q[1:]


def _ode_rule(first, rate):
    """A unary function y = f(x) with ``y' = rate(y) x'``: normalised
    coefficients ``k y_k = Σ_{j=1..k} j x_j r_{k-j}``, where ``r`` is the
    series of ``rate(y)`` (built from y's coefficients as they appear)."""
    def rule(prim, primals, coefs, K, params):
        (x,), (cx,) = primals, coefs
        y = [first(x)]
        r = []
        for k in range(1, K + 1):
            r.append(rate(y, len(r)))
            y.append(_sum([cx[j - 1] * r[k - j] * (j / k) for j in range(1, k + 1)]))
        return y[0], y[1:]
    return rule


def _cauchy(a, b, m):
    """Coefficient m of the product of two series given as lists."""
    return _sum([a[j] * b[m - j] for j in range(m + 1)])


_exp = _ode_rule(lax.exp, lambda y, m: y[m])
_tanh = _ode_rule(lax.tanh, lambda y, m: (1.0 if m == 0 else 0.0) - _cauchy(y, y, m))
_logistic = _ode_rule(lax.logistic, lambda y, m: y[m] - _cauchy(y, y, m))


def _log(prim, primals, coefs, K, params):
    """y = log x: ``k x_0 y_k = k x_k - Σ_{j=1..k-1} j y_j x_{k-j}``."""
    (x,), (cx,) = primals, coefs
    xs, y = [x] + list(cx), [lax.log(x)]
    for k in range(1, K + 1):
        acc = xs[k] * k
        if k > 1:
            acc = acc - _sum([y[j] * xs[k - j] * j for j in range(1, k)])
        y.append(acc / (x * k))
    return y[0], y[1:]


def _sqrt(prim, primals, coefs, K, params):
    """y² = x: ``2 y_0 y_k = x_k - Σ_{j=1..k-1} y_j y_{k-j}``."""
    (x,), (cx,) = primals, coefs
    y = [lax.sqrt(x)]
    for k in range(1, K + 1):
        acc = cx[k - 1]
        if k > 1:
            acc = acc - _sum([y[j] * y[k - j] for j in range(1, k)])
        y.append(acc / (2 * y[0]))
    return y[0], y[1:]


def _sin_cos(which):
    """sin and cos together: ``s' = c x'``, ``c' = -s x'``."""
    def rule(prim, primals, coefs, K, params):
        (x,), (cx,) = primals, coefs
        s, c = [lax.sin(x)], [lax.cos(x)]
        for k in range(1, K + 1):
            s.append(_sum([cx[j - 1] * c[k - j] * (j / k) for j in range(1, k + 1)]))
            c.append(-_sum([cx[j - 1] * s[k - j] * (j / k) for j in range(1, k + 1)]))
        out = s if which == "sin" else c
        return out[0], out[1:]
    return rule


def _by_nested_jvp(prim, primals, coefs, K, params):
    """Any primitive, by its JVP rule: ``out_k = (1/k!) dᵏ/dtᵏ prim(x(t))`` at
    t = 0, along the polynomial path ``x(t) = Σ_k c_k tᵏ``."""
    t_dtype = np.result_type(*[np.real(np.zeros((), get_aval(x).dtype)).dtype
                               for x, cs in zip(primals, coefs) if cs is not None])

    def along_path(t):
        args = [x if cs is None else x + _sum([c * t ** k for k, c in enumerate(cs, 1)])
                for x, cs in zip(primals, coefs)]
        out = prim.bind(*args, **params)
        return list(out) if prim.multiple_results else [out]

    def derivative(fn, order):
        if order == 0:
            return fn
        inner = derivative(fn, order - 1)
        return lambda t: _jvp_outputs(inner, t)
    t0 = np.zeros((), t_dtype)
    outs = along_path(t0)
    inexact = [_inexact(o) for o in outs]
    if not any(inexact):         # comparisons, indices: nothing to expand
        series = []
    else:
        series = [[d / math.factorial(k) if keep else None
                   for d, keep in zip(derivative(along_path, k)(t0), inexact)]
                  for k in range(1, K + 1)]
    out_coefs = [[s[i] for s in series] if keep else None for i, keep in enumerate(inexact)]
    if prim.multiple_results:
        return outs, out_coefs
    return outs[0], out_coefs[0]


def _jvp_outputs(fn, t):
    outs, tangents = ad.jvp_flat(fn, [t], [np.ones((), np.result_type(t))])
    return [ad.instantiate_zeros(tg) for tg in tangents]


_LINEAR = ("add", "sub", "neg", "reduce_sum", "broadcast_in_dim", "concatenate",
           "convert_element_type", "cumsum", "dynamic_slice", "dynamic_update_slice", "gather",
           "pad", "real", "imag", "conj", "complex", "reshape", "rev", "select_n", "slice",
           "squeeze", "transpose", "fft", "reduce_window_sum", "take_along_axis")

_RULES = {name: _linear for name in _LINEAR}
_RULES.update({"mul": _bilinear, "dot_general": _bilinear, "conv_general_dilated": _bilinear,
               "div": _div, "exp": _exp, "log": _log, "tanh": _tanh, "logistic": _logistic,
               "sqrt": _sqrt, "sin": _sin_cos("sin"), "cos": _sin_cos("cos")})


# ----------------------------------------------------------------------------
# The transformation
# ----------------------------------------------------------------------------

def jet(fun: Callable, primals, series):
    """``(primals_out, series_out)``: ``fun`` applied to the primals, and the
    derivatives of ``fun(x(t))`` at ``t = 0`` of orders 1..K, where the inputs'
    path ``x(t)`` has derivatives ``series`` (one list of K terms per primal,
    each shaped like it; JAX's ``jax.experimental.jet.jet``)."""
    if not callable(fun):
        raise TypeError(f"jet: fun must be callable, got {type(fun).__name__}")
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise TypeError("jet: primals and series must be tuples (one entry per argument), "
                        f"got {type(primals).__name__} and {type(series).__name__}")
    if len(primals) != len(series):
        raise ValueError(f"jet: {len(primals)} primals but {len(series)} series; give one "
                         "list of terms per primal")
    p_leaves, in_tree = tree_flatten(tuple(primals))
    K, s_leaves = _series_leaves(primals, series)
    trace = JetTrace(core.current_trace(), K)
    with new_trace_context(trace):
        ins = [JetTracer(trace, p, [s * (1.0 / math.factorial(k)) for k, s in enumerate(ss, 1)])
               for p, ss in zip(p_leaves, s_leaves)]
        out = fun(*tree_unflatten(in_tree, ins))
        out_leaves, out_tree = tree_flatten(out)
        lifted = [trace.lift(o) for o in out_leaves]
    prim_out = [p for p, _ in lifted]
    series_out = [[lax.zeros_like_array(p)] * K if cs is None else
                  [c * math.factorial(k) for k, c in enumerate(cs, 1)] for p, cs in lifted]
    return tree_unflatten(out_tree, prim_out), tree_unflatten(out_tree, series_out)


def _series_leaves(primals, series):
    """``(K, per primal leaf: its K terms)``, checking structures and shapes."""
    per_leaf, orders = [], set()
    for i, (p, terms) in enumerate(zip(primals, series)):
        if not isinstance(terms, (tuple, list)):
            raise TypeError(f"jet: series[{i}] must be a list of terms (derivatives of the "
                            f"input path), got {type(terms).__name__}")
        orders.add(len(terms))
        leaves, tree = tree_flatten(p)
        by_term = []
        for k, term in enumerate(terms, 1):
            t_leaves, t_tree = tree_flatten(term)
            if t_tree != tree:
                raise ValueError(f"jet: series[{i}][{k - 1}] has structure {t_tree}; its "
                                 f"primal has {tree}")
            for x, t in zip(leaves, t_leaves):
                if tuple(np.shape(t)) != tuple(np.shape(x)):
                    raise ValueError(f"jet: series[{i}][{k - 1}] has shape {np.shape(t)} "
                                     f"but its primal has shape {np.shape(x)}; every term "
                                     "is shaped like its primal")
            by_term.append(t_leaves)
        per_leaf += [list(ts) for ts in zip(*by_term)] if terms else [[] for _ in leaves]
    if len(orders) > 1:
        raise ValueError(f"jet: every primal needs the same number of series terms, got "
                         f"{[len(t) for t in series]}")
    return (orders.pop() if orders else 0), per_leaf
