"""Cases for the primitives of fungrad/lax/special_functions.py and the
compositions of fungrad/scipy/_special_more.py (erfcx, exponential integrals,
Dawson, sine/cosine and Fresnel integrals, Spence, Owen's T, hypergeometric
functions, Bessel J tables, Faddeeva, spherical harmonics, comb, Box-Cox,
loggamma). References: scipy.special (a test dependency).

Arguments without a derivative in JAX (expn's order, hyp1f1/hyp2f1's
parameters) are ``diff=False``.
"""
import numpy as np
import scipy.special as sc

import fungrad.scipy.special as fsp
from fungrad.lax import special_functions as sf
from tests.harness import Arg, Case

N_DEGREES = np.array([0, 1, 2, 3])
M_ORDERS = np.array([0, -1, 2, 1])


def _jn_table(z, v=3):
    return np.stack([sc.jv(n, z) for n in range(v + 1)])


CASES = [
    Case("sf.erfcx", fsp.erfcx, sc.erfcx, [Arg(low=-3.0, high=6.0)], prims=("erfcx",),
         rtol=1e-13),
    Case("sf.exp1", fsp.exp1, sc.exp1, [Arg(low=0.05, high=6.0)], prims=("expn",),
         rtol=1e-13),
    Case("sf.expn", lambda n, x: fsp.expn(n, x), sc.expn,
         [Arg(low=0, high=4, dtype="int64", diff=False), Arg("bcast", low=0.05, high=5.0)],
         prims=("expn",), rtol=1e-13, np_fun=False),   # an integer order: no NumPy twin
    Case("sf.expi", fsp.expi, sc.expi, [Arg(low=-5.0, high=8.0, avoid=(0.0, 0.3725))],
         prims=("expi",), rtol=1e-12, atol=1e-14),
    Case("sf.dawsn", fsp.dawsn, sc.dawsn, [Arg(low=-9.0, high=9.0)], prims=("dawsn",),
         rtol=1e-13),
    Case("sf.sici_si", lambda x: fsp.sici(x)[0], lambda x: sc.sici(x)[0],
         [Arg(low=-8.0, high=8.0)], prims=("sici_si",), rtol=1e-13, atol=1e-15),
    Case("sf.sici_ci", lambda x: fsp.sici(x)[1], lambda x: sc.sici(x)[1],
         [Arg(low=0.2, high=8.0)], prims=("sici_ci",), rtol=1e-12, atol=1e-14),
    Case("sf.fresnel_s", lambda x: fsp.fresnel(x)[0], lambda x: sc.fresnel(x)[0],
         [Arg(low=-3.0, high=3.0)], prims=("fresnel_s",), rtol=1e-13, atol=1e-15),
    Case("sf.fresnel_c", lambda x: fsp.fresnel(x)[1], lambda x: sc.fresnel(x)[1],
         [Arg(low=-3.0, high=3.0)], prims=("fresnel_c",), rtol=1e-13, atol=1e-15),
    Case("sf.spence", fsp.spence, sc.spence, [Arg(low=0.05, high=5.0)], prims=("spence",),
         rtol=1e-13, atol=1e-15),
    Case("sf.owens_t", fsp.owens_t, sc.owens_t,
         [Arg(low=-3.0, high=3.0), Arg("bcast", low=-3.0, high=3.0)], prims=("owens_t",),
         rtol=1e-12, atol=1e-15),
    Case("sf.hyp1f1", fsp.hyp1f1, sc.hyp1f1,
         [Arg(low=0.2, high=3.0, diff=False), Arg("bcast", low=0.5, high=4.0, diff=False),
          Arg("bcast", low=-4.0, high=4.0)], prims=("hyp1f1",), rtol=1e-12),
    Case("sf.hyp2f1", fsp.hyp2f1, sc.hyp2f1,
         [Arg(low=0.2, high=2.0, diff=False), Arg("bcast", low=0.2, high=2.0, diff=False),
          Arg("bcast", low=1.0, high=4.0, diff=False), Arg("bcast", low=-2.0, high=0.6)],
         prims=("hyp2f1",), rtol=1e-12),
    Case("sf.bessel_jn", lambda z: fsp.bessel_jn(z, v=3), _jn_table,
         [Arg(low=-10.0, high=10.0)], prims=("bessel_jn",), rtol=1e-12, atol=1e-14),
    Case("sf.wofz", fsp.wofz, sc.wofz,
         [Arg(dtype="complex128", low=-4.0, high=4.0, imag=(-1.5, 4.0))], prims=("wofz",),
         rtol=1e-13, atol=1e-15),
    Case("sf.sph_harm_y", lambda theta, phi: fsp.sph_harm_y(N_DEGREES, M_ORDERS, theta, phi),
         lambda theta, phi: sc.sph_harm_y(N_DEGREES, M_ORDERS, theta, phi),
         [Arg((4,), low=0.1, high=3.0), Arg((4,), low=0.0, high=6.2)], rtol=1e-12,
         atol=1e-14, np_fun=False),   # integer degree arrays closed over: no NumPy twin
    Case("sf.comb", fsp.comb, sc.comb, [Arg(low=3.0, high=9.0), Arg("bcast", low=0.2, high=2.8)],
         rtol=1e-12),
    Case("sf.boxcox", fsp.boxcox, sc.boxcox,
         [Arg(low=0.2, high=5.0), Arg("bcast", low=-2.0, high=2.0)], rtol=1e-13),
    Case("sf.boxcox1p", fsp.boxcox1p, sc.boxcox1p,
         [Arg(low=-0.8, high=5.0), Arg("bcast", low=-2.0, high=2.0)], rtol=1e-13),
    Case("sf.loggamma", fsp.loggamma, sc.loggamma, [Arg(low=0.1, high=20.0)], rtol=1e-13),
]

# the lax-level primitives directly (float32 too: computed in float64, rounded back)
CASES += [
    Case("sf.lax_erfcx_f32", sf.erfcx, lambda x: sc.erfcx(x).astype(np.float32),
         [Arg(dtype="float32", low=-2.0, high=4.0)], prims=("erfcx",), rtol=1e-6,
         grad_order=1),
]
