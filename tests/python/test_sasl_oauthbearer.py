"""SASL/OAUTHBEARER with real clients against SASL_PLAINTEXT listeners.

Goal: clients configured for OAUTHBEARER as their documentation says work
as against Kafka 4.1.1:
- with an identity provider (OIDC client credentials, KIP-768), the broker
  takes the tokens its JWKS's keys signed: librdkafka
  (`sasl.oauthbearer.method=oidc`) produces idempotently and another client
  reads back, the Java client (`OAuthBearerLoginCallbackHandler`) produces,
  reads in a group and commits, kafka-python logs in with its token
  provider (and SASL extensions); tokens the broker must not take (expired,
  signed by another key, for another audience or issuer, unsigned, without
  a subject) are refused with Kafka's `{"status":"invalid_token"}`; a key
  the provider added later is fetched when a token first names it; a
  session lasts no longer than its token, and librdkafka renews it on the
  same connection (KIP-368) while producing;
- with Kafka's default unsecured validator, librdkafka's unsecured JWTs
  log in, and a token without the scope the JAAS options require is
  refused with Kafka's `insufficient_scope` challenge.

Method: an identity provider in the test process (oauth_issuer.Issuer,
RS256 keys, `/token` and `/jwks` over HTTP), one broker per validator.
The refusal messages and the Java client's results are those the same
clients got from Kafka 4.1.1 (listener with
`OAuthBearerValidatorCallbackHandler`, `sasl.oauthbearer.jwks.endpoint.url`,
`expected.audience`, `expected.issuer`; and one with the default
validator).
"""

import time

import pytest
from confluent_kafka import KafkaException, Producer
from cryptography.hazmat.primitives.asymmetric import rsa
from kafka import KafkaConsumer
from kafka.net.sasl.oauth import AbstractTokenProvider

from conftest import Broker, kafka_python_round_trip, serve
from oauth_issuer import AUDIENCE, ISSUER, Issuer, unsecured_token
from test_confluent_kafka import assert_refused, produce_and_read_back
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)

INVALID_TOKEN = '{"status":"invalid_token"}'
SESSION_EXPIRED = "SASL session expired without re-authentication"


@pytest.fixture(scope="module")
def issuer():
    issuer = Issuer(
        {"alice": "alice-secret", "bob": "bob-secret", "mallory": "mallory-secret"},
        client_claims={"mallory": {"aud": "another-service"}},
    )
    yield issuer
    issuer.close()


@pytest.fixture(scope="module")
def oidc_broker(tmp_path_factory, issuer):
    yield from serve(Broker(
        tmp_path_factory.mktemp("ringbroker-oauth"),
        extra_args=[
            "--sasl-enabled-mechanisms", "OAUTHBEARER,SCRAM-SHA-256",
            "--sasl-oauthbearer-jwks-endpoint-url", issuer.jwks_url,
            "--sasl-oauthbearer-expected-audience", AUDIENCE,
            "--sasl-oauthbearer-expected-issuer", ISSUER,
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


@pytest.fixture(scope="module")
def unsecured_broker(tmp_path_factory):
    yield from serve(Broker(
        tmp_path_factory.mktemp("ringbroker-oauth-unsecured"),
        extra_args=[
            "--sasl-enabled-mechanisms", "OAUTHBEARER",
            "--oauthbearer-sasl-jaas-config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
            'unsecuredValidatorRequiredScope="kafka";',
        ],
        listen_protocol="SASL_PLAINTEXT",
    ))


def oidc(broker, issuer, client, secret):
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.client.id": client,
        "sasl.oauthbearer.client.secret": secret,
        "sasl.oauthbearer.token.endpoint.url": issuer.token_url,
    }


def with_token(broker, make_token, calls=None, client_expiry_min_s=60):
    """librdkafka handing the broker whatever token `make_token()` gives
    (oauth_cb), each valid for the client for as long as its exp says, but
    at least `client_expiry_min_s` (librdkafka takes no token it thinks
    expired)."""

    def oauth_cb(_config):
        token = make_token()
        if calls is not None:
            calls.append(time.time())
        import base64
        import json

        body = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        expiry = claims.get("exp", time.time() + 3600)
        expiry = max(expiry, time.time() + client_expiry_min_s)
        return token, expiry, claims.get("sub", "nobody"), {}

    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": oauth_cb,
    }


def test_librdkafka_oidc_produces_and_another_client_reads_back(oidc_broker, issuer, topic):
    issued = issuer.tokens_issued
    produce_and_read_back(
        oidc_broker, topic,
        {**oidc(oidc_broker, issuer, "alice", "alice-secret"), "enable.idempotence": True},
        oidc(oidc_broker, issuer, "bob", "bob-secret"),
    )
    assert issuer.tokens_issued >= issued + 2


@pytest.mark.parametrize("case", [
    "expired", "other-key", "other-audience", "no-audience", "other-issuer",
    "no-subject", "no-iat", "unsigned", "not-yet-valid",
])
def test_tokens_the_broker_must_not_take_are_refused(oidc_broker, issuer, case):
    now = int(time.time())
    foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    make = {
        "expired": lambda: issuer.mint("alice", lifetime_s=-5),
        "other-key": lambda: issuer.mint("alice", key=foreign),
        "other-audience": lambda: issuer.mint("alice", claims={"aud": "another-service"}),
        "no-audience": lambda: issuer.mint("alice", claims={"aud": None}),
        "other-issuer": lambda: issuer.mint("alice", claims={"iss": "https://elsewhere.test"}),
        "no-subject": lambda: issuer.mint(None),
        "no-iat": lambda: issuer.mint("alice", claims={"iat": None}),
        "unsigned": lambda: unsecured_token("alice", iss=ISSUER, aud=AUDIENCE),
        "not-yet-valid": lambda: issuer.mint("alice", claims={"nbf": now + 600}),
    }[case]
    assert_refused(with_token(oidc_broker, make), INVALID_TOKEN)
    oidc_broker.assert_alive()


@pytest.mark.parametrize("algorithm", ["PS256", "RS512"])
def test_any_rsa_algorithm_verifies_with_an_rsa_key(oidc_broker, issuer, algorithm):
    # The JWKS declares its keys RS256; Kafka 4.1.1 takes PS256 and RS512
    # tokens signed with them all the same (measured).
    producer = Producer(with_token(oidc_broker, lambda: issuer.mint("alice", algorithm=algorithm)))
    assert producer.list_topics(timeout=10).brokers


def test_a_key_the_provider_adds_is_fetched_when_a_token_names_it(oidc_broker, issuer, topic):
    fetched = issuer.jwks_requests
    kid = issuer.add_key()
    # The first login with the new key is refused (as by Kafka: the fetch
    # it starts comes too late for it); librdkafka logs in again and is in.
    producer = Producer(with_token(oidc_broker, lambda: issuer.mint("alice", kid=kid)))
    deadline = time.monotonic() + 30
    while True:
        try:
            producer.list_topics(timeout=2)
            break
        except KafkaException:
            assert time.monotonic() < deadline, "never logged in with the new key"
    assert issuer.jwks_requests == fetched + 1
    producer.produce(topic, b"signed with the new key")
    assert producer.flush(10) == 0


def test_a_session_ends_with_its_token_and_librdkafka_renews_it(oidc_broker, issuer, topic):
    # Tokens valid for 6 s: the broker gives each session 6 s at most (the
    # lifetime SaslAuthenticate answers, as Kafka's even with
    # connections.max.reauth.ms unset), and librdkafka fetches a new token
    # and re-authenticates on the same connection before it ends: over
    # 15 s, every message is delivered, in order.
    calls = []
    expired_before = oidc_broker.log_text().count(SESSION_EXPIRED)
    delivered, failed = [], []
    producer = Producer({
        **with_token(oidc_broker, lambda: issuer.mint("alice", lifetime_s=6), calls, 0),
        "linger.ms": 0,
    })
    end = time.monotonic() + 15
    i = 0
    while time.monotonic() < end:
        producer.produce(
            topic, f"m{i}".encode(), partition=0,
            on_delivery=lambda err, msg: (failed if err else delivered).append(err or msg.offset()),
        )
        producer.flush(10)
        i += 1
        time.sleep(0.2)
    assert not failed, failed
    assert delivered == list(range(i))
    assert len(calls) >= 3, f"oauth_cb called {len(calls)} times"
    # Most sessions are renewed in time (KIP-368); one librdkafka renews
    # late on a loaded machine is closed and the client logs in again,
    # as with Kafka. Not every one.
    renewals_missed = oidc_broker.log_text().count(SESSION_EXPIRED) - expired_before
    assert renewals_missed <= 2, f"{renewals_missed} sessions expired unrenewed"


class Provider(AbstractTokenProvider):
    def __init__(self, issuer, client):
        super().__init__()
        self.issuer, self.client = issuer, client

    def token(self):
        return self.issuer.mint(self.client)

    def extensions(self):
        return {"traceId": "abc-123", "logicalCluster": "lkc-1"}


def test_kafka_python_logs_in_with_its_token_provider(oidc_broker, issuer, topic):
    settings = dict(
        bootstrap_servers=oidc_broker.bootstrap,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        request_timeout_ms=10000,
    )
    kafka_python_round_trip(topic, sasl_oauth_token_provider=Provider(issuer, "bob"), **settings)


def test_java_client_logs_in_through_the_token_endpoint(classpath, oidc_broker, issuer, topic):  # noqa: F811
    result = run_java(classpath, "plain", oidc_broker, topic, env={
        "JAVA_CLIENT_SASL": "OAUTHBEARER:alice:alice-secret",
        "JAVA_CLIENT_OAUTH_TOKEN_URL": issuer.token_url,
        # mallory's tokens are for another audience.
        "JAVA_CLIENT_SASL_REFUSED": "OAUTHBEARER:mallory:mallory-secret",
    })
    assert result == {
        "read": 200,
        "committed": 200,
        "refused": "SaslAuthenticationException: {'status':'invalid_token'}",
    }


def unsecured(broker, extra):
    return {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": True,
        "sasl.oauthbearer.config": extra,
    }


def test_librdkafka_unsecured_tokens_with_the_required_scope(unsecured_broker, topic):
    produce_and_read_back(
        unsecured_broker, topic,
        unsecured(unsecured_broker, "principal=alice scope=kafka,other"),
        unsecured(unsecured_broker, "principal=bob scope=kafka"),
    )
    assert_refused(
        unsecured(unsecured_broker, "principal=alice scope=other"),
        '{"status":"insufficient_scope", "scope":"[kafka]"}',
    )


def test_kafka_python_unsigned_token_without_scope_is_refused(unsecured_broker, topic):
    class Unsigned(AbstractTokenProvider):
        def token(self):
            return unsecured_token("carol")

    refusals = unsecured_broker.log_text().count("The provided scope lacked a required item: kafka")
    consumer_failed = False
    try:
        KafkaConsumer(
            topic,
            bootstrap_servers=unsecured_broker.bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=Unsigned(),
            request_timeout_ms=5000,
            bootstrap_timeout_ms=5000,
        ).topics()
    except Exception:  # noqa: BLE001 (kafka-python's error types vary by path)
        consumer_failed = True
    assert consumer_failed
    assert unsecured_broker.log_text().count("The provided scope lacked a required item: kafka") > refusals
    unsecured_broker.assert_alive()
