"""Optimisation passes over jaxprs, run before code generation.

Each pass is a function ``Jaxpr -> Jaxpr`` that keeps the jaxpr's meaning
(checked by property tests: the optimised function equals the original):

* ``simplify``: algebraic no-ops autodiff leaves behind — ``x * 1``, ``x + 0``,
  ``neg(neg x)``, no-op reshape/transpose/convert/broadcast, reductions over
  no axes;
* ``fold_constants``: equations whose inputs are all scalar literals are
  computed once, at compile time, and become literals;
* ``cse``: common-subexpression elimination (same primitive, params, inputs;
  inputs of commutative primitives in any order);
* ``factor_products``: ``x*a + (x*b)*c`` becomes ``x*(a + b*c)`` when the
  products are used nowhere else and ``x`` has the result's shape (one
  full-size operation fewer: backward passes are full of such sums, one per
  value used twice);
* ``fold_transposes``: transposes of ``dot_general`` operands and results are
  folded into its dimension numbers (or an operand swap);
* ``concatenate_pads``: a sum of zero-padded arrays filling disjoint slices
  of one axis (the cotangent of an array split by slicing) becomes one
  ``concatenate``;
* ``dce``: dead-code elimination (``partial_eval.dce_jaxpr``).

Effectful primitives (``primitive.effectful``: debug callbacks, checks) are
never removed by ``dce`` nor merged by ``cse``; they have no outputs to fold.

* ``inline_calls``: nested ``jit`` calls are spliced into the enclosing jaxpr,
  so the other passes (and code generation) see one flat program.

``optimize`` runs inline_calls, fold_constants, simplify, cse, factor_products,
fold_transposes, concatenate_pads, dce,
and recurses into the sub-jaxprs of higher-order primitives (any param that is
a ClosedJaxpr or a tuple of them: cond branches, scan/while bodies, ...).  A
sub-jaxpr keeps its signature (the enclosing primitive's rules and lowering
rely on it): only its internal equations change.  Rematerialisation
primitives (``remat``/``checkpoint``) are a CSE barrier: their purpose is to
recompute values, so nothing inside them is merged with the outside.

The passes know no primitive by name: they read algebraic facts each
primitive declares next to its rules (``Primitive.commutative``, ``unit``,
``forwards_when``, ``involution``, ``remat``, ``collective``,
``distributes_over``), and the
structural primitives they rewrite (transpose, dot_general,
broadcast_in_dim, pad, concatenate) are registered by lax in ``array_ops`` (the interpreters
never import lax).
"""
from __future__ import annotations

import numpy as np

from fungrad._dtype_classes import is_inexact
from fungrad.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from fungrad.interpreters import array_ops
from fungrad.interpreters.partial_eval import dce_jaxpr, has_effects

__all__ = ["optimize", "inline_calls", "simplify", "fold_constants", "cse", "factor_products",
           "fold_transposes", "concatenate_pads", "dce"]


_NOTHING_FILLED: dict = {}


def _is_literal(atom, value, filled=None) -> bool:
    """``atom`` is the scalar ``value``, or an array filled with it (a broadcast
    of such a literal, as symbolic zeros and ones become when instantiated)."""
    if type(atom) is Literal:
        val = atom.val
        if type(val) is float or type(val) is int:      # most literals: no NumPy call
            return val == value
        if type(val) is np.ndarray:      # (0-d arrays: as a Python scalar, compared fast)
            return val.ndim == 0 and val.item() == value
        return np.ndim(val) == 0 and val == value
    return filled is not None and atom in filled and filled[atom] == value


def _forward(eqn: JaxprEqn, filled=_NOTHING_FILLED):
    """The input an equation merely forwards (so it can be dropped), or None."""
    prim, ins, outs = eqn.primitive, eqn.inputs, eqn.outvars
    if prim.multiple_results or not outs:
        return None
    out = outs[0].aval
    unit = prim.unit
    if unit is not None and len(ins) == 2:    # x * 1, x + 0, x - 0, x / 1 (1 * x, 0 + x)
        a, b = ins        # (a variable no broadcast of a literal fills: at once)
        if (type(b) is Literal or b in filled) and _is_literal(b, unit, filled) and \
                _same_type(a.aval, out):
            return a
        if prim.commutative and (type(a) is Literal or a in filled) and \
                _is_literal(a, unit, filled) and _same_type(b.aval, out):
            return b
    if prim.forwards_when is not None and prim.forwards_when(eqn.params) and \
            _same_type(ins[0].aval, out):
        return ins[0]
    return None


def _same_type(aval, out) -> bool:
    return aval.shape == out.shape and aval.dtype == out.dtype


def _with_inputs(eqn: JaxprEqn, inputs) -> JaxprEqn:
    """``eqn`` reading ``inputs``: itself when they are its inputs (equations are
    never mutated, so passes share them; a new one per equation per pass was a
    fifth of the passes' time on long programs)."""
    if inputs == eqn.inputs:      # (Var and Literal compare by identity: a C-level loop)
        return eqn
    return JaxprEqn(eqn.primitive, inputs, eqn.params, eqn.outvars, eqn.source, eqn.scope)


def simplify(jaxpr: Jaxpr) -> Jaxpr:
    """Remove equations that are algebraic no-ops; rewire their users."""
    return _rewrite(jaxpr, simplify=True)


def fold_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluate scalar equations whose inputs are all literals."""
    return _rewrite(jaxpr, fold=True)


def cse(jaxpr: Jaxpr) -> Jaxpr:
    """Reuse the outputs of an earlier identical equation."""
    return _rewrite(jaxpr, merge=True)


def _rewrite(jaxpr: Jaxpr, fold=False, simplify=False, merge=False) -> Jaxpr:
    """``fold_constants``, ``simplify`` and ``cse`` (those asked for) in one walk
    over the equations: each equation, its inputs renamed, is folded, or
    dropped as a no-op, or merged with an earlier identical one, or kept.  (One
    walk instead of three: on long programs each walk costs a few
    microseconds per equation, and most rewrite nothing.)"""
    return _rewrite_walk(jaxpr, fold, simplify, merge)[0]


def _rewrite_walk(jaxpr: Jaxpr, fold=False, simplify=False, merge=False,
                  find_sums=False) -> tuple[Jaxpr, bool]:
    """``(_rewrite's jaxpr, whether it has a sum of products)``: with
    ``find_sums`` the walk also answers ``_has_sum_of_products`` for the
    result (else False), so ``factor_products`` need not walk it again."""
    subst: dict = {}
    producer: dict = {}
    filled: dict = {}     # var -> the scalar it is a broadcast of
    seen: dict = {}
    product_of: dict = {}  # (find_sums) var -> the product primitive computing it
    facts: dict = {}       # primitive -> (simplify looks at it, cse may merge it)
    dropped: dict = {}     # (simplify) var -> the no-op equation that computed it
    eqns = []
    has_sums = False
    for eqn in jaxpr.eqns:
        # (Literals hash by identity, and are never renamed)
        inputs = [subst.get(a, a) for a in eqn.inputs] if subst else eqn.inputs
        prim = eqn.primitive
        fact = facts.get(prim)
        if fact is None:
            fact = facts[prim] = _facts(prim)
        if fold and inputs and type(inputs[0]) is Literal and _folds(eqn, inputs):
            value = np.asarray(prim.impl(*[np.asarray(a.val, a.aval.dtype) for a in inputs],
                                         **eqn.params))
            subst[eqn.outvars[0]] = Literal(value, eqn.outvars[0].aval)
            continue
        if inputs is not eqn.inputs:
            eqn = _with_inputs(eqn, inputs)
        if simplify and fact[0]:
            fwd = _simplified(eqn, producer, filled)
            if fwd is not None:
                subst[eqn.outvars[0]] = fwd
                dropped[eqn.outvars[0]] = eqn
                continue
        if merge and fact[1]:
            key = _cse_key(eqn)
            if key is not None:
                # keyed by the key's hash, the earlier equation's own key compared
                # on a hit (holding a key per equation was most of the memory of
                # a long program's compile; a collision only misses a merge)
                h = hash(key)
                earlier = seen.get(h)
                if earlier is None:
                    seen[h] = eqn
                elif _cse_key(earlier) == key:
                    subst.update(zip(eqn.outvars, earlier.outvars))
                    continue
        eqns.append(eqn)
        if find_sums:
            if prim.distributes_over:
                for v in eqn.outvars:
                    product_of[v] = prim
            if product_of and len(inputs) == 2:
                mul = product_of.get(inputs[0])
                if mul is not None and product_of.get(inputs[1]) is mul and \
                        prim in mul.distributes_over:
                    find_sums, product_of = False, {}
                    has_sums = True
    outvars = _outputs(jaxpr.outvars, subst, dropped, eqns) if subst else jaxpr.outvars
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars), has_sums


def _outputs(outvars, subst, dropped, eqns) -> list:
    """The program's outputs renamed; a dropped no-op that changed only the weak
    type of an output (a transpose's convert_element_type) is kept, appended to
    ``eqns``, so the program returns the type it declared."""
    out, kept = [], set()
    for v in outvars:
        w = subst.get(v, v)
        if w is not v and v in dropped and w.aval.weak_type != v.aval.weak_type:
            if v not in kept:
                kept.add(v)
                eqns.append(dropped[v])
            w = v
        out.append(w)
    return out


def _facts(prim) -> tuple[bool, bool]:
    """(whether ``_simplified`` can drop an equation of ``prim``, whether ``cse``
    may merge one): sin, cos... are looked at by cse only."""
    looks = (prim is array_ops.broadcast_in_dim_p or prim.unit is not None
             or prim.forwards_when is not None or bool(prim.involution))
    return looks, not (prim.remat or prim.effectful)


def _folds(eqn, inputs) -> bool:
    p = eqn.primitive
    return (bool(inputs) and isinstance(inputs[0], Literal)
            and all(isinstance(a, Literal) for a in inputs)
            and not p.multiple_results and eqn.outvars[0].aval.shape == ()
            and p.collective is None)


def _simplified(eqn, producer, filled):
    """The atom ``eqn``'s output equals when it is a no-op (``x * 1``,
    ``neg(neg x)``), else None (and an involution is recorded as its outputs'
    producer)."""
    prim = eqn.primitive
    if prim is array_ops.broadcast_in_dim_p and isinstance(eqn.inputs[0], Literal):
        filled[eqn.outvars[0]] = np.asarray(eqn.inputs[0].val).item()
    if prim.unit is None and prim.forwards_when is None and not prim.involution:
        fwd = None                          # (sin, cos, ...: nothing to look at)
    else:
        fwd = _forward(eqn, filled)
    if fwd is None and prim.involution:      # neg(neg x)
        inner = producer.get(eqn.inputs[0])
        if inner is not None and inner.primitive is eqn.primitive:
            fwd = inner.inputs[0]
    if fwd is None and prim.involution:   # (only what the test above reads: a map of
        for v in eqn.outvars:             # every variable was tens of MB on long programs)
            producer[v] = eqn
    return fwd


def _cse_key(eqn):
    """What identifies the equation's value among the earlier ones, or None if it
    is never merged (remat: recomputation is its point; effects: each must
    happen; unhashable params)."""
    prim, params = eqn.primitive, eqn.params
    if prim.remat or prim.effectful or params and has_effects(eqn):
        return None       # (without params, effectful is has_effects' whole answer)
    ins = eqn.inputs
    n = len(ins)
    if n == 1:            # (most equations have one or two operands: keyed inline)
        a = ins[0]
        in_keys = (a if type(a) is Var else _key(a),)
    elif n == 2:
        a, b = ins
        if type(a) is not Var:
            a = _key(a)
        if type(b) is not Var:
            b = _key(b)
        if prim.commutative:            # (_order's, inline: variables first, by identity)
            literal_a, literal_b = type(a) is tuple, type(b) is tuple
            if literal_a != literal_b:
                if literal_a:
                    a, b = b, a
            elif id(b) < id(a) if not literal_a else _order(b) < _order(a):
                a, b = b, a
        in_keys = (a, b)
    else:
        in_keys = tuple(map(_key, ins))
        if prim.commutative:
            in_keys = tuple(sorted(in_keys, key=_order))
    if not params:        # (variables and literal keys hash)
        return (prim, (), n, *in_keys)
    try:
        # (one flat tuple: a key per equation is held until the end of the walk)
        key = (prim, tuple(sorted(params.items())), n, *in_keys)
        hash(key)
    except TypeError:
        return None
    return key


def _fold_operand_transpose(dims, perm, ndim):
    """dot_general dimension numbers on ``transpose(a, perm)`` rewritten for ``a``,
    or None when that would reorder the free dimensions of the result."""
    contract, batch = dims
    free = [j for j in range(ndim) if j not in contract and j not in batch]
    mapped_free = [perm[j] for j in free]
    if mapped_free != sorted(mapped_free):
        return None
    return tuple(perm[d] for d in contract), tuple(perm[d] for d in batch)


def _fold_output_transpose(eqn, perm, lhs_ndim, rhs_ndim):
    """``transpose(dot_general(x, y))`` as ``dot_general(y, x)`` when the
    transpose just puts y's free dimensions before x's; else None."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    nb = len(lb)
    n_lf = lhs_ndim - len(lc) - nb
    n_rf = rhs_ndim - len(rc) - nb
    swapped = (tuple(range(nb)) + tuple(range(nb + n_lf, nb + n_lf + n_rf))
               + tuple(range(nb, nb + n_lf)))
    if tuple(perm) != swapped:
        return None
    params = dict(eqn.params, dimension_numbers=((rc, lc), (rb, lb)))
    return JaxprEqn(eqn.primitive, eqn.inputs[::-1], params, eqn.outvars, eqn.source,
                    eqn.scope)


def fold_transposes(jaxpr: Jaxpr) -> Jaxpr:
    """Fold transposes into ``dot_general``: of an operand (the dimension numbers
    say which axes to contract, so no copy is needed) and of the result (swap
    the operands).  The dead transposes are left to ``dce``."""
    if not any(e.primitive is array_ops.dot_general_p for e in jaxpr.eqns):
        return jaxpr                        # nothing to fold into (elementwise programs)
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    uses: dict = {}
    for e in jaxpr.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                uses[a] = uses.get(a, 0) + 1
    for v in jaxpr.outvars:
        if isinstance(v, Var):
            uses[v] = uses.get(v, 0) + 1
    eqns = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is array_ops.dot_general_p:
            eqn = _fold_operands(eqn, producer)
        elif eqn.primitive is array_ops.transpose_p:
            dot = producer.get(eqn.inputs[0])
            if dot is not None and dot.primitive is array_ops.dot_general_p and \
                    uses.get(eqn.inputs[0]) == 1:
                new = _fold_output_transpose(dot, eqn.params["permutation"],
                                             dot.inputs[0].aval.ndim, dot.inputs[1].aval.ndim)
                if new is not None:
                    eqn = JaxprEqn(new.primitive, new.inputs, new.params, eqn.outvars,
                                   eqn.source, eqn.scope)
        eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _fold_operands(eqn, producer):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    inputs = list(eqn.inputs)
    dims = [[lc, lb], [rc, rb]]
    for i, operand in enumerate(inputs):
        src = producer.get(operand)
        if src is None or src.primitive is not array_ops.transpose_p:
            continue
        folded = _fold_operand_transpose(dims[i], src.params["permutation"], operand.aval.ndim)
        if folded is not None:
            inputs[i] = src.inputs[0]
            dims[i] = list(folded)
    if inputs == list(eqn.inputs):
        return eqn
    params = dict(eqn.params, dimension_numbers=((dims[0][0], dims[1][0]), (dims[0][1], dims[1][1])))
    return JaxprEqn(eqn.primitive, inputs, params, eqn.outvars, eqn.source,
                    eqn.scope)


def _key(atom):
    # (a zero by its text: 0.0 == -0.0, but x * 0.0 and x * -0.0 differ in sign)
    if type(atom) is Literal:
        val = atom.val
        if type(val) is float:              # (the common literals, keyed without
            return ("lit", atom.aval.dtype.char, val if val else repr(val))    # NumPy calls)
        if type(val) is not np.ndarray:
            val = np.asarray(val)
        return ("lit", val.dtype.str, repr(val.item()))
    return atom


def _order(key):
    # a canonical order of commutative operands that is cheap to compute (any
    # order that is the same for ``a*b`` and ``b*a`` within one walk will do:
    # variables by identity; repr of a Var formats its aval, most of cse's time
    # on big programs once)
    return (0, id(key), "") if isinstance(key, Var) else (1, 0, repr(key))


def _use_counts(jaxpr: Jaxpr) -> dict:
    uses: dict = {}
    for a in [a for e in jaxpr.eqns for a in e.inputs] + list(jaxpr.outvars):
        if isinstance(a, Var):
            uses[a] = uses.get(a, 0) + 1
    return uses


def _product_terms(v, mul, producer, uses, dtype) -> list:
    """The factors of ``v`` through single-use ``mul`` equations of ``dtype``."""
    eqn = producer.get(v)
    if eqn is None or eqn.primitive is not mul or uses.get(v) != 1:
        return [v]
    if any(a.aval.dtype != dtype for a in eqn.inputs):
        return [v]
    return [t for a in eqn.inputs for t in _product_terms(a, mul, producer, uses, dtype)]


def _multiply(terms, mul, dtype, eqns):
    """One atom for the product of ``terms``, appending the equations needed."""
    out = terms[0]
    for t in terms[1:]:
        shape = np.broadcast_shapes(out.aval.shape, t.aval.shape)
        new = Var(ShapedArray(shape, dtype))
        eqns.append(JaxprEqn(mul, [out, t], {}, [new]))
        out = new
    return out


def _factored(eqn, producer, uses, eqns):
    """``eqn`` (a sum or difference of two products sharing a full-size factor)
    as ``x * (rest + rest')``, appended to ``eqns``; or False if it is not one."""
    if eqn.params or len(eqn.inputs) != 2 or len(eqn.outvars) != 1:
        return False
    dtype, shape = eqn.outvars[0].aval.dtype, eqn.outvars[0].aval.shape
    if not is_inexact(dtype):
        return False
    p, q = eqn.inputs
    mul = getattr(producer.get(p), "primitive", None)
    if mul is None or eqn.primitive not in mul.distributes_over or \
            getattr(producer.get(q), "primitive", None) is not mul or p is q:
        return False
    tp, tq = (_product_terms(v, mul, producer, uses, dtype) for v in (p, q))
    if len(tp) < 2 or len(tq) < 2:          # (p or q used elsewhere, or not a product)
        return False
    common = next((t for t in tp if isinstance(t, Var) and t in tq and t.aval.shape == shape
                   and t.aval.dtype == dtype), None)
    if common is None:
        return False
    tp.remove(common)
    tq.remove(common)
    rest_p, rest_q = _multiply(tp, mul, dtype, eqns), _multiply(tq, mul, dtype, eqns)
    combined = Var(ShapedArray(np.broadcast_shapes(rest_p.aval.shape, rest_q.aval.shape), dtype))
    eqns.append(JaxprEqn(eqn.primitive, [rest_p, rest_q], {}, [combined], eqn.source,
                         eqn.scope))
    eqns.append(JaxprEqn(mul, [common, combined], {}, eqn.outvars, eqn.source, eqn.scope))
    return True


def _has_sum_of_products(jaxpr: Jaxpr) -> bool:
    """Does some equation combine two products it distributes over (what
    ``_factored`` needs first)?  One cheap walk, to skip the pass otherwise."""
    product_of: dict = {}
    for eqn in jaxpr.eqns:
        prim = eqn.primitive
        if prim.distributes_over:
            for v in eqn.outvars:
                product_of[v] = prim
        if len(eqn.inputs) == 2 and product_of:
            mul = product_of.get(eqn.inputs[0])
            if mul is not None and product_of.get(eqn.inputs[1]) is mul and \
                    prim in mul.distributes_over:
                return True
    return False


def factor_products(jaxpr: Jaxpr) -> Jaxpr:
    """Take a common full-size factor out of a sum of two single-use products:
    ``x*a + (x*b)*c`` -> ``x*(a + b*c)``, for primitives declaring that
    multiplication ``distributes_over`` them (the products left unused go to
    dce).  The results differ from the unfactored ones by rounding only."""
    if not _has_sum_of_products(jaxpr):
        return jaxpr                        # (most programs: no walks building maps)
    uses = _use_counts(jaxpr)
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    eqns: list = []
    for eqn in jaxpr.eqns:
        if not _factored(eqn, producer, uses, eqns):
            eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _is_sum(eqn) -> bool:
    """A sum of two arrays of its result's shape and dtype (a commutative
    primitive whose unit is 0, the padding value of the pads it may join)."""
    prim, out = eqn.primitive, eqn.outvars
    return (prim.commutative and prim.unit == 0 and len(eqn.inputs) == 2 and len(out) == 1
            and not eqn.params
            and all(isinstance(a, Var) and _same_type(a.aval, out[0].aval) for a in eqn.inputs))


def _inner_sum(a, eqn, producer, uses):
    """The equation of the sum ``eqn``'s input ``a`` when it is a sum of the
    same primitive used only there (its terms are ``eqn``'s), else None."""
    inner = producer.get(a)
    if inner is not None and inner.primitive is eqn.primitive and uses.get(a) == 1 and \
            _is_sum(inner):
        return inner
    return None


def _sum_terms(eqn, producer, uses) -> list:
    """The terms of the sum ``eqn``, through the single-use sums of the same
    primitive that feed it."""
    terms = []
    for a in eqn.inputs:
        inner = _inner_sum(a, eqn, producer, uses)
        terms += [a] if inner is None else _sum_terms(inner, producer, uses)
    return terms


def _pad_region(v, producer, uses):
    """``(axis, low, pad equation)`` when ``v`` is a single-use ``pad`` with
    zeros along one axis only (no interior or negative amounts), the slice it
    writes starting at ``low``; else None."""
    eqn = producer.get(v)
    if eqn is None or eqn.primitive is not array_ops.pad_p or uses.get(v) != 1 or \
            not _is_literal(eqn.inputs[1], 0):
        return None
    config = eqn.params["padding_config"]
    padded = [d for d, (lo, hi, it) in enumerate(config) if lo or hi or it]
    if len(padded) != 1 or any(lo < 0 or hi < 0 or it for lo, hi, it in config):
        return None
    return padded[0], config[padded[0]][0], eqn


def _joined_parts(aval, axis, pads, eqns) -> list:
    """The operands of ``pads`` (sorted by where they start) in order along
    ``axis``, with arrays of zeros for the gaps between them."""
    parts, at = [], 0
    # the padding value (a literal 0); +0.0 if any pad has it, as their sum has
    values = [pad.inputs[1] for _, pad in pads]
    zero = next((z for z in values if np.copysign(1.0, complex(z.val).real) > 0), values[0])

    def zeros(size):
        out = Var(ShapedArray(aval.shape[:axis] + (size,) + aval.shape[axis + 1:], aval.dtype))
        eqns.append(JaxprEqn(array_ops.broadcast_in_dim_p, [zero],
                             dict(shape=out.aval.shape, broadcast_dimensions=()), [out]))
        return out
    for low, pad in pads:
        if low > at:
            parts.append(zeros(low - at))
        parts.append(pad.inputs[0])
        at = low + pad.inputs[0].aval.shape[axis]
    if at < aval.shape[axis]:
        parts.append(zeros(aval.shape[axis] - at))
    return parts


def _concatenated(eqn, producer, uses, eqns) -> bool:
    """The sum ``eqn`` with its zero-padded terms that write disjoint slices
    along one axis replaced by one ``concatenate`` of their operands, appended
    to ``eqns``; False if there are not two such terms."""
    aval = eqn.outvars[0].aval
    terms = _sum_terms(eqn, producer, uses)
    by_axis: dict = {}
    for t in terms:
        region = _pad_region(t, producer, uses)
        if region is not None:
            by_axis.setdefault(region[0], []).append((region[1], region[2], t))
    if not by_axis:
        return False
    axis, candidates = max(by_axis.items(), key=lambda kv: len(kv[1]))
    pads, end = [], 0             # (those overlapping an earlier one stay terms)
    for low, pad, t in sorted(candidates, key=lambda c: c[0]):
        if low >= end:
            pads.append((low, pad, t))
            end = low + pad.inputs[0].aval.shape[axis]
    if len(pads) < 2:
        return False
    parts = _joined_parts(aval, axis, [(low, pad) for low, pad, _ in pads], eqns)
    rest = [t for t in terms if all(t is not p for _, _, p in pads)]
    joined = Var(aval) if rest else eqn.outvars[0]
    eqns.append(JaxprEqn(array_ops.concatenate_p, parts, dict(dimension=axis), [joined],
                         eqn.source, eqn.scope))
    for k, t in enumerate(rest):
        out = eqn.outvars[0] if k == len(rest) - 1 else Var(aval)
        eqns.append(JaxprEqn(eqn.primitive, [joined, t], {}, [out], eqn.source, eqn.scope))
        joined = out
    return True


def concatenate_pads(jaxpr: Jaxpr) -> Jaxpr:
    """A sum of zero-padded arrays that fill disjoint slices along one axis
    becomes one ``concatenate`` of the arrays: the cotangent of an array split
    by slicing (``q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]`` under ``grad``),
    which was a zero buffer per slice and a full-size addition per term.  A
    sum is rewritten at the last addition of a chain of single-use ones (the
    ones it absorbs, and the pads, go to dce).  A ``-0.0`` in a slice stays
    ``-0.0`` (``-0.0 + 0.0`` is ``+0.0``), as with ``simplify``'s ``x + 0``."""
    uses = _use_counts(jaxpr)
    producer = {v: e for e in jaxpr.eqns for v in e.outvars}
    inner = {a for e in jaxpr.eqns if _is_sum(e) for a in e.inputs
             if _inner_sum(a, e, producer, uses) is not None}
    eqns: list = []
    for eqn in jaxpr.eqns:
        if not (_is_sum(eqn) and eqn.outvars[0] not in inner
                and _concatenated(eqn, producer, uses, eqns)):
            eqns.append(eqn)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def dce(jaxpr: Jaxpr) -> Jaxpr:
    return dce_jaxpr(jaxpr)[0]


def inline_calls(closed: ClosedJaxpr, which=None) -> ClosedJaxpr:
    """Splice the jaxprs of inlinable call primitives (nested jit) into ``closed``;
    ``which(primitive)``, if given, further restricts the primitives spliced."""
    which = which or (lambda prim: True)
    if not any(e.primitive.inline and which(e.primitive) for e in closed.jaxpr.eqns):
        return closed                       # nothing to splice (most programs)
    constvars, consts = list(closed.jaxpr.constvars), list(closed.consts)
    eqns: list[JaxprEqn] = []

    def splice(jaxpr: Jaxpr, env: dict, fresh: bool):
        # A jaxpr called twice is spliced twice: its variables get fresh copies
        # each time (``fresh``), or the two calls' outputs would be one variable.
        read = lambda a: env.get(a, a) if isinstance(a, Var) else a
        for eqn in jaxpr.eqns:
            sub = eqn.params.get("jaxpr")
            inputs = [read(a) for a in eqn.inputs]
            if eqn.primitive.inline and isinstance(sub, ClosedJaxpr) and which(eqn.primitive):
                inner_env = dict(zip(sub.jaxpr.invars, inputs))
                for v, c in zip(sub.jaxpr.constvars, sub.consts):
                    inner_env[v] = Var(v.aval)
                    constvars.append(inner_env[v])
                    consts.append(c)
                outs = splice(sub.jaxpr, inner_env, fresh=True)
                env.update(zip(eqn.outvars, outs))
            else:
                outvars = eqn.outvars
                if fresh:
                    outvars = [Var(v.aval) for v in eqn.outvars]
                    env.update(zip(eqn.outvars, outvars))
                eqns.append(JaxprEqn(eqn.primitive, inputs, eqn.params, outvars, eqn.source,
                                     eqn.scope))
        return [read(v) for v in jaxpr.outvars]
    outvars = splice(closed.jaxpr, {}, fresh=False)
    return ClosedJaxpr(Jaxpr(constvars, closed.jaxpr.invars, eqns, outvars), consts)


def optimize(closed: ClosedJaxpr, _memo: dict | None = None) -> ClosedJaxpr:
    """All passes, in order, here and in every sub-jaxpr; returns a new
    ClosedJaxpr (constants may be added).  ``closed`` is never mutated: jaxprs
    are cached and shared."""
    memo = {} if _memo is None else _memo
    # which passes can fire at all is decided once, from the primitives present
    # (long straight-line programs: most walks would find nothing to do)
    prims = {eqn.primitive for eqn in closed.jaxpr.eqns}
    flat = closed
    if any(p.inline and not p.remat for p in prims):
        # remat calls stay whole through CSE (spliced afterwards, if inlinable)
        flat = inline_calls(closed, which=lambda prim: not prim.remat)
        prims = {eqn.primitive for eqn in flat.jaxpr.eqns}
    jaxpr = _optimize_sub_jaxprs(flat.jaxpr, memo)
    sums_possible = any(p.distributes_over and not prims.isdisjoint(p.distributes_over)
                        for p in prims)
    jaxpr, has_sums = _rewrite_walk(jaxpr, fold=True, simplify=True, merge=True,
                                    find_sums=sums_possible)
    if has_sums:
        jaxpr = factor_products(jaxpr)
    if array_ops.dot_general_p in prims:
        jaxpr = fold_transposes(jaxpr)
    if array_ops.pad_p in prims:
        jaxpr = concatenate_pads(jaxpr)
    spliced = ClosedJaxpr(jaxpr, flat.consts)
    if any(p.inline and p.remat for p in prims):
        spliced = inline_calls(spliced, which=lambda prim: prim.remat)
    return ClosedJaxpr(dce(spliced.jaxpr), spliced.consts)


def _optimize_sub_jaxprs(jaxpr: Jaxpr, memo: dict) -> Jaxpr:
    """``jaxpr`` with the sub-jaxprs in its equations' params optimised (new
    equations where something changed; the old ones are left as they were)."""
    eqns = None         # (a copy of the list once something changed)
    for i, eqn in enumerate(jaxpr.eqns):
        if not eqn.params:
            continue
        changed = {}
        for name, value in eqn.params.items():
            if isinstance(value, ClosedJaxpr):
                changed[name] = _optimize_sub(value, memo)
            elif isinstance(value, tuple) and value and \
                    all(isinstance(v, ClosedJaxpr) for v in value):
                changed[name] = tuple(_optimize_sub(v, memo) for v in value)
        if changed:
            if eqns is None:
                eqns = list(jaxpr.eqns)
            eqns[i] = JaxprEqn(eqn.primitive, eqn.inputs, {**eqn.params, **changed},
                               eqn.outvars, eqn.source, eqn.scope)
    if eqns is None:
        return jaxpr
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars)


def _optimize_sub(sub: ClosedJaxpr, memo: dict) -> ClosedJaxpr:
    """The optimised ``sub``, once per sub-jaxpr object (identical bodies stay
    identical objects, so CSE can still merge equal control-flow equations)."""
    hit = memo.get(id(sub))
    if hit is None:
        # (``sub`` is kept in the entry so that its id is not reused meanwhile)
        hit = memo[id(sub)] = (sub, optimize(sub, memo))
    return hit[1]
