"""``fungrad.config``: JAX's configuration options, with JAX's interface.

    fungrad.config.update("jax_enable_x64", False)   # as jax.config.update
    fungrad.config.jax_enable_x64                    # -> False
    fungrad.config.values                            # {name: value, ...}
    with fungrad.disable_jit(): ...                  # context managers (JAX's names)

Every option is also read from the environment at import, under its name in
capitals (``JAX_ENABLE_X64=0``, ``JAX_DEBUG_NANS=true``), as in JAX; boolean
variables take JAX's spellings (1/0, true/false, yes/no, on/off, y/n, t/f).

The options that mean something in fungrad:

* ``jax_enable_x64`` (default **True** here, False in JAX): False makes the
  defaults 32-bit as in JAX -- float32/int32/complex64 for Python scalars,
  creation functions without a ``dtype``, ``asarray``/``array``, random
  samplers and NumPy's int -> float promotions; a 64-bit dtype then appears
  only where you bring one (a float64 NumPy array passed to an operation
  keeps its dtype; ``fnp.asarray`` converts it, as JAX does).
* ``jax_threefry_partitionable`` (default True, as JAX): which of JAX's two
  Threefry stream layouts ``fungrad.random`` reproduces (``split``,
  ``random_bits`` and every sampler); False gives older JAX's streams.
* ``jax_disable_jit``: ``jit`` calls the Python function directly (op by op).
* ``jax_debug_nans`` / ``jax_debug_infs``: the first operation whose result
  holds a NaN / an infinity, in the forward or the backward pass, eagerly or
  inside ``jit`` (whose code then checks each equation), raises
  ``FloatingPointError`` naming the primitive, the user's line, the
  transformations and the inputs (core.py, "Source information").
* ``jax_numpy_rank_promotion``: ``"allow"``, ``"warn"`` or ``"raise"`` when a
  fungrad.numpy elementwise operation broadcasts arrays of different ranks.
* ``jax_numpy_dtype_promotion``: ``"standard"`` or ``"strict"`` (no implicit
  promotion between different strongly typed dtypes).
* ``jax_check_tracer_leaks``: only False (flax's ``nn.tabulate`` sets it so):
  fungrad does not search for leaked tracers when a transformation ends;
  using an escaped tracer raises ``UnexpectedTracerError``.
* ``jax_log_compiles``: log every trace and compilation of ``jit`` (with the
  reason) at WARNING level through the ``fungrad.jit`` logger.
* ``fungrad_jit_backend`` (environment: ``FUNGRAD_JIT_BACKEND``): the code
  ``jit`` compiles to, ``"numpy"`` (the default: readable NumPy source) or
  ``"numba"`` (the optional compiled backend, ``pip install "fungrad[numba]"``;
  see ``fungrad/interpreters/numba_backend.py``); ``jit(f, backend=...)``
  chooses per function.
* ``jax_default_matmul_precision``, ``jax_platforms``, ``jax_platform_name``,
  ``jax_default_device``: accepted for compatibility (NumPy computes at full
  precision on the CPU; the platform must be ``"cpu"``).

A context manager sets an option for the whole process while it is active
(JAX's are thread-local; fungrad's hot paths read one process-wide value)
and restores the previous value on exit.  Options that change what tracing
produces (x64, promotion) clear the ``jit`` caches when they change.
"""
from __future__ import annotations

import difflib
import functools
import os
import threading
from typing import Any, Callable

__all__ = ["config", "Config", "Option"]

_NO_VALUE = object()
_lock = threading.RLock()


def _parse_bool(name: str, value):
    if isinstance(value, bool) or (type(value).__name__ == "bool_"):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"config option {name} takes a bool (True or False), got "
                     f"{value!r} of type {type(value).__name__}")


_TRUE_WORDS = ("y", "yes", "t", "true", "on", "1")
_FALSE_WORDS = ("n", "no", "f", "false", "off", "0")


def _bool_from_env(name: str, text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE_WORDS:
        return True
    if word in _FALSE_WORDS:
        return False
    raise ValueError(f"invalid truth value {text!r} for environment variable {name.upper()}: "
                     f"use one of {', '.join(_TRUE_WORDS + _FALSE_WORDS)}")


class Option:
    """One configuration option: its value, how to check a new value, and the
    hooks that mirror it where fungrad's hot paths read it.

    Calling the option gives a context manager (also usable as a decorator)
    that sets it while active: ``with fungrad.disable_jit(): ...``.
    """

    def __init__(self, name: str, default, help: str, parse: Callable, allowed: str,
                 from_env: Callable | None = None, context_default=_NO_VALUE,
                 affects_tracing: bool = False):
        self.name = name
        self.help = help
        self.allowed = allowed
        self._parse = parse
        self.context_default = context_default
        self.affects_tracing = affects_tracing
        self.hooks: list[Callable[[Any], None]] = []
        self.default = default
        self.__doc__ = f"Context manager for the config option {name} ({allowed}): {help}."
        env = os.environ.get(name.upper())
        if env is not None:
            default = (from_env or (lambda n, text: parse(text)))(name, env)
        self.value = default

    def parse(self, value):
        return self._parse(value)

    def _assign(self, value):
        """Set the value (already parsed) and run the hooks."""
        with _lock:
            changed = self.affects_tracing and value != self.value
            self.value = value
            for hook in self.hooks:
                hook(value)
            if changed:
                for clear in on_tracing_change:
                    clear()

    def __call__(self, new_value=_NO_VALUE):
        if new_value is _NO_VALUE:
            if self.context_default is _NO_VALUE:
                raise TypeError(f"the context manager for {self.name} needs the new value, "
                                f"e.g. {self.name[4:]}({self.allowed.split(',')[0]})")
            new_value = self.context_default
        return _OptionContext(self, self.parse(new_value))

    def __repr__(self):
        return f"<config option {self.name}={self.value!r}>"


class _OptionContext:
    """Sets an option on entry and restores the previous value on exit."""

    def __init__(self, option: Option, value):
        self.option, self.value, self.saved = option, value, []

    def __enter__(self):
        self.saved.append(self.option.value)
        self.option._assign(self.value)
        return self

    def __exit__(self, *exc):
        self.option._assign(self.saved.pop())
        return False

    def __call__(self, fun):
        @functools.wraps(fun)
        def wrapper(*args, **kwargs):
            with _OptionContext(self.option, self.value):
                return fun(*args, **kwargs)
        return wrapper


#: functions that clear the caches of staged and compiled code; called when an
#: option that changes what tracing produces (x64, promotion) changes.
#: ``jit`` registers its caches here; ``fungrad.clear_caches()`` calls them too.
on_tracing_change: list[Callable[[], None]] = []


class Config:
    """The configuration: ``update(name, value)``, ``config.<name>``, ``values``."""

    def __init__(self):
        object.__setattr__(self, "_options", {})

    def add(self, option: Option) -> Option:
        self._options[option.name] = option
        return option

    def _option(self, name: str) -> Option:
        option = self._options.get(name)
        if option is None:
            close = difflib.get_close_matches(str(name), list(self._options), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise AttributeError(f"Unrecognized config option: {name!r}{hint} "
                                 f"(the options are listed by fungrad.config.values)")
        return option

    def update(self, name: str, value) -> None:
        """Set option ``name`` (``ValueError`` naming the allowed values if wrong)."""
        option = self._option(name)
        option._assign(option.parse(value))

    def read(self, name: str):
        return self._option(name).value

    _read = read

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._option(name).value

    def __setattr__(self, name, value):
        raise AttributeError(f"set config options with fungrad.config.update({name!r}, "
                             f"{value!r}), not by assignment")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._options))

    @property
    def values(self) -> dict:
        """Every option and its current value."""
        return {name: option.value for name, option in sorted(self._options.items())}

    def non_defaults(self) -> dict:
        """The options whose value differs from fungrad's default."""
        return {name: o.value for name, o in sorted(self._options.items())
                if o.value is not o.default and o.value != o.default}

    @property
    def x64_enabled(self) -> bool:
        return self._options["jax_enable_x64"].value

    def describe(self) -> str:
        """One line per option: name, value, allowed values, meaning."""
        return "\n".join(f"{o.name} = {o.value!r}  ({o.allowed}): {o.help}"
                         for _, o in sorted(self._options.items()))

    def __repr__(self):
        return "fungrad.config(" + ", ".join(f"{k}={v!r}" for k, v in self.values.items()) + ")"


config = Config()


def bool_option(name, default, help, affects_tracing=False) -> Option:
    return config.add(Option(name, default, help, functools.partial(_parse_bool, name),
                             "True or False", from_env=_bool_from_env, context_default=True,
                             affects_tracing=affects_tracing))


def enum_option(name, default, values, help, affects_tracing=False, allowed=None) -> Option:
    shown = ", ".join(repr(v) for v in values)

    def parse(value):
        if value not in values:
            raise ValueError(f"config option {name} must be one of {shown}, got {value!r}")
        return value
    return config.add(Option(name, default, help, parse, allowed or shown,
                             affects_tracing=affects_tracing))


def _parse_platforms(name, single: bool):
    def parse(value):
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"config option {name} takes a platform name string such as "
                             f"'cpu', got {value!r} of type {type(value).__name__}")
        names = [value.strip().lower()] if single else \
            [p.strip().lower() for p in value.split(",") if p.strip()]
        unsupported = [p for p in names if p != "cpu"]
        if unsupported:
            raise ValueError(f"config option {name}: fungrad runs on NumPy on the CPU only; "
                             f"the platform must be 'cpu', got {value!r}")
        return value
    return parse


# JAX's list (jax_default_matmul_precision): accepted, NumPy computes at full precision
_MATMUL_PRECISIONS = (
    None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")


enable_x64 = bool_option(
    "jax_enable_x64", True,
    "64-bit default dtypes (fungrad: True; False gives JAX's 32-bit defaults)",
    affects_tracing=True)
disable_jit = bool_option(
    "jax_disable_jit", False, "jit calls the Python function op by op instead of compiling")
debug_nans = bool_option(
    "jax_debug_nans", False, "raise FloatingPointError when an operation produces a NaN")
debug_infs = bool_option(
    "jax_debug_infs", False, "raise FloatingPointError when an operation produces an inf")


def _parse_check_tracer_leaks(value):
    if _parse_bool("jax_check_tracer_leaks", value):
        raise NotImplementedError(
            "jax_check_tracer_leaks=True: fungrad does not search for leaked tracers when a "
            "transformation ends; a leaked tracer raises UnexpectedTracerError (naming the "
            "transformation it escaped from) where it is used. False (no search) is accepted.")
    return False


check_tracer_leaks = config.add(Option(
    "jax_check_tracer_leaks", False,
    "search for tracers that outlive their transformation when it ends (fungrad: only False; "
    "an escaped tracer raises UnexpectedTracerError where it is used)",
    _parse_check_tracer_leaks, "False", context_default=True))
log_compiles = bool_option(
    "jax_log_compiles", False,
    "log each jit trace and compilation with its reason (logger 'fungrad.jit', WARNING)")
explain_cache_misses = bool_option(
    "jax_explain_cache_misses", False,
    "log why each jit cache miss retraced (which argument's shape, dtype, tree or "
    "static value changed): WARNING level when on, DEBUG otherwise (logger 'fungrad.jit')")
enable_checks = bool_option(
    "jax_enable_checks", False,
    "type-check every jaxpr jit traces and the program its passes produce (each "
    "equation's declared types against its primitive's shape rule): slower, for "
    "debugging primitives and passes")
no_tracing = bool_option(
    "jax_no_tracing", False,
    "raise RuntimeError when jit would trace (a cache miss): checks that a loop of "
    "jitted calls never retraces")
threefry_partitionable = bool_option(
    "jax_threefry_partitionable", True,
    "fungrad.random uses JAX's partitionable Threefry stream layout (JAX's default "
    "since 0.5); False gives the original layout of older JAX",
    affects_tracing=True)
numpy_rank_promotion = enum_option(
    "jax_numpy_rank_promotion", "allow", ("allow", "warn", "raise"),
    "what fungrad.numpy does when an elementwise op broadcasts arrays of different ranks",
    affects_tracing=True)
numpy_dtype_promotion = enum_option(
    "jax_numpy_dtype_promotion", "standard", ("standard", "strict"),
    "strict: no implicit promotion between different strongly typed dtypes",
    affects_tracing=True)
JIT_BACKENDS = ("numpy", "numba")
NUMBA_EXTRA = 'pip install "fungrad[numba]"'


def parse_jit_backend(value, what="config option fungrad_jit_backend"):
    """``value`` if it names a jit backend (ValueError listing them otherwise)."""
    if type(value) is not str or value not in JIT_BACKENDS:
        raise ValueError(f"{what}: unknown jit backend {value!r}; the backends are "
                         f"{', '.join(map(repr, JIT_BACKENDS))}")
    return value


def require_numba(what: str) -> None:
    """ImportError naming the extra to install unless numba can be imported."""
    import importlib.util
    if importlib.util.find_spec("numba") is None:
        raise ImportError(f"{what}: the 'numba' jit backend needs numba, which is not "
                          f"installed; install the extra: {NUMBA_EXTRA}")


def _parse_jit_backend_setting(value):
    value = parse_jit_backend(value)
    if value == "numba":
        require_numba("config option fungrad_jit_backend")
    return value


# (from the environment only the name is checked: a missing numba is reported
# by the first jit call, not by ``import fungrad``)
jit_backend = config.add(Option(
    "fungrad_jit_backend", "numpy",
    "the code jit compiles to: 'numpy' (readable NumPy source, the default) or 'numba' "
    f"(compiled by numba/LLVM; {NUMBA_EXTRA})",
    _parse_jit_backend_setting, "'numpy' or 'numba'",
    from_env=lambda name, text: parse_jit_backend(text.strip(), f"environment variable "
                                                  f"{name.upper()}")))
default_matmul_precision = enum_option(
    "jax_default_matmul_precision", None, _MATMUL_PRECISIONS,
    "accepted for compatibility: NumPy computes matmuls at full precision",
    allowed="None or one of JAX's precision names, e.g. 'highest'")
platforms = config.add(Option(
    "jax_platforms", None, "accepted: fungrad runs on the CPU ('cpu')",
    _parse_platforms("jax_platforms", single=False), "None or 'cpu'"))
platform_name = config.add(Option(
    "jax_platform_name", None, "accepted: fungrad runs on the CPU ('cpu')",
    _parse_platforms("jax_platform_name", single=True), "None or 'cpu'"))
def _apply_keep_freed_memory(on: bool) -> None:
    from fungrad import _memory
    _memory.keep_freed_memory(on)


keep_freed_memory = bool_option(
    "fungrad_keep_freed_memory", True,
    "keep freed memory in the process for reuse (glibc's allocator tuned as a caching "
    "allocator, as JAX's and PyTorch's are): large temporaries made again every step then "
    "cost no fresh page faults (fungrad/_memory.py); resident memory stays near its peak. "
    "Process-wide; no effect outside glibc")
keep_freed_memory.hooks.append(_apply_keep_freed_memory)


def _parse_num_cpu_devices(value):
    if isinstance(value, str):
        value = value.strip()
        value = int(value) if value.lstrip("-").isdigit() else value
    if type(value) is not int or value < -1 or value == 0:
        raise ValueError(f"config option jax_num_cpu_devices must be a positive int (or -1: "
                         f"as XLA_FLAGS' --xla_force_host_platform_device_count says, else "
                         f"1), got {value!r}")
    if _devices_in_use and value != num_cpu_devices.value:
        raise RuntimeError(
            "jax_num_cpu_devices config should be updated before backends are initialized "
            "i.e. before the devices are listed (jax.devices(), a mesh, a sharding). You "
            "should initialize this config immediately after `import jax`.")
    return value


# set once the device list has been handed out (fungrad.distributed.cluster):
# from then on the number of CPU devices is fixed, as JAX's backend is
_devices_in_use = False

num_cpu_devices = config.add(Option(
    "jax_num_cpu_devices", -1,
    "the number of CPU devices of this process (-1: XLA_FLAGS' "
    "--xla_force_host_platform_device_count, else 1); they share this process's CPU and "
    "run a sharded program shard by shard (fungrad.distributed.simulated_devices); set "
    "it before the devices are first listed",
    _parse_num_cpu_devices, "a positive int or -1"))
default_device = config.add(Option(
    "jax_default_device", None,
    "accepted: any value; fungrad computes on the local CPU (see fungrad.default_device)",
    lambda value: value, "any device object or platform name"))
