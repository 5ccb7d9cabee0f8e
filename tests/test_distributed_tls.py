"""TLS for fungrad.distributed: a LocalCluster on 127.0.0.1 with certificates
this test generates (a CA and one certificate it signs), a shard_map on it
equal to the in-process result, and misconfigurations caught at initialize:
a missing file, a certificate with the wrong key, a CA that did not sign the
scheduler's certificate; plain TCP to another machine logs a warning (checked
without connecting anywhere)."""
from __future__ import annotations

import datetime
import ipaddress
import logging

import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad.distributed import security as fsec
from fungrad.sharding import Mesh, P

dd = pytest.importorskip("dask.distributed")
x509 = pytest.importorskip("cryptography.x509")
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _cert(subject_key, issuer_key, name, issuer_name, is_ca):
    now = datetime.datetime.now(datetime.timezone.utc)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name)])
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
               .public_key(subject_key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True))
    if not is_ca:
        builder = builder.add_extension(x509.SubjectAlternativeName(
            [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path, obj):
    if hasattr(obj, "private_bytes"):
        data = obj.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.TraditionalOpenSSL,
                                 serialization.NoEncryption())
    else:
        data = obj.public_bytes(serialization.Encoding.PEM)
    path.write_bytes(data)
    return str(path)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """Files of a CA, a certificate it signed (for every role), and a foreign CA."""
    d = tmp_path_factory.mktemp("pki")
    ca_key, other_ca_key, key = _key(), _key(), _key()
    files = {
        "ca": _write(d / "ca.pem", _cert(ca_key, ca_key, "fungrad test CA", "fungrad test CA",
                                         True)),
        "other_ca": _write(d / "other-ca.pem", _cert(other_ca_key, other_ca_key, "other CA",
                                                     "other CA", True)),
        "cert": _write(d / "node.pem", _cert(key, ca_key, "localhost", "fungrad test CA",
                                             False)),
        "key": _write(d / "node-key.pem", key),
        "wrong_key": _write(d / "wrong-key.pem", _key()),
    }
    return files


def _security(pki, ca="ca", key="key"):
    return dd.Security(tls_ca_file=pki[ca], tls_client_cert=pki["cert"],
                       tls_client_key=pki[key], tls_scheduler_cert=pki["cert"],
                       tls_scheduler_key=pki[key], tls_worker_cert=pki["cert"],
                       tls_worker_key=pki[key], require_encryption=True)


def test_a_tls_cluster_computes_what_one_process_does(pki):
    with fungrad.distributed.initialize(n_workers=2, timeout=60,
                                        security=_security(pki)) as cluster:
        assert cluster.address.startswith("tls://127.0.0.1")
        mesh = Mesh(np.array(fungrad.devices(), dtype=object), ("data",))
        x = np.arange(8.0)
        body = lambda v: fnp.sin(v) * 2.0
        got = fungrad.shard_map(body, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)
        np.testing.assert_allclose(fungrad.device_get(got), np.sin(x) * 2.0, rtol=1e-15)
    assert not fungrad.distributed.is_initialized()


def test_a_foreign_ca_fails_at_initialize_naming_the_ca_file(pki):
    sec = _security(pki)
    with dd.LocalCluster(n_workers=0, protocol="tls://", host="127.0.0.1", security=sec,
                         dashboard_address=None, silence_logs=logging.ERROR) as scheduler:
        with pytest.raises(ConnectionError, match=r"no TLS connection.*other-ca\.pem"):
            fungrad.distributed.initialize(scheduler.scheduler_address, timeout=3,
                                           security=_security(pki, ca="other_ca"))
    assert not fungrad.distributed.is_initialized()


def test_missing_or_mismatched_certificates_fail_before_connecting(pki):
    missing = dd.Security(tls_ca_file="/nonexistent/ca.pem", tls_client_cert=pki["cert"],
                          tls_client_key=pki["key"])
    with pytest.raises(ValueError, match=r"tls_ca_file = '/nonexistent/ca\.pem': no such file"):
        fungrad.distributed.initialize("tls://127.0.0.1:1", security=missing)
    with pytest.raises(ValueError, match="TLS settings for the client do not load"):
        fungrad.distributed.initialize("tls://127.0.0.1:1",
                                       security=_security(pki, key="wrong_key"))
    with pytest.raises(ValueError, match="security=True .* LocalCluster"):
        fungrad.distributed.initialize("tls://127.0.0.1:1", security=True)
    with pytest.raises(TypeError, match="security must be a distributed.Security"):
        fungrad.distributed.initialize(security="yes")
    assert not fungrad.distributed.is_initialized()


def test_plain_tcp_to_another_machine_is_warned_about(caplog):
    # the check alone: nothing connects to these addresses
    with caplog.at_level(logging.WARNING, logger="fungrad.distributed"):
        assert fsec.warn_if_exposed("tcp://10.1.2.3:8786", None)
        assert "plain TCP" in caplog.text and "tls://" in caplog.text
    for quiet in ("tcp://127.0.0.1:8786", "localhost:8786", "tls://10.1.2.3:8786"):
        assert not fsec.warn_if_exposed(quiet, None)
    assert not fsec.warn_if_exposed("tcp://10.1.2.3:8786", object())


def test_security_true_gives_a_local_cluster_a_temporary_certificate():
    with fungrad.distributed.initialize(n_workers=1, timeout=60, security=True) as cluster:
        assert cluster.address.startswith("tls://")
        x = fungrad.device_put(np.arange(3.0), fungrad.devices()[0])
        np.testing.assert_allclose(fungrad.device_get(fungrad.jit(fnp.cos)(x)),
                                   np.cos(np.arange(3.0)), rtol=1e-15)
