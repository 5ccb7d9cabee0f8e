"""The NumPy computation of windowed reductions (NumPy-only module).

Shared by the impls of ``reduce_window_{sum,max,min}`` and
``window_select_index``, their ``jit`` lowerings and ``fungrad.export``
(which copies this module's source into exported code), so it imports
nothing but NumPy.

Per dimension the operand is dilated (``base_dilation - 1`` holes between
elements), padded by ``(lo, hi)`` (negative values crop), holes and padding
holding the monoid's identity (0, -inf / +inf, the integer extremes); then a
window of ``window_dimensions`` taps, ``window_dilation`` apart, slides over
it with stride ``window_strides``::

    out[y] = reduce_{k} padded[y * stride + k * window_dilation]

``select_index`` gives, for every output position, the row-major position
``k`` inside the window of the *first* maximum (or minimum) of the window,
as XLA's select-and-scatter picks it (``ge`` / ``le`` keeps the earlier one).
``gather_taps`` reads an operand-shaped array at those positions (the
tangent of a max-pool) and ``scatter_add_taps``, its transpose, adds an
output-shaped array into them (the max-pool gradient: XLA's
select_and_scatter_add).  Both loop over the window's taps (a handful), each
step one vectorised pass over a strided slice: no index arithmetic over the
whole tensor and no ``np.add.at``.
"""
import numpy as np

__all__ = ["reduce_window", "select_index", "gather_taps", "scatter_add_taps",
           "window_output_shape", "identity"]

_UFUNCS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _dilated(size, dilation):
    return 0 if size == 0 else (size - 1) * dilation + 1


def window_output_shape(shape, window_dimensions, window_strides, padding,
                        base_dilation, window_dilation):
    """Output shape (0 where the dilated window does not fit the padded operand)."""
    out = []
    for n, k, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides,
                                         padding, base_dilation, window_dilation):
        padded = _dilated(n, bd) + lo + hi
        kd = _dilated(k, wd)
        out.append((padded - kd) // s + 1 if padded >= kd else 0)
    return tuple(out)


def identity(kind, dtype):
    """The identity of the monoid ``kind`` for ``dtype``."""
    dtype = np.dtype(dtype)
    if kind == "sum":
        return dtype.type(0)
    if dtype == np.bool_:
        return np.bool_(kind == "min")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if kind == "max" else info.max)
    return dtype.type(-np.inf if kind == "max" else np.inf)


def _dilate_and_pad(x, padding, base_dilation, fill):
    """``x`` with holes and padding (negative amounts crop), filled with ``fill``
    (``x`` itself when there are neither)."""
    if all(p == (0, 0) for p in padding) and all(d == 1 for d in base_dilation):
        return x
    grown = tuple(_dilated(n, d) + max(lo, 0) + max(hi, 0)
                  for n, (lo, hi), d in zip(x.shape, padding, base_dilation))
    out = np.full(grown, fill, dtype=x.dtype)
    place = tuple(slice(max(lo, 0), max(lo, 0) + _dilated(n, d), d)
                  for n, (lo, hi), d in zip(x.shape, padding, base_dilation))
    out[place] = x
    crop = tuple(slice(max(-lo, 0), g - max(-hi, 0)) for g, (lo, hi) in zip(grown, padding))
    return out[crop]


def _windows(x, kind, window_dimensions, window_strides, padding, base_dilation,
             window_dilation):
    """View ``(*out_shape, *window_dimensions)`` of the windows (no copy of the
    padded operand), or None when the output is empty."""
    out_shape = window_output_shape(x.shape, window_dimensions, window_strides, padding,
                                    base_dilation, window_dilation)
    if 0 in out_shape or 0 in window_dimensions:
        return None, out_shape
    xp = _dilate_and_pad(x, padding, base_dilation, identity(kind, x.dtype))
    kd = tuple(_dilated(k, d) for k, d in zip(window_dimensions, window_dilation))
    nd = x.ndim
    win = np.lib.stride_tricks.sliding_window_view(xp, kd, axis=tuple(range(nd)))
    win = win[tuple(slice(0, m * s, s) for m, s in zip(out_shape, window_strides))
              + tuple(slice(None, None, d) for d in window_dilation)]
    return win, out_shape


def reduce_window(operand, *, kind, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation):
    """Windowed sum / max / min (``kind``) with all parameters canonical."""
    x = np.asarray(operand)
    win, out_shape = _windows(x, kind, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation)
    if win is None:
        return np.full(out_shape, identity(kind, x.dtype), dtype=x.dtype)
    taps = _tap_views(win, window_dimensions)
    if len(taps) <= _FEW_TAPS:      # tap by tap: ~10x faster than a multi-axis reduce
        acc = taps[0].copy()
        for t in taps[1:]:
            _UFUNCS[kind](acc, t, out=acc)
        return acc
    axes = tuple(range(x.ndim, 2 * x.ndim))
    return _UFUNCS[kind].reduce(win, axis=axes, dtype=x.dtype)


def _tap_views(win, window_dimensions):
    """Output-shaped views of a window view, one per tap (row-major)."""
    return [win[(Ellipsis,) + tap] for tap in np.ndindex(*window_dimensions)]


def select_index(operand, *extremum, kind, window_dimensions, window_strides, padding,
                 base_dilation, window_dilation):
    """Row-major position inside each window of its first max (``kind='max'``)
    or min (``'min'``); int64 of the output shape.  ``extremum``, optional:
    the windows' max/min (``reduce_window``'s result, which a max-pool's JVP
    has already computed), not computed again."""
    x = np.asarray(operand)
    win, out_shape = _windows(x, kind, window_dimensions, window_strides, padding,
                              base_dilation, window_dilation)
    if win is None:
        return np.zeros(out_shape, np.int64)
    taps = _tap_views(win, window_dimensions)
    if len(taps) <= _FEW_TAPS:
        if extremum:
            best = np.asarray(extremum[0])
        else:
            best = taps[0].copy()
            for t in taps[1:]:
                _UFUNCS[kind](best, t, out=best)
        if best.dtype.kind not in "fc" or not np.isnan(best).any():
            # the last write wins: from the last tap back to the first, in
            # uint8 arithmetic (index > number here; a masked copyto is ~10x slower)
            index = np.full(out_shape, len(taps) - 1, np.uint8)
            for number in range(len(taps) - 2, -1, -1):
                hit = (taps[number] == best).view(np.uint8)
                index -= (index - np.uint8(number)) * hit
            return index.astype(np.int64)
    # many taps, or NaN (argmax/argmin take the first NaN, as XLA's comparison)
    flat = win.reshape(out_shape + (-1,))
    pick = np.argmax if kind == "max" else np.argmin
    return pick(flat, axis=-1).astype(np.int64)


# up to this many taps windows are reduced tap by tap, one vectorised ufunc
# call per tap over output-shaped strided views, and a window's first extremum
# is found likewise (compare with the extremum, last hit wins): faster than a
# reduce over the window axes of the 2n-d view, or argmax over a copied
# (windows, taps) array, whose per-window loops are short
_FEW_TAPS = 16


def _tap_slices(out_shape, window_dimensions, window_strides, window_dilation):
    """(row-major tap number, slice of the padded operand holding that tap of
    every window) for each tap of the window."""
    for flat, tap in enumerate(np.ndindex(*window_dimensions)):
        yield flat, tuple(slice(k * wd, k * wd + (m - 1) * s + 1, s)
                          for k, wd, m, s in zip(tap, window_dilation, out_shape,
                                                 window_strides))


def _windows_disjoint(out_shape, window_dimensions, window_strides, window_dilation):
    """True when no padded element belongs to two (window, tap) pairs."""
    return all(k == 1 or m == 1 or s >= _dilated(k, wd) for k, s, wd, m in
               zip(window_dimensions, window_strides, window_dilation, out_shape))


def gather_taps(tangent, index, *, window_dimensions, window_strides, padding,
                base_dilation, window_dilation):
    """``out[y] = padded_tangent[y * stride + tap(index[y]) * window_dilation]``:
    ``tangent`` (operand-shaped, padded with 0) read at window position ``index``
    (row-major, from ``select_index``) of every window; output-shaped."""
    t = np.asarray(tangent)
    index = np.asarray(index)
    out = np.zeros(index.shape, t.dtype)
    if out.size == 0:
        return out
    tp = _dilate_and_pad(t, padding, base_dilation, t.dtype.type(0))
    for flat, taps in _tap_slices(index.shape, window_dimensions, window_strides,
                                  window_dilation):
        np.copyto(out, tp[taps], where=index == flat)
    return out


def _unpad(padded, operand_shape, padding, base_dilation):
    """The operand-shaped part of a padded, dilated array (zeros where cropped)."""
    if all(p == (0, 0) for p in padding) and all(d == 1 for d in base_dilation):
        return padded
    out = np.zeros(operand_shape, padded.dtype)
    src, dst = [], []
    for n, (lo, _), d, size in zip(operand_shape, padding, base_dilation, padded.shape):
        first = max(0, -(lo // d) if lo < 0 else 0)           # first i with i*d + lo >= 0
        stop = min(n, (size - 1 - lo) // d + 1) if size > lo else 0
        stop = max(stop, first)
        dst.append(slice(first, stop))
        src.append(slice(first * d + lo, first * d + lo + (stop - first - 1) * d + 1, d)
                   if stop > first else slice(0, 0))
    out[tuple(dst)] = padded[tuple(src)]
    return out


def _windows_tile(out_shape, padded_shape, window_dimensions, window_strides,
                  window_dilation):
    """True when the windows cover the padded operand exactly once (a max-pool
    whose stride is its window): every element is written by one tap."""
    return all(wd == 1 and s == k and m * s == n for m, n, k, s, wd in
               zip(out_shape, padded_shape, window_dimensions, window_strides,
                   window_dilation))


def scatter_add_taps(cotangent, index, *, operand_shape, window_dimensions, window_strides,
                     padding, base_dilation, window_dilation):
    """The transpose of ``gather_taps``: each ``cotangent[y]`` added at window
    position ``index[y]`` of window ``y``; operand-shaped (``operand_shape``)."""
    ct = np.asarray(cotangent)
    index = np.asarray(index)
    padded_shape = tuple(max(_dilated(n, d) + lo + hi, 0) for n, (lo, hi), d in
                         zip(operand_shape, padding, base_dilation))
    disjoint = _windows_disjoint(index.shape, window_dimensions, window_strides,
                                 window_dilation)
    # tiling windows write every element below (no zero-filling pass first)
    tiles = ct.size and disjoint and _windows_tile(index.shape, padded_shape,
                                                   window_dimensions, window_strides,
                                                   window_dilation)
    gp = (np.empty if tiles else np.zeros)(padded_shape, ct.dtype)
    if ct.size:
        # ct * mask would turn inf/nan into nan at the taps not chosen
        finite = ct.dtype.kind not in "fc" or bool(np.isfinite(ct).all())
        for flat, taps in _tap_slices(index.shape, window_dimensions, window_strides,
                                      window_dilation):
            if disjoint and finite:   # every padded element is written by one tap at most
                np.multiply(ct, index == flat, out=gp[taps])
            elif disjoint:
                gp[taps] = np.where(index == flat, ct, ct.dtype.type(0))
            else:
                gp[taps] += np.where(index == flat, ct, ct.dtype.type(0))
    return _unpad(gp, tuple(operand_shape), padding, base_dilation)
