"""A self-signed certificate for a LAN trial: phones give camera and location only to secure
pages, and a page on a LAN address is secure only over HTTPS. Made fresh for each run (and
removed with it), for the address the phone opens, so no key outlives the trial."""
from __future__ import annotations

import datetime
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def self_signed(folder: Path, address: str, days: int = 2) -> tuple[Path, Path, str]:
    """(certificate, key, SHA-256 fingerprint) written into `folder` (the key 0600)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"cityseeker ar {address}")])
    now = datetime.datetime.now(datetime.timezone.utc)
    try:
        alt: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(address))
    except ValueError:
        alt = x509.DNSName(address)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([alt, x509.DNSName("localhost")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = Path(folder) / "ar_cert.pem", Path(folder) / "ar_key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    fingerprint = cert.fingerprint(hashes.SHA256()).hex(":").upper()
    return cert_path, key_path, fingerprint
