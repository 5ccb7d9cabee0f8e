"""TLS for fungrad's Dask cluster: checking a ``Security`` before anything
connects, and the warning for plain TCP to another machine.

Why it matters: a Dask scheduler runs whatever code its clients send, and
fungrad ships compiled programs to the workers, so anyone who can reach a
plain-TCP scheduler can run code there.  ``initialize(..., security=...)``
takes Dask's ``distributed.Security`` (TLS with a CA and certificates), or
``True`` for a temporary self-signed certificate on a LocalCluster.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import ssl
from urllib.parse import urlsplit

logger = logging.getLogger("fungrad.distributed")

_FILE_FIELDS = ("tls_ca_file", "tls_client_cert", "tls_client_key", "tls_scheduler_cert",
                "tls_scheduler_key", "tls_worker_cert", "tls_worker_key")


def resolve_security(dd, security, local: bool):
    """The ``distributed.Security`` to use (None: plain TCP), checked now:
    a missing or unreadable file, or a certificate and key that do not load,
    raise ``ValueError`` naming the field, the file and the reason."""
    if security is None or security is False:
        return None
    if security is True:
        if not local:
            raise ValueError("fungrad.distributed.initialize: security=True makes a temporary "
                             "self-signed certificate, which only a LocalCluster started here "
                             "can share; to connect to a scheduler, pass "
                             "distributed.Security(tls_ca_file=..., tls_client_cert=..., "
                             "tls_client_key=...) with its certificates")
        try:
            return dd.Security.temporary()
        except ImportError as err:
            raise ImportError("fungrad.distributed.initialize(security=True) needs the "
                              "'cryptography' package for a temporary certificate: "
                              f"pip install cryptography ({err})") from None
    if not isinstance(security, dd.Security):
        raise TypeError(f"fungrad.distributed.initialize: security must be a "
                        f"distributed.Security, True or None, got {type(security).__name__}")
    _check_files(security)
    for role in (("client", "scheduler", "worker") if local else ("client",)):
        try:
            security.get_connection_args(role)
        except (OSError, ssl.SSLError, ValueError) as err:
            raise ValueError(f"fungrad.distributed.initialize: the TLS settings for the {role} "
                             f"do not load ({type(err).__name__}: {err}); check that each "
                             "certificate matches its key and the CA file is a PEM "
                             "certificate") from None
    return security


def _check_files(security) -> None:
    for field in _FILE_FIELDS:
        path = getattr(security, field, None)
        if path is None or not isinstance(path, (str, os.PathLike)) or \
                str(path).lstrip().startswith("-----BEGIN"):      # inline PEM text
            continue
        if not os.path.isfile(path):
            raise ValueError(f"fungrad.distributed.initialize: {field} = {str(path)!r}: no "
                             "such file")
        if not os.access(path, os.R_OK):
            raise ValueError(f"fungrad.distributed.initialize: {field} = {str(path)!r}: not "
                             "readable by this user")


def is_loopback(address: str) -> bool:
    host = urlsplit(address if "://" in address else f"tcp://{address}").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_if_exposed(address: str, security) -> bool:
    """Log a warning (and return True) for plain TCP to a non-loopback scheduler."""
    scheme = urlsplit(address).scheme if "://" in address else "tcp"
    if security is not None or scheme == "tls" or is_loopback(address):
        return False
    logger.warning(
        "fungrad.distributed.initialize(%r): connecting to a scheduler on another machine "
        "over plain TCP. Anyone who can reach that scheduler can run code on its workers "
        "(fungrad ships programs to them) and read the data sent. Use TLS: a 'tls://' "
        "address and security=distributed.Security(...) with certificates "
        "(docs/distributed.md, 'TLS').", address)
    return True
