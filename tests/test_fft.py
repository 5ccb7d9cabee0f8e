"""fungrad.lax.fft and fungrad.numpy.fft: values against numpy.fft (every
function, norm modes, n/s padding and cropping, axes, dtypes), the transpose
identity of every fft_type at odd and even lengths, gradients of real losses
through complex spectra, jit, vmap and the errors on bad input."""
import warnings

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
import fungrad.numpy.fft as fnp_fft
from fungrad.lax.fft import fft as lax_fft, FftType
from fungrad.test_util import check_grads

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5))
Z = X + 1j * RNG.standard_normal(X.shape)
NORMS = [None, "backward", "ortho", "forward"]


def assert_same(got, want, rtol=1e-10, atol=1e-12):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def rand(shape, complex_=False, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if complex_ else x


# ----------------------------------------------------------------------------
# Values against numpy.fft
# ----------------------------------------------------------------------------

ONE_D = [("fft", Z), ("ifft", Z), ("rfft", X), ("irfft", Z), ("hfft", Z), ("ihfft", X),
         ("fft", X), ("irfft", X)]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,a", ONE_D, ids=[f"{n}-{a.dtype}" for n, a in ONE_D])
def test_one_dimensional(name, a, norm):
    for n in (None, 1, 2, 3, 4, 7, 8):        # crop and zero-pad, odd and even
        for axis in (-1, 0, 1):
            assert_same(getattr(fnp_fft, name)(a, n, axis, norm),
                        getattr(np.fft, name)(a, n, axis, norm))


N_D = [(None, None), (None, (0, 2)), ((2, 9), (2, 0)), ((4, 4, 4), (0, 1, 2)),
       (None, (-1,)), ((5,), (0,)), (None, (1, 1)), ((3, 5), (0, 0)), ((-1, 3), (1, 2))]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,axes", N_D, ids=[f"{s}-{a}" for s, a in N_D])
def test_n_dimensional(s, axes, norm):
    for name, a in (("fftn", Z), ("ifftn", Z), ("rfftn", X), ("irfftn", Z)):
        assert_same(getattr(fnp_fft, name)(a, s, axes, norm),
                    getattr(np.fft, name)(a, s, axes, norm))


@pytest.mark.parametrize("norm", NORMS)
def test_two_dimensional(norm):
    for s, axes in ((None, (-2, -1)), ((3, 6), (-2, -1)), ((2, 2), (0, 2)), (None, (2, 0))):
        for name, a in (("fft2", Z), ("ifft2", Z), ("rfft2", X), ("irfft2", Z)):
            assert_same(getattr(fnp_fft, name)(a, s, axes, norm),
                        getattr(np.fft, name)(a, s, axes, norm))


def test_s_without_axes_uses_the_last_axes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # NumPy 2 deprecates this
        for name, a in (("fftn", Z), ("rfftn", X), ("irfftn", Z)):
            assert_same(getattr(fnp_fft, name)(a, (3, 6)), getattr(np.fft, name)(a, (3, 6)))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8", "float32",
                                   "float64", "complex64", "complex128"])
def test_dtypes_follow_numpy(dtype):
    a = (RNG.standard_normal((2, 6)) * 3).astype(dtype)
    tol = 1e-5 if dtype in ("float32", "complex64") else 1e-10
    names = ["fft", "ifft", "irfft", "hfft", "fft2", "ifftn", "irfftn"]
    if not dtype.startswith("complex"):
        names += ["rfft", "ihfft", "rfft2", "rfftn"]
    for name in names:
        assert_same(getattr(fnp_fft, name)(a), getattr(np.fft, name)(a), rtol=tol, atol=tol)


def test_frequencies_and_shifts():
    for n in (1, 2, 5, 8):
        for d in (1.0, 0.25):
            assert_same(fnp_fft.fftfreq(n, d), np.fft.fftfreq(n, d))
            assert_same(fnp_fft.rfftfreq(n, d), np.fft.rfftfreq(n, d))
    assert fnp_fft.fftfreq(4, dtype=np.float32).dtype == np.float32
    for axes in (None, 0, (0, 2), -1, (1,)):
        assert_same(fnp_fft.fftshift(X, axes), np.fft.fftshift(X, axes))
        assert_same(fnp_fft.ifftshift(X, axes), np.fft.ifftshift(X, axes))
    assert_same(fnp_fft.ifftshift(fnp_fft.fftshift(X)), X)


def test_lax_fft_matches_numpy_on_trailing_axes():
    assert_same(lax_fft(Z, FftType.FFT, (4, 5)), np.fft.fftn(Z, axes=(1, 2)))
    assert_same(lax_fft(Z, "ifft", (5,)), np.fft.ifft(Z))
    assert_same(lax_fft(X, FftType.RFFT, (3, 4, 5)), np.fft.rfftn(X))
    spec = np.fft.rfftn(X, axes=(1, 2))
    assert_same(lax_fft(spec, "IRFFT", (4, 5)), np.fft.irfftn(spec, (4, 5), axes=(1, 2)))
    assert_same(lax_fft(X, 0, (5,)), np.fft.fft(X))      # FftType values work too


def test_integer_input_is_promoted():
    k = np.arange(6)
    assert_same(lax_fft(k, "FFT", (6,)), np.fft.fft(k))
    assert_same(lax_fft(k, "RFFT", (6,)), np.fft.rfft(k))
    assert_same(fnp_fft.fft(k), np.fft.fft(k))
    assert_same(fnp_fft.rfft(k.astype(np.int8)), np.fft.rfft(k.astype(np.int8)))
    assert lax_fft(np.ones(4, np.float32), "FFT", (4,)).dtype == np.complex64


# ----------------------------------------------------------------------------
# Transposes: <u, T v> = <T^T u, v> with <a, b> = Re sum(a * b)
# ----------------------------------------------------------------------------

def _transpose_identity(op, v, seed):
    out = op(v)
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(out.shape)
    if np.iscomplexobj(out):
        u = u + 1j * rng.standard_normal(out.shape)
    (tu,) = fungrad.linear_transpose(op, v)(u)
    assert np.asarray(tu).dtype == v.dtype and np.shape(tu) == v.shape
    lhs = np.sum(u * np.asarray(op(v))).real
    rhs = np.sum(np.asarray(tu) * v).real
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)
    # the transpose of the transpose is the op again
    (ttu,) = fungrad.linear_transpose(lambda w: fungrad.linear_transpose(op, v)(w)[0], u)(v)
    np.testing.assert_allclose(np.asarray(ttu), np.asarray(op(v)), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fft_type", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("lengths", [(1,), (2,), (5,), (6,), (3, 4), (4, 3), (2, 3, 5)])
def test_transpose_identity(fft_type, lengths):
    shape = (2,) + lengths
    if fft_type == "IRFFT":
        shape = shape[:-1] + (lengths[-1] // 2 + 1,)
    v = rand(shape, complex_=fft_type != "RFFT", seed=len(lengths))
    _transpose_identity(lambda a: lax_fft(a, fft_type, lengths), v, seed=sum(lengths))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8])
def test_transposes_against_dense_matrices(n):
    """T^T from the dense matrix of each op (columns of T on a basis)."""
    def real_matrix(op, m_in, complex_in):
        dtype = np.complex128 if complex_in else np.float64
        basis = [(np.eye(m_in)[k] * (1j if im else 1)).astype(dtype) for k in range(m_in)
                 for im in ((0, 1) if complex_in else (0,))]
        return basis, [np.asarray(op(b)) for b in basis]
    m = n // 2 + 1
    for fft_type, m_in, cin in (("RFFT", n, False), ("IRFFT", m, True),
                                ("FFT", n, True), ("IFFT", n, True)):
        op = lambda a: lax_fft(a, fft_type, (n,))
        basis, cols = real_matrix(op, m_in, cin)
        u = rand(cols[0].shape, complex_=np.iscomplexobj(cols[0]), seed=n)
        (tu,) = fungrad.linear_transpose(op, basis[0])(u)
        for b, col in zip(basis, cols):       # <u, T b> = <T^T u, b> for each basis b
            np.testing.assert_allclose(np.sum(u * col).real,
                                       np.sum(np.asarray(tu) * b).real, atol=1e-12)


# ----------------------------------------------------------------------------
# Derivatives
# ----------------------------------------------------------------------------

def _central_difference(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


@pytest.mark.parametrize("n", [5, 6])
def test_grad_of_real_losses_vs_finite_differences(n):
    x = rand((3, n), seed=n)
    h = (0.3 + 0.7j) ** np.arange(n // 2 + 1)

    def loss(x):
        spec = fnp_fft.rfft(x)
        smooth = fnp_fft.irfft(spec * h, n)
        return fnp.sum(fnp.abs(spec[:, 1:]) ** 3) + fnp.sum(smooth ** 2 * x)

    g = fungrad.grad(loss)(x)
    np.testing.assert_allclose(g, _central_difference(loss, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fungrad.jit(fungrad.grad(loss))(x), g, rtol=1e-12, atol=1e-12)
    check_grads(loss, (x,), order=2)


@pytest.mark.parametrize("n", [4, 7])
def test_parseval_gradients(n):
    """sum |fft x|^2 = n sum x^2, and with the half-spectrum weights the same
    for rfft: both gradients are 2 n x."""
    x = rand((n,), seed=3)
    w = np.where((np.arange(n // 2 + 1) == 0) | (2 * np.arange(n // 2 + 1) == n), 1.0, 2.0)
    full = lambda x: fnp.sum(fnp.abs(fnp_fft.fft(x)) ** 2)
    half = lambda x: fnp.sum(w * fnp.abs(fnp_fft.rfft(x)) ** 2)
    np.testing.assert_allclose(fungrad.grad(full)(x), 2 * n * x, rtol=1e-10)
    np.testing.assert_allclose(fungrad.grad(half)(x), 2 * n * x, rtol=1e-10)


def test_grad_through_complex_input_follows_jax_convention():
    """For real L(z), grad = dL/dRe z - i dL/dIm z (JAX: the transpose, no conj)."""
    z = rand((5,), complex_=True, seed=4)
    loss = lambda z: fnp.sum(fnp.real(fnp_fft.fft(z)) * np.arange(5.0))
    g = np.asarray(fungrad.grad(loss)(z))
    f_re = lambda a: float(loss(a + 1j * z.imag))
    f_im = lambda b: float(loss(z.real + 1j * b))
    want = _central_difference(f_re, z.real) - 1j * _central_difference(f_im, z.imag)
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)


def test_jvp_is_the_transform_of_the_tangent():
    x, t = rand((4, 6), seed=5), rand((4, 6), seed=6)
    for fn in (fnp_fft.fft, fnp_fft.rfft, fnp_fft.ifft2, fnp_fft.irfft):
        out, t_out = fungrad.jvp(fn, (x,), (t,))
        assert_same(out, np.asarray(fn(x)))
        assert_same(t_out, np.asarray(fn(t)))


# ----------------------------------------------------------------------------
# jit, vmap, staging
# ----------------------------------------------------------------------------

def test_jit_matches_eager_and_lowers_to_numpy_fft():
    for name, a, kw in (("fft", Z, {"n": 7}), ("rfftn", X, {"axes": (0, 2)}),
                        ("irfft2", Z, {"s": (3, 6), "norm": "ortho"}), ("hfft", Z, {})):
        fn = lambda a: getattr(fnp_fft, name)(a, **kw)
        assert_same(fungrad.jit(fn)(a), getattr(np.fft, name)(a, **kw))
    src = fungrad.jit(lambda x: lax_fft(x, "RFFT", (5,))).lower(X).source()
    assert "np.fft.rfftn" in src
    jaxpr = str(fungrad.make_jaxpr(lambda x: lax_fft(x, "RFFT", (5,)))(X))
    assert "fft[fft_lengths=(5,) fft_type='RFFT']" in jaxpr


@pytest.mark.parametrize("in_axis", [0, 1, 2])
def test_vmap_matches_a_loop(in_axis):
    fns = [lambda a: fnp_fft.fft(a), lambda a: fnp_fft.rfft2(a, s=(3, 3)),
           lambda a: fnp_fft.irfft(a, axis=0), lambda a: lax_fft(a, "IFFT", (4, 5))]
    batched = np.stack([Z[0], Z[1], Z[2]], axis=in_axis)
    for fn in fns:
        a = Z if fn is not fns[1] else X
        b = batched if fn is not fns[1] else np.stack(list(X), axis=in_axis)
        got = fungrad.vmap(fn, in_axes=in_axis)(b)
        assert_same(got, np.stack([np.asarray(fn(a[i])) for i in range(3)]))


def test_vmap_of_grad_and_jit_of_vmap():
    xs = rand((3, 6), seed=7)
    loss = lambda x: fnp.sum(fnp.abs(fnp_fft.rfft(x)) ** 2 * np.arange(4.0))
    got = fungrad.jit(fungrad.vmap(fungrad.grad(loss)))(xs)
    want = np.stack([fungrad.grad(loss)(x) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ----------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------

def test_bad_fft_type():
    with pytest.raises(ValueError, match="unknown fft_type"):
        lax_fft(Z, "DCT", (5,))
    with pytest.raises(ValueError, match="unknown fft_type"):
        lax_fft(Z, 7, (5,))


def test_lengths_must_match_trailing_axes():
    with pytest.raises(ValueError, match=r"trailing axes .* \(4,\)"):
        lax_fft(Z, "FFT", (4,))
    with pytest.raises(ValueError, match="half spectrum"):
        lax_fft(Z, "IRFFT", (5,))           # needs 5 // 2 + 1 = 3 entries
    with pytest.raises(ValueError, match="fft_lengths"):
        lax_fft(Z, "FFT", (2, 3, 4, 5))     # more lengths than axes
    with pytest.raises(ValueError, match="fft_lengths"):
        lax_fft(Z, "FFT", ())


def test_dtype_errors():
    with pytest.raises(TypeError, match="RFFT takes real input"):
        lax_fft(Z, "RFFT", (5,))
    with pytest.raises(TypeError, match="takes real input"):
        fnp_fft.rfft(Z)


def test_numpy_api_errors():
    with pytest.raises(ValueError, match="Invalid norm"):
        fnp_fft.fft(X, norm="sideways")
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        fnp_fft.fft(X, n=0)
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        fnp_fft.irfft(np.ones(1))           # default n = 2 * (1 - 1) = 0
    with pytest.raises(ValueError, match="out of bounds"):
        fnp_fft.fft(X, axis=3)
    with pytest.raises(ValueError, match="different lengths"):
        fnp_fft.fftn(X, s=(2, 3), axes=(0,))
