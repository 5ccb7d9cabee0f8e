"""Compute the rational approximations of erf_inv in fungrad/lax/kernels/special.py.

    python tools/fit_erf_inv.py      # prints the coefficients (needs mpmath)

Two near-minimax fits of the *relative* error, in 60-digit arithmetic:

* centre, |x| <= 0.85:  erf_inv(x) = x P(r) / Q(r) with r = 0.85**2 - x**2,
  degrees 7/7 (relative error 7e-17);
* tails, |x| > 0.85:  erf_inv(x) = sign(x) P(v) / Q(v) with
  v = sqrt(-log(1 - |x|)) - sqrt(-log(0.15)), degrees 8/7 (4e-17), over
  1 - |x| down to 2**-53 (the smallest gap to 1 a float64 can have).

The variables are chosen so that r, v >= 0 and every coefficient comes out
positive: Horner's rule then adds positive terms only and loses nothing to
cancellation. Both polynomials are divided by Q's leading coefficient (Q
monic saves a multiplication). The fit is a linearised least-squares problem (Sanathanan-Koerner
iteration: the denominator of the previous step divides the residuals) with
Lawson's reweighting, which drives the error towards equioscillation.
"""
import mpmath as mp

mp.mp.dps = 60
EDGE = mp.mpf("0.85")


def chebyshev_nodes(a, b, n):
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (2 * k + 1) / (2 * n)) for k in range(n)]


def fit(f, a, b, m, n, points=200, iterations=60):
    """Coefficients (lowest first) of P (degree m) and Q (degree n, Q(0) = 1)
    with P/Q ~ f on [a, b] in relative error, and that error."""
    xs = chebyshev_nodes(mp.mpf(a), mp.mpf(b), points) + [mp.mpf(a), mp.mpf(b)]
    fs = [f(x) for x in xs]
    weights = [mp.mpf(1)] * len(xs)
    previous_q = [mp.mpf(1)] * len(xs)
    best = None
    for iteration in range(iterations):
        rows, rhs = [], []
        for x, fx, w, q in zip(xs, fs, weights, previous_q):
            s = mp.sqrt(w) / (fx * q)
            rows.append([s * x**j for j in range(m + 1)] + [-s * fx * x**j for j in range(1, n + 1)])
            rhs.append(s * fx)
        solution, _ = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))
        p = [solution[j] for j in range(m + 1)]
        q = [mp.mpf(1)] + [solution[m + j] for j in range(1, n + 1)]
        previous_q = [mp.polyval(q[::-1], x) for x in xs]
        errors = [abs(mp.polyval(p[::-1], x) / qx / fx - 1) for x, fx, qx in zip(xs, fs, previous_q)]
        if best is None or max(errors) < best[2]:
            best = (p, q, max(errors))
        if iteration >= 5:
            total = sum(w * e for w, e in zip(weights, errors))
            weights = [w * e / total for w, e in zip(weights, errors)]
    return best


def central(r):
    t = EDGE**2 - r
    return mp.erfinv(mp.sqrt(t)) / mp.sqrt(t) if t > 0 else mp.sqrt(mp.pi) / 2


TAIL_START = mp.sqrt(-mp.log(1 - EDGE))
TAIL_END = mp.sqrt(53 * mp.log(2)) + mp.mpf("0.01")


def tail(v):
    return mp.erfinv(1 - mp.exp(-(v + TAIL_START) ** 2))


if __name__ == "__main__":
    for name, f, end, m, n in (("CENTRAL", central, EDGE**2, 7, 7),
                               ("TAIL", tail, TAIL_END - TAIL_START, 8, 7)):
        p, q, error = fit(f, 0, end, m, n)
        p, q = [c / q[-1] for c in p], [c / q[-1] for c in q]
        print(f"# {name}: relative error {mp.nstr(error, 3)}")
        print(f"_{name}_P = ({', '.join(mp.nstr(c, 17) for c in p)})")
        print(f"_{name}_Q = ({', '.join(mp.nstr(c, 17) for c in q)})")
    print(f"_TAIL_START = {mp.nstr(TAIL_START, 17)}")
