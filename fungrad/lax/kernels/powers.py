"""``lax.integer_pow`` as multiplications (NumPy only).

``np.power(x, 3)`` on a float array calls the C library's ``pow`` per element
(about 60 ns each here: 17 ms for the 262,144 elements of a transformer
block's GELU, ten times a multiply pass), while JAX (XLA) computes
``integer_pow`` by repeated squaring.  This kernel multiplies in that order
(``x ** 3 = x * (x * x)``, ``x ** 5 = x * ((x * x) * (x * x))``; a negative
power the reciprocal of the positive one), so results match JAX's rounding
and each step is one pass over the data, written into buffers the kernel
owns (never into ``x``).
"""
from __future__ import annotations

import numpy as np

__all__ = ["integer_pow"]


def integer_pow(x, *, y):
    """``x ** y`` for a Python int ``y``, in ``x``'s dtype, by repeated squaring."""
    x = np.asarray(x)
    if x.ndim == 0:                      # NumPy's scalar results take no out=
        return integer_pow(x.reshape(1), y=y).reshape(())
    if y == 0:
        return np.ones_like(x)
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        # half precision: squares under/overflow where NumPy's power (computed
        # in float32) does not
        return np.power(x, y)
    n = -y if y < 0 else y
    acc, acc_owned = None, False         # the product of the squares taken so far
    square, square_owned = x, False      # x ** (2 ** k); owned: a buffer of this call
    while True:
        if n & 1:
            if acc is None:
                acc = square             # shares square's buffer (or is x) for now
                acc_owned = False
            else:
                # acc is owned once it has been multiplied; square's buffer is
                # free when no later squaring needs it
                out = acc if acc_owned and acc is not square else \
                    square if square_owned and n == 1 else None
                acc = np.multiply(acc, square, out=out)
                acc_owned = True
        n >>= 1
        if not n:
            break
        in_place = square_owned and acc is not square
        square = np.multiply(square, square, out=square if in_place else None)
        square_owned = True
    if acc is x:
        acc = x.copy()                   # a result never aliases its input
    if y < 0:
        np.true_divide(1, acc, out=acc)
    return acc
