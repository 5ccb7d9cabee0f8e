"""fungrad_keep_freed_memory (fungrad/_memory.py): glibc's allocator tuned to
keep freed memory for reuse, as a caching allocator does; off, glibc's
defaults.  Observed from outside: the resident memory after freeing a large
array (kept: it stays resident; not kept: it goes back to the system)."""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the setting tunes glibc's allocator (Linux)")

_PROBE = textwrap.dedent("""
    import os, numpy as np
    import fungrad
    {setup}
    page = os.sysconf("SC_PAGE_SIZE")
    rss = lambda: int(open("/proc/self/statm").read().split()[1]) * page
    a = np.ones(40 << 17)           # 40 MiB, written: resident
    before = rss()
    del a
    print((before - rss()) >> 20)   # MiB given back to the system
""")


def _released_mib(setup="", env=None):
    out = subprocess.run([sys.executable, "-c", _PROBE.format(setup=setup)],
                         capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stdout.strip())


def test_freed_memory_is_kept_by_default():
    assert _released_mib() < 8


def test_off_by_environment_or_config_gives_it_back():
    assert _released_mib(env={"FUNGRAD_KEEP_FREED_MEMORY": "0"}) > 32
    assert _released_mib("fungrad.config.update('fungrad_keep_freed_memory', False)") > 32


def test_the_option_is_a_bool():
    import fungrad
    with pytest.raises((TypeError, ValueError)):
        fungrad.config.update("fungrad_keep_freed_memory", "sometimes")
