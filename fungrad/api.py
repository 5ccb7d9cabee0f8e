"""The public transformations, with JAX's signatures and semantics.

Each API function flattens its pytree arguments, calls the flat machinery of
one interpreter (``interpreters/ad.py``, ``batching.py``, ``core.py``) and
unflattens the results.  Follow one ``grad`` call: ``grad`` -> ``vjp`` ->
``ad.linearize_flat`` (JVP trace over a partial-evaluation trace) ->
``ad.backward_pass`` over the linear jaxpr.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from fungrad._dtype_classes import is_floating, kind as dtype_kind
from fungrad import core
from fungrad.lax import state as _refs
from fungrad.core import ClosedJaxpr, Jaxpr, ShapedArray, Tracer, get_aval, float0
from fungrad.interpreters import ad, batching, tape
from fungrad.interpreters.ad import Zero
from fungrad.interpreters import partial_eval as pe
from fungrad.interpreters.partial_eval import trace_to_jaxpr
from fungrad import tree_util
from fungrad.tree_util import tree_flatten, tree_unflatten, tree_map, tree_leaves, Partial

__all__ = ["make_jaxpr", "eval_shape", "ShapeDtypeStruct", "jvp", "vjp", "linearize",
           "linear_transpose", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian",
           "hessian", "vmap", "stop_gradient", "float0", "fwd_and_bwd"]


# ----------------------------------------------------------------------------
# Flattening helpers
# ----------------------------------------------------------------------------

class _Store:
    """Holds the output tree structure a flat function discovers when called."""
    __slots__ = ("val",)


def flatten_fun(f: Callable, in_tree) -> tuple[Callable, _Store]:
    """``f`` on pytrees -> a function of flat leaves returning flat leaves."""
    store = _Store()

    def flat_f(*leaves):
        args, kwargs = tree_unflatten(in_tree, leaves)
        out = f(*args, **kwargs)
        out_leaves, store.val = tree_flatten(out)
        return [_as_value(x, "output of the function") for x in out_leaves]
    return flat_f, store


def _as_value(x, what: str):
    """Leaves become arrays (Python scalars keep NumPy's default dtypes)."""
    if isinstance(x, Tracer) or isinstance(x, np.ndarray) and dtype_kind(x.dtype) not in "OUS":
        return x
    if isinstance(x, np.generic):
        return np.asarray(x)
    if isinstance(x, (bool, int, float, complex)):      # (32-bit without jax_enable_x64)
        if type(x) in (int, float, complex):     # a Python number: weakly typed, as in JAX
            return core.weak_array(x, core.scalar_dtype(x))
        return np.asarray(x, dtype=core.scalar_dtype(x))
    if type(x) is _refs.Ref:
        raise TypeError(f"{what}: a Ref can't be differentiated with respect to or "
                        "returned here (grad: JAX refuses this too, a Ref's gradient would "
                        "have to live in a Ref; jax.vjp with respect to a Ref is not "
                        "supported by fungrad). Differentiate with respect to its value "
                        "(ref[...]) and write the result into the Ref (vjp's with_refs "
                        "adds a value argument's gradient into a Ref), or pass the Ref as "
                        "a non-differentiated argument (argnums).")
    try:
        arr = np.asarray(x)
    except Exception:
        arr = None
    if arr is None or dtype_kind(arr.dtype) in "OUS":       # objects, generators, strings
        raise TypeError(f"{what}: {type(x).__name__} {x!r:.80} is not a valid array "
                        "value (use numbers or arrays in pytrees of tuples/lists/dicts)")
    return arr


def _result(x):
    """Concrete results leave the API as read-only fungrad Arrays (user rules such as
    a custom_vjp's bwd may hand back plain NumPy values)."""
    if isinstance(x, (np.ndarray, np.generic)) and type(x) is not core.Array:
        return core.wrap_array(np.asarray(x))
    return x


def _argnums_tuple(argnums, nargs: int, who: str) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for n in nums:
        if not isinstance(n, int) or not -nargs <= n < nargs:
            raise ValueError(f"{who}: argnums={argnums!r} is out of range for a function "
                             f"called with {nargs} positional argument(s)")
    nums = tuple(n % nargs for n in nums)
    if len(set(nums)) != len(nums):
        # JAX fails here too: one argument cannot be two independent variables
        raise ValueError(f"{who}: argnums={argnums!r} names an argument more than once; list "
                         "each argument once (use the same gradient twice if you need it)")
    return nums


def _check_callable(fun, who: str):
    """``TypeError`` when a transformation is applied, not at the first call."""
    if not callable(fun):
        raise TypeError(f"{who}: expected a callable (a function to transform), got "
                        f"{type(fun).__name__} {fun!r:.60}")


def _partial_argnums(f, args, argnums):
    """``f`` as a function of ``args[argnums]`` only, the rest fixed."""
    def f_partial(*dyn):
        full = list(args)
        for i, a in zip(argnums, dyn):
            full[i] = a
        return f(*full)
    return f_partial, [args[i] for i in argnums]


# ----------------------------------------------------------------------------
# Staging: make_jaxpr, eval_shape
# ----------------------------------------------------------------------------

class ShapeDtypeStruct:
    """Shape and dtype of an array, without data (``jax.ShapeDtypeStruct``);
    ``weak_type`` as JAX's (a Python scalar's type), ``sharding`` kept as given
    (one device here: ``None`` is the default placement)."""
    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    @classmethod
    def like(cls, x) -> "ShapeDtypeStruct":
        """The shape, dtype, weak type and sharding of ``x`` (an array, a
        tracer, a Python scalar, a ``ShapeDtypeStruct``), as JAX's: what a
        ``pure_callback`` declares for a result shaped like its input."""
        aval = _abstractify(x)
        # a placement only where one was chosen (JAX's "committed" arrays): a
        # struct's own, or a partitioned array's; single-device arrays: None
        chosen = isinstance(x, ShapeDtypeStruct) or type(x) in core._global_array_types
        return cls(aval.shape, aval.dtype, weak_type=aval.weak_type,
                   sharding=x.sharding if chosen else None)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d ShapeDtypeStruct)")
        return self.shape[0]

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.sharding == other.sharding)

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def _abstractify(x) -> ShapedArray:
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, x.dtype, x.weak_type)
    if type(x) is ShapedArray:          # an abstract value stands for itself, as in JAX
        return x
    return get_aval(_as_value(x, "argument"))     # Python scalars stay weak, as in JAX


def _stage(fun, args, kwargs, static_argnums=()):
    static = set(_argnums_tuple(static_argnums, len(args), "make_jaxpr")) if static_argnums else set()
    dyn_idx = [i for i in range(len(args)) if i not in static]

    def with_statics(*dyn):
        full = list(args)
        for i, a in zip(dyn_idx, dyn):
            full[i] = a
        with _refs.RefScope("make_jaxpr"):     # (Refs written while staging: restored)
            return fun(*full, **kwargs)
    leaves, in_tree = tree_flatten((tuple(args[i] for i in dyn_idx), {}))
    avals = [_abstractify(x) for x in leaves]
    paths = _leaf_names(fun, in_tree, dyn_idx)
    flat, store = flatten_fun(with_statics, in_tree)
    jaxpr, consts = trace_to_jaxpr(flat, avals, paths)
    return ClosedJaxpr(jaxpr, consts), store.val


def _leaf_names(fun, in_tree, dyn_idx) -> list[str]:
    """Human names of the flat inputs, e.g. "argument 'params' ['w']" (for errors)."""
    from fungrad.tree_util import tree_flatten_with_path, keystr
    try:
        import inspect
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    dummy = tree_unflatten(in_tree, list(range(in_tree.num_leaves)))
    names = []
    for path, _ in tree_flatten_with_path(dummy)[0]:
        if path[0].idx == 1:               # a keyword argument
            names.append(f"argument {path[1].key!r}{keystr(path[2:])}")
            continue
        pos = dyn_idx[path[1].idx]
        label = f"'{params[pos]}'" if pos < len(params) else f"{pos}"
        names.append(f"argument {label}{keystr(path[2:])}")
    return names


def make_jaxpr(fun: Callable, static_argnums=(), axis_env=None, return_shape: bool = False):
    """``make_jaxpr(f)(*args)``: the ClosedJaxpr ``f`` stages for these argument types.
    ``axis_env``: ``(name, size)`` pairs binding axis names for the collectives
    ``f`` applies (as inside a named ``vmap`` or ``shard_map``)."""
    _check_callable(fun, "make_jaxpr")
    @functools.wraps(fun)
    def make(*args, **kwargs):
        with batching.extend_axis_env(dict(axis_env or ())):
            closed, out_tree = _stage(fun, args, kwargs, static_argnums)
        if return_shape:
            shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                      for a in closed.out_avals]
            return closed, tree_unflatten(out_tree, shapes)
        return closed
    return make


def eval_shape(fun: Callable, *args, **kwargs):
    """Output shapes/dtypes of ``fun(*args)`` as ShapeDtypeStructs; no FLOPs spent."""
    _check_callable(fun, "eval_shape")
    closed, out_tree = _stage(fun, args, kwargs)
    return tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                     for a in closed.out_avals])


# ----------------------------------------------------------------------------
# Forward mode
# ----------------------------------------------------------------------------

def _check_tangent(p, t, path: str):
    pa, ta = get_aval(p), get_aval(t)
    want = ad.tangent_aval(pa)
    if ta.shape != pa.shape:
        raise ValueError(f"jvp: tangent {path} has shape {ta.shape} but its primal has "
                         f"shape {pa.shape}; they must match.")
    if want.dtype == float0:
        return Zero(want)
    if ta.dtype != want.dtype:
        raise TypeError(f"jvp: primal {path} has dtype {pa.dtype.name}, so its tangent "
                        f"must have dtype {want.dtype.name}, got {ta.dtype.name}.")
    return t


def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """``(fun(*primals), J·tangents)``; with ``has_aux`` also the aux output."""
    _check_callable(fun, "jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples or lists of arguments, "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    t_leaves, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise ValueError(f"jvp: primal and tangent arguments must have the same tree "
                         f"structure, got primals {p_tree} and tangents {t_tree}")
    p_leaves = [_as_value(x, "jvp primal") for x in p_leaves]
    t_leaves = [_check_tangent(p, _as_value(t, "jvp tangent"), f"leaf {i}")
                for i, (p, t) in enumerate(zip(p_leaves, t_leaves))]
    f_flat, store, split = _flat_with_aux(fun, p_tree, has_aux, "jvp")
    outs, out_ts = ad.jvp_flat(f_flat, p_leaves, t_leaves)
    outs, aux = split(outs)
    outs = [_result(o) for o in outs]
    out_ts = [_result(ad.instantiate_zeros(t)) for t in out_ts[:len(outs)]]
    out, out_t = tree_unflatten(store.val, outs), tree_unflatten(store.val, out_ts)
    return (out, out_t, aux) if has_aux else (out, out_t)


def _flat_with_aux(fun, in_tree, has_aux: bool, who: str):
    """Flat version of ``fun(*args)``.  With has_aux the aux leaves are extra flat
    outputs after the main ones (so transformations unwrap them like outputs);
    ``split(outs)`` separates the two and rebuilds aux."""
    store = _Store()
    if not has_aux:
        def flat_main(*leaves):
            out_leaves, store.val = tree_flatten(fun(*tree_unflatten(in_tree, leaves)))
            return [_as_value(x, f"{who}: output") for x in out_leaves]
        return flat_main, store, lambda outs: (outs, None)
    aux_tree, n_main, aux_plain = _Store(), _Store(), _Store()

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        traced_aux = []
        if has_aux:
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError(f"{who}: with has_aux=True the function must return a pair "
                                f"(output, aux), got {type(out).__name__}")
            out, aux = out
            aux_leaves, aux_tree.val = tree_flatten(aux)
            # traced aux values leave the transformation like outputs; others as they are
            aux_plain.val = [None if isinstance(x, Tracer) else x for x in aux_leaves]
            traced_aux = [x for x in aux_leaves if isinstance(x, Tracer)]
        out_leaves, store.val = tree_flatten(out)
        n_main.val = len(out_leaves)
        return [_as_value(x, f"{who}: output") for x in out_leaves] + traced_aux

    def split(outs):
        main, traced = outs[:n_main.val], iter(outs[n_main.val:])
        if not has_aux:
            return main, None
        aux = [next(traced) if x is None else x for x in aux_plain.val]
        return main, tree_unflatten(aux_tree.val, aux)
    return flat, store, split


def linearize(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), f_jvp)`` where ``f_jvp(*tangents)`` is the JVP at ``primals``,
    evaluated from a staged linear jaxpr (no re-linearization per call)."""
    _check_callable(fun, "linearize")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    p_leaves = [_as_value(x, "linearize primal") for x in p_leaves]
    f_flat, store, split = _flat_with_aux(fun, p_tree, has_aux, "linearize")
    outs, jaxpr, residuals = ad.linearize_flat(f_flat, p_leaves)
    outs, aux = split(outs)
    jaxpr = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns, jaxpr.outvars[:len(outs)])
    out_tree = store.val

    def f_jvp(*tangents):
        t_leaves, t_tree = tree_flatten(tuple(tangents))
        if t_tree != p_tree:
            raise ValueError(f"linearized function expects tangents with structure "
                             f"{p_tree}, got {t_tree}")
        t_leaves = [_as_value(t, "tangent") for t in t_leaves]
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            _check_tangent(p, t, f"leaf {i}")
        out_t = core.eval_jaxpr(jaxpr, residuals, *t_leaves)
        return tree_unflatten(out_tree, out_t)
    f_jvp.jaxpr = ClosedJaxpr(jaxpr, residuals)
    out = tree_unflatten(out_tree, outs)
    return (out, f_jvp, aux) if has_aux else (out, f_jvp)


# ----------------------------------------------------------------------------
# Reverse mode
# ----------------------------------------------------------------------------

def _check_cotangent(ct, aval: ShapedArray, i: int):
    t = type(ct)
    if (t is np.ndarray or t is core.Array) and ct.shape == aval.shape and ct.dtype == aval.dtype \
            and ad.is_float(aval.dtype):
        return ct               # the common case, checked without building avals
    ct = _as_value(ct, "cotangent")
    ca = get_aval(ct)
    want = ad.tangent_aval(aval)
    if ca.shape != aval.shape or (want.dtype != float0 and ca.dtype != want.dtype):
        raise ValueError(f"vjp: cotangent for output leaf {i} should have shape "
                         f"{aval.shape} and dtype {want.dtype.name}, got shape {ca.shape} "
                         f"and dtype {ca.dtype.name}")
    return ct


def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), pullback)``; ``pullback(ct)`` returns a tuple with one
    cotangent per primal.  The pullback may be called many times.

    As in JAX the pullback is a pytree (a ``tree_util.Partial``): under a
    transformation its leaves are the residuals, so ``jit`` can return it and
    take it as an argument (``fwd_and_bwd``).  Eagerly it holds fungrad's
    tape, which is not an array: passed to ``jit`` it is a static argument."""
    _check_callable(fun, "vjp")
    return _vjp(fun, primals, has_aux)


def _vjp(fun: Callable, primals, has_aux: bool, pullback_at_once: bool = False):
    """``vjp``; ``pullback_at_once``: the caller calls the pullback right away,
    on the same trace, and drops it (``grad``), so under ``jit`` the staged
    tape may record the function (``_vjp_flat``)."""
    p_leaves, p_tree = tree_flatten(tuple(primals))
    p_leaves = [_as_value(x, "vjp primal") for x in p_leaves]
    f_flat, store, split = _flat_with_aux(fun, p_tree, has_aux, "vjp")
    outs, backward, residuals = _vjp_flat(f_flat, p_leaves, pullback_at_once)
    outs = pe.unalias(outs, range(len(outs)), p_leaves)     # no views of the caller's arrays
    outs, aux = split([_result(o) for o in outs])
    out_tree = store.val
    rule = _Pullback(backward, out_tree, p_tree, [get_aval(o) for o in outs],
                     residuals is not None)
    pullback = VJPFunction(rule) if residuals is None else VJPFunction(rule, list(residuals))
    out = tree_unflatten(out_tree, outs)
    return (out, pullback, aux) if has_aux else (out, pullback)


def _one(ans):
    """The cotangent ``grad`` seeds: 1 of ``ans``'s dtype, and of its weak type
    (as JAX's, so that the gradient of a function of Python numbers is weak)."""
    aval = get_aval(ans)
    if aval.weak_type:
        return core.weak_array(1, aval.dtype)
    return np.ones((), dtype=aval.dtype)


class _Pullback:
    """The static part of a vjp's pullback: ``(residuals, cotangent)`` (or just
    the cotangent, for the eager tape) -> the primals' cotangents.  Compared
    by identity, so one traced ``vjp`` gives one treedef (jit caches on it)."""

    def __init__(self, backward, out_tree, p_tree, out_avals, takes_residuals: bool):
        self.backward, self.out_tree, self.p_tree = backward, out_tree, p_tree
        self.out_avals, self.takes_residuals = out_avals, takes_residuals

    def __call__(self, *args):
        if len(args) != 1 + self.takes_residuals:
            raise TypeError(f"vjp: the pullback takes one argument, the cotangent of the "
                            f"output, got {len(args) - self.takes_residuals}")
        *residuals, cotangent = args
        ct_leaves, ct_tree = tree_flatten(cotangent)
        if ct_tree != self.out_tree:
            raise ValueError(f"vjp: the pullback expects a cotangent with the output's "
                             f"structure {self.out_tree}, got {ct_tree}")
        cts = [_check_cotangent(c, a, i)
               for i, (c, a) in enumerate(zip(ct_leaves, self.out_avals))]
        cts = [Zero(ad.tangent_aval(a)) if ad.tangent_aval(a).dtype == float0 else c
               for c, a in zip(cts, self.out_avals)]
        cts_in = [ad.instantiate_zeros(c) for c in self.backward(*residuals, cts)]
        # (a linear path passes a cotangent through as it is: no views of it)
        cts_in = pe.unalias(cts_in, range(len(cts_in)), ct_leaves)
        return tree_unflatten(self.p_tree, [_result(c) for c in cts_in])


class VJPFunction(Partial):
    """A vjp's pullback (JAX's ``VJP``): ``pullback(cotangent)``, a pytree (its
    residuals are its leaves, see ``vjp``), and ``with_refs(*entries)``."""

    def with_refs(self, *entries):
        """The pullback with one entry per primal leaf (in the primals'
        structure): a Ref to add that gradient into, ``jax.ad.GradValue()``
        to return it, or ``jax.ad.DontWant()`` (see ``fungrad/ad.py``)."""
        from fungrad.ad import DidntWant, DontWant, GradRef, GradValue
        rule = self.func
        wants, tree = tree_flatten(entries)
        if tree != rule.p_tree:
            raise ValueError(f"vjp: with_refs takes one entry per primal argument leaf, in "
                             f"the primals' structure {rule.p_tree}; got {tree}. Each is a "
                             "Ref, jax.ad.GradValue() or jax.ad.DontWant() (None is an "
                             "empty pytree, not a placeholder).")
        for want in wants:
            if not isinstance(want, (_refs.Ref, GradValue, DontWant)):
                raise TypeError(f"vjp: a with_refs entry must be a Ref, jax.ad.GradValue() "
                                f"or jax.ad.DontWant(), got {type(want).__name__}")

        def pullback(cotangent):
            grads = rule.p_tree.flatten_up_to(self(cotangent))
            out = []
            for want, g in zip(wants, grads):
                if type(want) is _refs.Ref:
                    _refs.addupdate(want, (), g)
                    out.append(GradRef())
                else:
                    out.append(DidntWant() if isinstance(want, DontWant) else g)
            return tree_unflatten(rule.p_tree, out)
        return pullback


tree_util.register_pytree_node(
    VJPFunction, lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: VJPFunction(func, *children[0], **children[1]))


def _vjp_flat(f_flat, primals, pullback_at_once: bool = False):
    """``(outs, backward, residuals)``: eagerly (nothing being traced), the tape
    of ``interpreters/tape.py`` (``backward(cts)``, residuals None); when the
    pullback runs at once on a plain staging trace (``jit(grad(f))``), the
    same tape spliced into that trace; under another transformation,
    linearize the whole function into one linear jaxpr (``backward(residuals,
    cts)``).  ``cts`` are the cotangents of the leading outputs (the others
    are aux values)."""
    if core.current_trace() is core.EVAL_TRACE and not core._float_checks:
        # (with jax_debug_nans/infs on, every primal result goes through EvalTrace's check)
        outs, backward = tape.vjp_eager(f_flat, primals)
        return outs, backward, None
    if pullback_at_once and tape.staged_tape_applies():
        outs, backward = tape.vjp_staged(f_flat, primals)
        return outs, backward, None
    outs, jaxpr, residuals = ad.linearize_flat(f_flat, primals)

    def backward(residuals, cts):
        n = len(cts)
        main = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns, jaxpr.outvars[:n])
        return ad.backward_pass(main, residuals, list(cts))
    return outs, backward, residuals


def linear_transpose(fun: Callable, *primals):
    """The transpose of the linear ``fun``; ``primals`` give the input types."""
    _check_callable(fun, "linear_transpose")
    p_leaves, p_tree = tree_flatten(tuple(primals))
    avals = [_abstractify(x) for x in p_leaves]
    store = _Store()

    def flat(*leaves):
        out_leaves, store.val = tree_flatten(fun(*tree_unflatten(p_tree, leaves)))
        return [_as_value(x, "linear_transpose output") for x in out_leaves]
    jaxpr, consts = trace_to_jaxpr(flat, avals, fold_known=True)
    out_avals = jaxpr.out_avals

    def transposed(*cts):
        ct = cts[0] if len(cts) == 1 else cts
        ct_leaves, ct_tree = tree_flatten(ct)
        if ct_tree != store.val:
            raise ValueError(f"linear_transpose: expected cotangent structure {store.val}, "
                             f"got {ct_tree}")
        ct_leaves = [_check_cotangent(c, a, i) for i, (c, a) in enumerate(zip(ct_leaves, out_avals))]
        cts_in = [ad.instantiate_zeros(c) for c in ad.backward_pass(jaxpr, consts, ct_leaves)]
        cts_in = pe.unalias(cts_in, range(len(cts_in)), ct_leaves)     # no views of cts
        return tree_unflatten(p_tree, cts_in)
    return transposed


def _is_complex(dtype) -> bool:
    return dtype_kind(np.dtype(dtype)) == "c"


def _check_diff_inputs(dyn_args, argnums, allow_int: bool, who: str,
                       holomorphic: bool = False, real_only: bool = False):
    """JAX's input checks: inexact leaves (ints only with allow_int); complex
    ones with ``holomorphic``; real floats only for ``real_only`` (jacfwd)."""
    for n, arg in zip(argnums, dyn_args):
        for leaf in tree_leaves(arg):
            if type(leaf) is float and not holomorphic:
                continue              # the common case, without building an aval
            if type(leaf) is _refs.Ref:
                _as_value(leaf, f"{who}: argument {n}")      # (raises, saying why)
            dt = get_aval(_as_value(leaf, who)).dtype
            if holomorphic and not _is_complex(dt):
                raise TypeError(
                    f"{who} with holomorphic=True requires inputs with complex dtype, but "
                    f"argument {n} has a leaf of dtype {dt.name}. Convert it (e.g. "
                    f"x.astype(complex)), or drop holomorphic=True.")
            if not ad.is_float(dt) and not allow_int:
                raise TypeError(
                    f"{who} requires real- or complex-valued inputs (input dtype that is a "
                    f"sub-dtype of np.inexact), but argument {n} has a leaf of dtype "
                    f"{dt.name}. Convert it with .astype(float), differentiate with "
                    f"respect to other arguments (argnums), or pass allow_int=True "
                    f"to get a float0 zero gradient for it.")
            if real_only and not holomorphic and _is_complex(dt):
                raise TypeError(
                    f"{who} requires real-valued inputs (input dtype that is a sub-dtype of "
                    f"np.floating), but argument {n} has a leaf of dtype {dt.name}. For "
                    f"holomorphic functions pass holomorphic=True; for the derivative of a "
                    f"non-holomorphic function of complex inputs use jvp directly, or "
                    f"differentiate with respect to the real and imaginary parts.")


def _check_output_dtype(who: str, holomorphic: bool, ans):
    """JAX's output checks for reverse-mode wrappers (grad, jacrev): real
    floating outputs, complex ones only with ``holomorphic`` (which needs them)."""
    dt = get_aval(ans).dtype
    if holomorphic:
        if not _is_complex(dt):
            raise TypeError(f"{who} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
    elif _is_complex(dt):
        raise TypeError(
            f"{who} requires real-valued outputs (output dtype that is a sub-dtype of "
            f"np.floating), but got {dt.name}. For a holomorphic function pass "
            f"holomorphic=True; otherwise take the real part (or abs(...)**2) of the "
            f"output, or use vjp directly for the derivative of a non-holomorphic "
            f"function with complex outputs.")
    elif not is_floating(dt):
        raise TypeError(f"{who} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For functions "
                        f"with integer outputs use vjp directly.")


def value_and_grad(fun: Callable, argnums=0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False):
    """``(fun(*args), ∇fun(*args))`` for a scalar-valued ``fun``.

    Complex numbers follow JAX: for a real-valued ``fun`` of complex ``z`` the
    gradient is ``∂f/∂x - i ∂f/∂y`` (the cotangent 1.0 pulled back; for
    f = |z|² it is 2·conj(z)), of ``z``'s dtype; a complex-valued ``fun`` needs
    ``holomorphic=True`` (then the result is f'(z)) and complex inputs."""
    _check_callable(fun, "value_and_grad")
    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "grad")
        f = (lambda *a: fun(*a, **kwargs)) if kwargs else fun
        f_partial, dyn = _partial_argnums(f, args, nums)
        _check_diff_inputs(dyn, nums, allow_int, "grad", holomorphic)
        if has_aux:
            ans, pullback, aux = _vjp(f_partial, dyn, True, pullback_at_once=True)
        else:
            ans, pullback = _vjp(f_partial, dyn, False, pullback_at_once=True)
        _check_scalar(ans)
        _check_output_dtype("grad", holomorphic, ans)
        g = pullback(_one(ans))
        g = g[0] if isinstance(argnums, int) else tuple(g)
        return ((ans, aux), g) if has_aux else (ans, g)
    return value_and_grad_f


def _check_scalar(ans):
    if isinstance(ans, (tuple, list, dict)) or not hasattr(ans, "shape") and not isinstance(ans, (int, float)):
        raise TypeError(f"grad requires the function to return a scalar array, got a "
                        f"{type(ans).__name__}. Use jacrev/vjp for non-scalar outputs, or "
                        "has_aux=True to return auxiliary data.")
    aval = get_aval(ans)
    if aval.shape != ():
        raise TypeError(f"grad requires a scalar output, got shape {aval.shape}. Reduce it "
                        f"(e.g. .sum()), or use jacrev / vjp for the Jacobian of a "
                        f"non-scalar function.")


def grad(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
         allow_int: bool = False):
    """The gradient of a scalar-valued ``fun`` with respect to ``argnums``."""
    _check_callable(fun, "grad")
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return grad_f


def fwd_and_bwd(fun: Callable, argnums, has_aux: bool = False, jitted: bool = True):
    """``(fwd, bwd)``, the forward and backward passes of ``fun`` as two
    functions (JAX's ``jax.fwd_and_bwd``): ``fwd(*args)`` is
    ``(fun(*args), residuals)`` (``(..., aux)`` with ``has_aux``), and
    ``bwd(residuals, cotangent)`` the cotangents of the ``argnums`` arguments
    (one, or a tuple when ``argnums`` is a sequence).  ``residuals`` is the
    vjp's pullback, a pytree: with ``jitted`` both passes are jitted once and
    ``bwd`` is reused across steps without retracing."""
    _check_callable(fun, "fwd_and_bwd")
    if not isinstance(argnums, int):
        argnums = tuple(argnums)

    def fwd(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "fwd_and_bwd")
        f = (lambda *a: fun(*a, **kwargs)) if kwargs else fun
        f_partial, dyn = _partial_argnums(f, args, nums)
        return vjp(f_partial, *dyn, has_aux=has_aux)

    def bwd(residuals, cotangent):
        if not callable(residuals):
            raise TypeError("fwd_and_bwd: bwd's first argument must be the residuals that "
                            f"fwd returned, got {type(residuals).__name__}")
        g = residuals(cotangent)
        return g[0] if isinstance(argnums, int) else g
    if jitted:
        from fungrad.jitting import jit
        fwd, bwd = jit(fwd), jit(bwd)
    return fwd, bwd


# ----------------------------------------------------------------------------
# vmap
# ----------------------------------------------------------------------------

def _flatten_axes(who: str, treedef, axes, leaves_hint: str):
    """Broadcast a prefix tree of axes (ints/None) to one entry per leaf."""
    if axes is None or isinstance(axes, int):
        return [axes] * treedef.num_leaves
    ax_leaves, ax_tree = tree_flatten(axes, is_leaf=lambda x: x is None)
    try:
        subtrees = ax_tree.flatten_up_to(tree_unflatten(treedef, [0] * treedef.num_leaves))
    except (ValueError, TypeError) as err:
        raise ValueError(f"vmap {who} specification must be a tree prefix of the "
                         f"corresponding value: got {who}={axes!r} for {leaves_hint} "
                         f"with structure {treedef}. ({err})") from None
    out = []
    for ax, sub in zip(ax_leaves, subtrees):
        if ax is not None and not isinstance(ax, int):
            raise ValueError(f"vmap {who} must contain ints or None, got {ax!r}")
        out.extend([ax] * len(tree_leaves(sub)))
    return out


def vmap(fun: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size=None,
         spmd_axis_name=None):
    """Vectorise ``fun`` over a new leading axis (or the axes in ``in_axes``)."""
    _check_callable(fun, "vmap")
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX treats a list as a tuple here

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if not isinstance(in_axes, (int, tuple, type(None))):
            raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                            f"corresponding to the positional arguments, got {in_axes!r}")
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments; got a tuple of "
                             f"length {len(in_axes)} for {len(args)} positional arguments")
        leaves, in_tree = tree_flatten((args, kwargs))
        # (a Ref argument: mapped over its value, its new value written back)
        values = [x._contents() if type(x) is _refs.Ref else _as_value(x, "vmap argument")
                  for x in leaves]
        # keyword arguments are always mapped over axis 0, as in JAX
        dims = _flatten_axes("in_axes", in_tree, (in_axes, 0), "the arguments")
        dims = [_normalize_axis(d, get_aval(x).ndim, i) for i, (x, d) in enumerate(zip(values, dims))]
        size = _axis_size(values, dims, in_tree, axis_size)
        flat, store = flatten_fun(fun, in_tree)
        outs = _vmap_call(flat, leaves, values, dims, size, out_axes, store, axis_name)
        outs = pe.unalias(outs, range(len(outs)), values)    # no views of the caller's arrays
        return tree_unflatten(store.val, outs)
    return vmapped


def _vmap_call(flat, leaves, values, dims, size, out_axes, store, axis_name):
    # out_axes can only be flattened once the output structure is known, so the
    # batch trace's outputs are kept batched and moved afterwards.
    trace = batching.BatchTrace(core.current_trace(), size, axis_name)
    with core.new_trace_context(trace):
        ins = [x if d is None else batching.BatchTracer(trace, v, d)
               for x, v, d in zip(leaves, values, dims)]
        ins = [_refs.stand_in(v, trace) if type(x) is _refs.Ref and d is not None else v
               for x, v, d in zip(leaves, ins, dims)]
        outs = [trace.lift(o) for o in flat(*ins)]
        written = [(ref, trace.lift(new._value), d) for ref, new, d in zip(leaves, ins, dims)
                   if type(new) is _refs.Ref and new is not ref and new._value is not new._first]
    for ref, (val, dim), d in written:    # mapped Ref arguments: their new values
        _refs.store(ref, batching.moveaxis(batching.bdim_at_front(val, dim, size), 0, d))
    out_dims = _flatten_axes("out_axes", store.val, out_axes, "the outputs")
    results = []
    for i, ((val, dim), od) in enumerate(zip(outs, out_dims)):
        if od is None:
            if dim is not None:
                raise ValueError(f"vmap has out_axes=None for output leaf {i}, but it is "
                                 "mapped over the batch axis; use an integer out_axes.")
            results.append(val)
            continue
        val = batching.bdim_at_front(val, dim, size)
        od = _normalize_axis(od, get_aval(val).ndim, i, "out_axes")
        results.append(batching.moveaxis(val, 0, od))
    return results


def _normalize_axis(d, ndim, i, who="in_axes"):
    if d is None:
        return None
    if who == "in_axes" and not -ndim <= d < ndim:
        raise ValueError(f"vmap {who}={d} is out of bounds for argument leaf {i} of "
                         f"rank {ndim}")
    if who == "out_axes" and not -ndim <= d < ndim:
        raise ValueError(f"vmap out_axes={d} is out of bounds for output leaf {i} of "
                         f"rank {ndim - 1} (batched rank {ndim})")
    return d % ndim


def _axis_size(leaves, dims, in_tree, axis_size):
    sizes = {get_aval(x).shape[d] for x, d in zip(leaves, dims) if d is not None}
    if len(sizes) > 1:
        from fungrad.tree_util import tree_flatten_with_path, keystr
        dummy = tree_unflatten(in_tree, list(range(len(leaves))))
        paths = [("args" if p[0].idx == 0 else "kwargs") + keystr(p[1:])
                 for p, _ in tree_flatten_with_path(dummy)[0]]
        lines = [f"  {paths[i]}: axis {d} of shape {get_aval(x).shape} has size "
                 f"{get_aval(x).shape[d]}"
                 for i, (x, d) in enumerate(zip(leaves, dims)) if d is not None]
        raise ValueError("vmap got inconsistent sizes for the mapped axis:\n" + "\n".join(lines))
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes, or "
                             "be given axis_size")
        return int(axis_size)
    size = sizes.pop()
    if axis_size is not None and axis_size != size:
        raise ValueError(f"vmap axis_size={axis_size} differs from the mapped size {size}")
    return size


# ----------------------------------------------------------------------------
# Jacobians and Hessians (vmap of jvp / vjp, as JAX)
# ----------------------------------------------------------------------------

def _std_basis(leaves):
    """Identity rows split per leaf: leaf i gets shape (N,) + shape_i."""
    sizes = [get_aval(x).size for x in leaves]
    total = sum(sizes)
    dtype = np.result_type(*[get_aval(x).dtype for x in leaves]) if leaves else np.float64
    eye = np.eye(total, dtype=dtype)
    out, start = [], 0
    for x, n in zip(leaves, sizes):
        aval = get_aval(x)
        out.append(eye[:, start:start + n].reshape((total,) + aval.shape).astype(aval.dtype))
        start += n
    return out


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """Jacobian by forward mode: one ``jvp`` per input basis vector, batched by vmap.

    As JAX: real inputs, or complex ones with ``holomorphic=True`` (then the
    outputs must be complex and the result is the complex derivative)."""
    _check_callable(fun, "jacfwd")
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacfwd")
        f = (lambda *a: fun(*a, **kwargs)) if kwargs else fun
        f_partial, dyn = _partial_argnums(f, args, nums)
        _check_diff_inputs(dyn, nums, False, "jacfwd", holomorphic, real_only=True)
        leaves, tree = tree_flatten(tuple(dyn))
        leaves = [_as_value(x, "jacfwd argument") for x in leaves]
        basis = _std_basis(leaves)

        out_avals = []

        def push(*t_leaves):
            res = jvp(f_partial, tree_unflatten(tree, leaves), tree_unflatten(tree, t_leaves),
                      has_aux=has_aux)
            out_avals[:] = [get_aval(y) for y in tree_leaves(res[0])]
            return res[1:] if has_aux else res[1]
        out = vmap(push)(*basis)
        if holomorphic:     # (jacfwd checks outputs only then, as JAX)
            for leaf in tree_leaves(out[0] if has_aux else out):
                _check_output_dtype("jacfwd", True, leaf)
        ys = jvp(f_partial, tree_unflatten(tree, leaves), tree_unflatten(tree, [np.zeros_like(b[0]) for b in basis]), has_aux=has_aux) if has_aux else None
        jac_t, aux = (out[0], ys[2]) if has_aux else (out, None)
        j_leaves, j_tree = tree_flatten(jac_t)
        # (JAX's jacfwd gives each block the weak type of its output leaf)
        jac = tree_unflatten(j_tree, [_split_in_axis(_weak_like(j, a), leaves, tree, nums, argnums)
                                      for j, a in zip(j_leaves, out_avals)])
        return (jac, aux) if has_aux else jac
    return jacfun


def _split_in_axis(j, in_leaves, in_tree, nums, argnums):
    """(N,) + out_shape -> pytree over inputs of out_shape + in_shape."""
    from fungrad import numpy as fnp
    j = fnp.moveaxis(j, 0, -1)
    out_shape = j.shape[:-1]
    parts, start = [], 0
    for x in in_leaves:
        aval = get_aval(x)
        parts.append(fnp.reshape(j[..., start:start + aval.size], out_shape + aval.shape))
        start += aval.size
    tree = tree_unflatten(in_tree, parts)
    return tree[0] if isinstance(argnums, int) else tree


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
    """Jacobian by reverse mode: one pullback per output basis vector, batched by vmap.

    As JAX: real outputs, or complex ones with ``holomorphic=True`` (which also
    needs complex inputs)."""
    _check_callable(fun, "jacrev")
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), "jacrev")
        f = (lambda *a: fun(*a, **kwargs)) if kwargs else fun
        f_partial, dyn = _partial_argnums(f, args, nums)
        _check_diff_inputs(dyn, nums, allow_int, "jacrev", holomorphic)
        res = vjp(f_partial, *dyn, has_aux=has_aux)
        y, pullback = res[0], res[1]
        y_leaves, y_tree = tree_flatten(y)
        for leaf in y_leaves:
            _check_output_dtype("jacrev", holomorphic, leaf)
        basis = _std_basis(y_leaves)
        cts = vmap(lambda *c: pullback(tree_unflatten(y_tree, list(c))))(*basis)
        # cts: tuple over inputs of (M,) + in_shape; regroup per output leaf
        in_leaves, in_tree = tree_flatten(cts)
        per_out = []
        start = 0
        for yl in y_leaves:
            ya = get_aval(yl)
            # (JAX's jacrev gives each block the weak type of its input leaf)
            per_out.append(tree_unflatten(in_tree, [
                _weak_like(_reshape_rows(c, start, ya), get_aval(x))
                for c, x in zip(in_leaves, tree_leaves(tuple(dyn)))]))
            start += ya.size
        jac = tree_unflatten(y_tree, [p[0] if isinstance(argnums, int) else tuple(p) for p in per_out])
        return (jac, res[2]) if has_aux else jac
    return jacfun


def _weak_like(x, aval):
    """``x`` weakly typed as ``aval`` is (JAX's ``_possible_downcast`` of a
    Jacobian block to the leaf it is shaped like)."""
    from fungrad.lax.selection import convert_weak_type
    return convert_weak_type(x, get_aval(x).dtype, aval.weak_type)


def _reshape_rows(c, start, out_aval):
    from fungrad import numpy as fnp
    rows = c[start:start + out_aval.size]
    return fnp.reshape(rows, out_aval.shape + tuple(c.shape[1:]))


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
    """``jacfwd(jacrev(fun))``: forward-over-reverse."""
    _check_callable(fun, "hessian")
    return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def stop_gradient(x):
    from fungrad import lax
    return lax.stop_gradient(x)


jacobian = jacrev     # JAX's alias
