"""NumPy-only kernels: the computations of primitives that take several NumPy
steps (special functions, decompositions, convolutions, windowed reductions,
eig).

Each module imports nothing but NumPy, the standard library and its sibling
kernels, so that it serves three uses with one definition: the primitive's
impl calls the kernel function, ``jit``'s generated code calls the same
function by name, and ``fungrad.export`` copies the module's source into an
exported module that needs only NumPy.  One calling convention: a kernel
function takes the primitive's operands positionally and its params as
keywords, and returns what the impl returns (a tuple for several results).
"""
