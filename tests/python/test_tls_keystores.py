"""TLS as Kafka users configure it: keystores and truststores as JKS and
PKCS12 files from Java's keytool and OpenSSL and PEM files with an
encrypted key; the protocols and cipher suites served.

Goal: a broker whose SSL listener is configured as Kafka's would be
(ssl.keystore.location/type/password, ssl.key.password,
ssl.truststore.location/type/password) serves librdkafka and kafka-python
over TLS: a JKS keystore (Kafka's default type), a PKCS12 one under either
type name (Java 17 reads both formats under both), a JKS key with a
password of its own, and a PEM keystore whose key is encrypted PKCS#8.
JKS and PKCS12 truststores admit client certificates their CA issued and
nobody without one. Bad stores and passwords stop the broker at start-up
with Kafka's messages, and DescribeConfigs shows the types and hides the
passwords. ssl.enabled.protocols and ssl.cipher.suites decide what a
client can negotiate: a TLS 1.2 client is refused by a TLSv1.3-only
listener, and a TLS 1.2 listener limited to one suite negotiates that one
and refuses a client without it. ssl.principal.mapping.rules turn the
certificate's subject into the principal ACLs judge, and a client no rule
applies to is refused.

Method: keystores made with openssl and keytool from one CA; every
configuration and message here was compared with Kafka 4.1.1's
SslFactory on Java 17 (DefaultSslEngineFactory), which accepted and
refused the same stores with the same words; the mapping rule's result is
what Kafka 4.1.1's SslPrincipalMapper made of the same subject.
"""

import shutil
import socket
import ssl
import subprocess

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from conftest import BROKER_BIN, Broker, kafka_python_round_trip, serve
from test_confluent_kafka import assert_refused, produce_and_read_back
from test_tls import CLIENT_PRINCIPAL, certificates, openssl  # noqa: F401 (certificates is a fixture)

STORE_PASSWORD = "store-secret"
KEY_PASSWORD = "key-secret"
TRUST_PASSWORD = "trust-secret"


def keytool(*args, cwd):
    subprocess.run(["keytool", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(certificates):  # noqa: F811
    """The server's key and chain as a PKCS12 file (OpenSSL's defaults), a
    JKS file, a JKS file whose key has its own password, a PEM file with the
    key encrypted as `openssl pkcs8 -v1 PBE-SHA1-3DES` makes it (what
    Kafka on Java 17 reads), and the CA as JKS and PKCS12 truststores."""
    if shutil.which("keytool") is None:
        pytest.skip("keytool (a JDK's) is not installed")
    ca, _ = certificates
    work = ca.parent
    openssl("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-certfile", "ca.pem",
            "-name", "server", "-passout", f"pass:{STORE_PASSWORD}", "-out", "server.p12", cwd=work)
    keytool("-importkeystore", "-srckeystore", "server.p12", "-srcstoretype", "PKCS12",
            "-srcstorepass", STORE_PASSWORD, "-destkeystore", "server.jks", "-deststoretype", "JKS",
            "-deststorepass", STORE_PASSWORD, "-noprompt", cwd=work)
    keytool("-importkeystore", "-srckeystore", "server.p12", "-srcstoretype", "PKCS12",
            "-srcstorepass", STORE_PASSWORD, "-destkeystore", "keypass.jks", "-deststoretype", "JKS",
            "-deststorepass", STORE_PASSWORD, "-noprompt", cwd=work)
    keytool("-keypasswd", "-alias", "server", "-keystore", "keypass.jks", "-storepass", STORE_PASSWORD,
            "-keypass", STORE_PASSWORD, "-new", KEY_PASSWORD, cwd=work)
    openssl("pkcs8", "-topk8", "-in", "server.key", "-v1", "PBE-SHA1-3DES", "-passout",
            f"pass:{KEY_PASSWORD}", "-out", "server-encrypted.key", cwd=work)
    (work / "encrypted.pem").write_text(
        (work / "server-encrypted.key").read_text() + (work / "server.pem").read_text())
    for store_type, name in (("JKS", "trust.jks"), ("PKCS12", "trust.p12")):
        keytool("-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore", name, "-storetype", store_type,
                "-storepass", TRUST_PASSWORD, "-noprompt", cwd=work)
    return work


def ssl_broker(tmp_path_factory, args):
    return Broker(tmp_path_factory.mktemp("ringbroker-keystore"), extra_args=args, listen_protocol="SSL")


def librdkafka_ssl(broker, ca, **extra):
    return {"bootstrap.servers": broker.bootstrap, "security.protocol": "SSL", "ssl.ca.location": str(ca), **extra}


KEYSTORES = {
    "jks-default-type": ["--ssl-keystore-location", "server.jks", "--ssl-keystore-password", STORE_PASSWORD],
    "pkcs12": ["--ssl-keystore-location", "server.p12", "--ssl-keystore-type", "PKCS12",
               "--ssl-keystore-password", STORE_PASSWORD],
    "pkcs12-as-jks": ["--ssl-keystore-location", "server.p12", "--ssl-keystore-type", "JKS",
                      "--ssl-keystore-password", STORE_PASSWORD],
    "jks-as-pkcs12-key-password": ["--ssl-keystore-location", "keypass.jks", "--ssl-keystore-type", "PKCS12",
                                   "--ssl-keystore-password", STORE_PASSWORD, "--ssl-key-password", KEY_PASSWORD],
    "pem-encrypted-key": ["--ssl-keystore-location", "encrypted.pem", "--ssl-keystore-type", "PEM",
                          "--ssl-key-password", KEY_PASSWORD],
}


@pytest.mark.parametrize("keystore", KEYSTORES)
def test_each_keystore_serves_librdkafka_and_kafka_python(tmp_path_factory, stores, keystore, topic):
    args = [str(stores / a) if a.endswith((".jks", ".p12", ".pem")) else a for a in KEYSTORES[keystore]]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        config = librdkafka_ssl(broker, stores / "ca.pem")
        produce_and_read_back(broker, topic, config, config, count=60)
        kafka_python_round_trip(f"{topic}-kp", bootstrap_servers=broker.bootstrap, security_protocol="SSL",
                                ssl_cafile=str(stores / "ca.pem"), ssl_check_hostname=True)


@pytest.mark.parametrize("truststore", [
    # A JKS truststore's password only checks its integrity (Java's rule).
    ["--ssl-truststore-location", "trust.jks"],
    ["--ssl-truststore-location", "trust.p12", "--ssl-truststore-type", "PKCS12",
     "--ssl-truststore-password", TRUST_PASSWORD],
])
def test_jks_and_pkcs12_truststores_admit_client_certificates(tmp_path_factory, stores, truststore, topic):
    args = [
        "--ssl-keystore-location", str(stores / "server.jks"), "--ssl-keystore-password", STORE_PASSWORD,
        "--ssl-client-auth", "required",
        *[str(stores / a) if a.startswith("trust.") else a for a in truststore],
    ]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        with_certificate = librdkafka_ssl(broker, stores / "ca.pem",
                                          **{"ssl.certificate.location": str(stores / "client.pem"),
                                             "ssl.key.location": str(stores / "client.key")})
        produce_and_read_back(broker, topic, with_certificate, with_certificate, count=30)
        assert_refused(librdkafka_ssl(broker, stores / "ca.pem"), "SSL")


# What Kafka 4.1.1's SslFactory said of the same stores (after the path,
# its messages; "Cannot recover key" and the PEM ones are its causes';
# Java wrote the unknown protocol's and suite's without the space or colon).
REFUSALS = {
    "no-password": (["--ssl-keystore-location", "server.jks"],
                    "SSL key store is specified, but key store password is not specified."),
    "wrong-jks-password": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password", "wrong"],
                           "of type JKS: Keystore was tampered with, or password was incorrect"),
    "wrong-pkcs12-password": (["--ssl-keystore-location", "server.p12", "--ssl-keystore-password", "wrong"],
                              "of type JKS: keystore password was incorrect"),
    "key-password-missing": (["--ssl-keystore-location", "keypass.jks", "--ssl-keystore-password", STORE_PASSWORD],
                             "Cannot recover key"),
    "pem-as-jks": (["--ssl-keystore-location", "encrypted.pem", "--ssl-keystore-type", "JKS",
                    "--ssl-keystore-password", STORE_PASSWORD], "Invalid keystore format"),
    "pem-store-password": (["--ssl-keystore-location", "encrypted.pem", "--ssl-keystore-password", "x"],
                           "SSL key store password cannot be specified with PEM format, "
                           "only key password may be specified"),
    "pem-key-password-missing": (["--ssl-keystore-location", "encrypted.pem"], "ssl.key.password"),
    "pem-key-password-wrong": (["--ssl-keystore-location", "encrypted.pem", "--ssl-key-password", "wrong"],
                               "does not decrypt the private key"),
    "pem-truststore-password": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password",
                                 STORE_PASSWORD, "--ssl-truststore-location", "ca.pem",
                                 "--ssl-truststore-password", "x"],
                                "SSL trust store password cannot be specified for PEM format."),
    "wrong-truststore-password": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password",
                                   STORE_PASSWORD, "--ssl-truststore-location", "trust.jks",
                                   "--ssl-truststore-password", "wrong"],
                                  "Keystore was tampered with, or password was incorrect"),
    "unknown-protocol": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password", STORE_PASSWORD,
                          "--ssl-enabled-protocols", "TLSv1.2,BOGUS"], "Unsupported protocol BOGUS"),
    "unknown-cipher-suite": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password", STORE_PASSWORD,
                              "--ssl-cipher-suites", "BOGUS"], "Unsupported CipherSuite: BOGUS"),
    "bad-mapping-rule": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password", STORE_PASSWORD,
                          "--ssl-principal-mapping-rules", "RULE:^CN=(.*)$/$1/Lxyz"],
                         "Invalid rule: `RULE:^CN=(.*)$/$1/Lxyz`, unmatched substring: `xyz`"),
    "inline-key-not-pem": (["--ssl-keystore-key", "@server.key", "--ssl-keystore-certificate-chain", "@server.pem"],
                           "SSL private key can be specified only for PEM, but key store type is JKS."),
    "inline-key-and-location": (["--ssl-keystore-type", "PEM", "--ssl-keystore-location", "encrypted.pem",
                                 "--ssl-keystore-key", "@server.key", "--ssl-keystore-certificate-chain",
                                 "@server.pem"],
                                "Both SSL key store location and separate private key are specified."),
    "inline-key-without-chain": (["--ssl-keystore-type", "PEM", "--ssl-keystore-key", "@server.key"],
                                 "SSL private key is specified, but certificate chain is not specified."),
    "inline-truststore-not-pem": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password",
                                   STORE_PASSWORD, "--ssl-truststore-certificates", "@ca.pem"],
                                  "SSL trust store certs can be specified only for PEM, but trust store type is JKS."),
    "truststore-password-alone": (["--ssl-keystore-location", "server.jks", "--ssl-keystore-password",
                                   STORE_PASSWORD, "--ssl-truststore-password", "x"],
                                  "SSL trust store is not specified, but trust store password is specified."),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_bad_stores_and_passwords_stop_the_broker_with_kafkas_words(tmp_path, stores, case):
    args, expected = REFUSALS[case]
    # @name: the file's text (an inline PEM config); name.ext: its path.
    args = [(stores / a[1:]).read_text() if a.startswith("@")
            else str(stores / a) if a.endswith((".jks", ".p12", ".pem")) else a for a in args]
    refused = subprocess.run(
        [str(BROKER_BIN), "serve", "--data-dir", str(tmp_path / "data"), "--listen", "SSL://127.0.0.1:0", *args],
        capture_output=True, text=True, timeout=30,
    )
    assert refused.returncode != 0
    assert expected in refused.stderr, refused.stderr


def test_a_pkcs12_file_asking_for_more_iterations_than_java_allows_is_refused(tmp_path, stores):
    """Java's PKCS12 loader refuses more than 5,000,000 password-hashing
    iterations, so Kafka does not start on such a file; nor does this
    broker, instead of spending minutes (or, for a crafted count, hours) on
    it."""
    openssl("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-name", "server",
            "-iter", "5000001", "-out", str(tmp_path / "costly.p12"), "-passout", f"pass:{STORE_PASSWORD}",
            cwd=stores)
    refused = subprocess.run(
        [str(BROKER_BIN), "serve", "--data-dir", str(tmp_path / "data"), "--listen", "SSL://127.0.0.1:0",
         "--ssl-keystore-location", str(tmp_path / "costly.p12"), "--ssl-keystore-password", STORE_PASSWORD],
        capture_output=True, text=True, timeout=30,
    )
    assert refused.returncode != 0
    assert "iteration count too large: 5000001" in refused.stderr, refused.stderr


def test_describe_configs_shows_the_store_types_and_hides_the_passwords(tmp_path_factory, stores):
    args = ["--ssl-keystore-location", str(stores / "server.p12"), "--ssl-keystore-type", "PKCS12",
            "--ssl-keystore-password", STORE_PASSWORD, "--ssl-truststore-location", str(stores / "trust.jks")]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        admin = AdminClient(librdkafka_ssl(broker, stores / "ca.pem"))
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        keystore_type = configs["ssl.keystore.type"]
        assert (keystore_type.value, keystore_type.source) == ("PKCS12", ConfigSource.STATIC_BROKER_CONFIG.value)
        # A JKS truststore whose type was not given: Kafka's default.
        truststore_type = configs["ssl.truststore.type"]
        assert (truststore_type.value, truststore_type.source) == ("JKS", ConfigSource.DEFAULT_CONFIG.value)
        password = configs["ssl.keystore.password"]
        assert password.is_sensitive and password.value is None
        assert password.source == ConfigSource.STATIC_BROKER_CONFIG.value
        unset = configs["ssl.key.password"]
        assert unset.is_sensitive and unset.value is None
        assert unset.source == ConfigSource.DEFAULT_CONFIG.value


def handshake(broker, ca, maximum_version=None, ciphers=None):
    """A TLS handshake with the broker; returns (version, cipher) or raises
    ssl.SSLError."""
    context = ssl.create_default_context(cafile=str(ca))
    if maximum_version is not None:
        context.maximum_version = maximum_version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.version(), tls.cipher()[0]


def test_enabled_protocols_and_cipher_suites_decide_what_clients_negotiate(tmp_path_factory, stores, topic):
    keystore = ["--ssl-keystore-location", str(stores / "server.jks"), "--ssl-keystore-password", STORE_PASSWORD]
    ca = stores / "ca.pem"
    for broker in serve(ssl_broker(tmp_path_factory, [*keystore, "--ssl-enabled-protocols", "TLSv1.3"])):
        assert handshake(broker, ca)[0] == "TLSv1.3"
        with pytest.raises(ssl.SSLError, match="PROTOCOL_VERSION|protocol version"):
            handshake(broker, ca, maximum_version=ssl.TLSVersion.TLSv1_2)
        config = librdkafka_ssl(broker, ca)
        produce_and_read_back(broker, topic, config, config, count=20)
    suite = "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
    args = [*keystore, "--ssl-enabled-protocols", "TLSv1.2", "--ssl-cipher-suites",
            f"TLS_RSA_WITH_AES_128_CBC_SHA,{suite}"]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        assert handshake(broker, ca) == ("TLSv1.2", "ECDHE-RSA-AES256-GCM-SHA384")
        with pytest.raises(ssl.SSLError, match="HANDSHAKE_FAILURE|handshake failure"):
            handshake(broker, ca, ciphers="ECDHE-RSA-AES128-GCM-SHA256")
        # The suite Java knows and this broker does not serve is named.
        assert "TLS_RSA_WITH_AES_128_CBC_SHA is not served" in broker.log_text()
        config = librdkafka_ssl(broker, ca)
        produce_and_read_back(broker, f"{topic}-12", config, config, count=20)
        admin = AdminClient(config)
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert configs["ssl.enabled.protocols"].value == "TLSv1.2"
        assert configs["ssl.cipher.suites"].value == f"TLS_RSA_WITH_AES_128_CBC_SHA,{suite}"
        assert configs["ssl.cipher.suites"].source == ConfigSource.STATIC_BROKER_CONFIG.value


def test_principal_mapping_rules_name_the_principal_acls_judge(tmp_path_factory, stores, topic):
    # The client's subject, as Kafka 4.1.1 wrote it:
    # 1.2.840.113549.1.9.1=#16066340782e696f,CN=client one,OU=eng,O=acme\, inc,C=US
    # and what Kafka's SslPrincipalMapper made of it with this rule.
    rules = "RULE:^.*CN=([^,]*),OU=([^,]*),.*$/$1@$2/U,DEFAULT"
    mapped = "User:CLIENT ONE@ENG"
    base = [
        "--ssl-keystore-location", str(stores / "server.jks"), "--ssl-keystore-password", STORE_PASSWORD,
        "--ssl-client-auth", "required", "--ssl-truststore-location", str(stores / "trust.jks"),
        "--authorizer-class-name", "standard",
    ]
    certified = {"ssl.certificate.location": str(stores / "client.pem"),
                 "ssl.key.location": str(stores / "client.key")}

    def create(broker, name):
        admin = AdminClient(librdkafka_ssl(broker, stores / "ca.pem", **certified))
        try:
            admin.create_topics([NewTopic(name, 1, 1)])[name].result(timeout=30)
            return "created"
        except KafkaException as error:
            return error.args[0].name()

    args = [*base, "--ssl-principal-mapping-rules", rules]
    for broker in serve(ssl_broker(tmp_path_factory, [*args, "--super-users", mapped])):
        assert create(broker, topic) == "created"
        admin = AdminClient(librdkafka_ssl(broker, stores / "ca.pem", **certified))
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        assert configs["ssl.principal.mapping.rules"].value == rules
    # The unmapped subject is not a super user there.
    for broker in serve(ssl_broker(tmp_path_factory, [*args, "--super-users", CLIENT_PRINCIPAL])):
        assert create(broker, topic) == "TOPIC_AUTHORIZATION_FAILED"
    # No rule applies: the client is refused, and the broker says why.
    args = [*base, "--ssl-principal-mapping-rules", "RULE:^CN=nobody$/x/", "--super-users", mapped]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        assert_refused(librdkafka_ssl(broker, stores / "ca.pem", **certified), "")
        assert "no ssl.principal.mapping.rules rule applies" in broker.log_text()


def test_inline_pem_stores_from_the_environment(tmp_path_factory, stores, monkeypatch, topic):
    """Kafka's ssl.keystore.key, ssl.keystore.certificate.chain and
    ssl.truststore.certificates, given as environment variables as secrets
    often are; the key encrypted, with its password."""
    monkeypatch.setenv("RINGBROKER_SSL_KEYSTORE_KEY", (stores / "server-encrypted.key").read_text())
    monkeypatch.setenv("RINGBROKER_SSL_KEYSTORE_CERTIFICATE_CHAIN",
                       (stores / "server.pem").read_text() + (stores / "ca.pem").read_text())
    monkeypatch.setenv("RINGBROKER_SSL_TRUSTSTORE_CERTIFICATES", (stores / "ca.pem").read_text())
    args = ["--ssl-keystore-type", "PEM", "--ssl-key-password", KEY_PASSWORD, "--ssl-truststore-type", "PEM",
            "--ssl-client-auth", "required"]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        certified = librdkafka_ssl(broker, stores / "ca.pem",
                                   **{"ssl.certificate.location": str(stores / "client.pem"),
                                      "ssl.key.location": str(stores / "client.key")})
        produce_and_read_back(broker, topic, certified, certified, count=30)
        assert_refused(librdkafka_ssl(broker, stores / "ca.pem"), "SSL")
        admin = AdminClient(certified)
        resource = ConfigResource(ConfigResource.Type.BROKER, "0")
        configs = admin.describe_configs([resource])[resource].result(timeout=30)
        for name in ("ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.certificates"):
            assert configs[name].is_sensitive and configs[name].value is None, name
            assert configs[name].source == ConfigSource.STATIC_BROKER_CONFIG.value, name
        assert configs["ssl.keystore.type"].value == "PEM"


def test_a_pkcs12_chain_that_loops_back_is_cut_where_it_repeats(tmp_path_factory, stores):
    """Two certificates that name each other as issuer: A (the server's,
    issued by B's name) and B (issued by A's name). Following issuers from
    A never ends; Java's loader stops at the loop, and so does this broker:
    it starts, serving the chain A, B, which a client trusting B's key
    (a self-signed CN=loop-b) accepts."""
    work = tmp_path_factory.mktemp("loop")
    for name in ("a", "b"):
        openssl("genrsa", "-out", f"{name}.key", "2048", cwd=work)
    openssl("req", "-x509", "-new", "-key", "b.key", "-subj", "/CN=loop-b", "-days", "30",
            "-out", "b-root.pem", cwd=work)
    openssl("req", "-new", "-key", "a.key", "-subj", "/CN=loop-a", "-out", "a.csr", cwd=work)
    (work / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "a.csr", "-CA", "b-root.pem", "-CAkey", "b.key", "-CAcreateserial",
            "-days", "30", "-extfile", "san.ext", "-out", "a.pem", cwd=work)
    openssl("req", "-new", "-key", "b.key", "-subj", "/CN=loop-b", "-out", "b.csr", cwd=work)
    openssl("x509", "-req", "-in", "b.csr", "-CA", "a.pem", "-CAkey", "a.key", "-CAcreateserial",
            "-days", "30", "-out", "b.pem", cwd=work)
    openssl("pkcs12", "-export", "-in", "a.pem", "-inkey", "a.key", "-certfile", "b.pem", "-name", "server",
            "-passout", f"pass:{STORE_PASSWORD}", "-out", "loop.p12", cwd=work)
    args = ["--ssl-keystore-location", str(work / "loop.p12"), "--ssl-keystore-type", "PKCS12",
            "--ssl-keystore-password", STORE_PASSWORD]
    for broker in serve(ssl_broker(tmp_path_factory, args)):
        version, _ = handshake(broker, work / "b-root.pem")
        assert version.startswith("TLSv1.")
