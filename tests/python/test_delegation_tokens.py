"""Delegation tokens (KIP-48) with the Java client, as `kafka-delegation-tokens`
and the Admin API use them, with Kafka's own `kafka-delegation-tokens` tool,
and with franz-go.

Goal: with `--delegation-token-secret-key` (Kafka's
`delegation.token.secret.key`) users create, describe, renew and expire
tokens, and a client logs in with one (SCRAM with `tokenauth=true`, either
mechanism) as the token's owner: the owner's ACLs let it produce and
consume, and it may not ask for tokens itself. Every refusal is Kafka's:
another owner without CREATE_TOKENS, a renewer that is not a User, a
renewer or expirer who is neither owner nor renewer, an unknown HMAC, an
expired token. Who sees which tokens follows Kafka: owner, requester and
renewers see theirs, DESCRIBE_TOKENS on a user shows that user's, a super
user sees all, an empty owner list none. Tokens survive kill -9; a restart
under another key gives every token the HMAC the new key makes (the old
one no longer logs in), as Kafka recomputes them; expired tokens are swept
every `delegation.token.expiry.check.interval.ms`.

Method: tests/java/JavaClient.java modes "token-life", "token-login" and
"token-sweep" against a SASL_PLAINTEXT broker with StandardAuthorizer (admin
a super user). The expected answers are Kafka 4.1.1's to the same program
(recorded against a KRaft broker with delegation.token.secret.key,
SCRAM-SHA-256/512 and StandardAuthorizer, super.users=User:admin). Kafka's
broker learns of a new token from the metadata it replays, so a describe
right after a create sometimes misses it there; here the token is in every
core's metadata before the create is answered, which is what Kafka shows
once it has caught up.
"""

import base64
import datetime
import hashlib
import hmac
import re
import subprocess
import time

import pytest

from conftest import Broker, maven_classpath, serve
from test_franz_go import franzclient  # noqa: F401 (a fixture)
from test_franz_go import run as run_franz
from test_java_client import classpath, run_java  # noqa: F401 (classpath is a fixture)
from test_kafka_tools import TOOLS_DIR, normalize

USERS = ("admin", "alice", "bob", "carol")


def token_broker_args(secret, *extra):
    args = ["--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
            "--authorizer-class-name", "standard", "--super-users", "User:admin",
            "--delegation-token-secret-key", secret, *extra]
    for user in USERS:
        args += ["--add-scram", f"SCRAM-SHA-256=[name={user},password={user}-secret]"]
    return args


@pytest.fixture
def token_broker(tmp_path):
    yield from serve(Broker(tmp_path, extra_args=token_broker_args("first-secret"), cores=2,
                            listen_protocol="SASL_PLAINTEXT"))


# Kafka 4.1.1's answers to "token-life" (ids and HMACs left out).
KAFKA_TOKEN_LIFE = {
    "A": "User:alice by User:alice renewers [User:bob] expiry+86400000 max+604800000",
    "A id and hmac": "22 64",
    "B": "User:alice by User:alice renewers [] expiry+100 max+100",
    "admin for bob": "User:bob by User:admin renewers [] expiry+86400000 max+604800000",
    "alice for bob": "DelegationTokenAuthorizationException",
    "alice renewed by a group": "InvalidPrincipalTypeException",
    "describe admin": "alice/alice,alice/alice,bob/admin",
    "describe admin owners bob": "alice/alice,bob/admin",
    "describe admin owners none": "",
    "describe alice": "alice/alice,alice/alice",
    "describe bob": "alice/alice,bob/admin",
    "describe carol": "",
    "describe carol with DESCRIBE_TOKENS on alice": "alice/alice,alice/alice",
    "token SCRAM-SHA-256 sends": "20",
    "token SCRAM-SHA-256 describes": "UnsupportedByAuthenticationException",
    "token SCRAM-SHA-256 creates": "UnsupportedByAuthenticationException",
    "token SCRAM-SHA-512 sends": "20",
    "token SCRAM-SHA-512 describes": "UnsupportedByAuthenticationException",
    "token SCRAM-SHA-512 creates": "UnsupportedByAuthenticationException",
    "token read": "40",
    "token wrong hmac": "SaslAuthenticationException: Authentication failed during authentication"
                        " due to invalid credentials with SASL mechanism SCRAM-SHA-256",
    "carol renews A": "DelegationTokenOwnerMismatchException",
    "bob renews A for 60 s": "ok",
    "renew unknown": "DelegationTokenNotFoundException",
    "renew B expired": "DelegationTokenExpiredException",
    "expire B expired for 1 s": "DelegationTokenExpiredException",
    "token B login": "refused",
    "bob removes B": "DelegationTokenOwnerMismatchException",
    "alice removes B": "now",
    "alice removes B again": "DelegationTokenNotFoundException",
    "describe alice at the end": "alice/alice",
}


def test_java_admin_creates_renews_expires_and_logs_in_with_tokens_as_with_kafka(classpath, token_broker, topic):  # noqa: F811
    admin = {"JAVA_CLIENT_SASL": "SCRAM-SHA-256:admin:admin-secret"}
    seen = run_java(classpath, "token-life", token_broker, topic, env=admin)
    token_id, token_hmac = seen.pop("A token"), seen.pop("A hmac")
    assert seen == KAFKA_TOKEN_LIFE
    # The HMAC is HmacSHA512 of the id under the key, as Kafka makes it.
    expected = hmac.new(b"first-secret", token_id.encode(), hashlib.sha512).digest()
    assert base64.b64decode(token_hmac) == expected

    # Acknowledged tokens survive kill -9.
    token_broker.kill()
    token_broker.start()
    login = {"JAVA_CLIENT_TOKEN": f"{token_id} {token_hmac}"}
    assert run_java(classpath, "token-login", token_broker, topic, env=login) == {
        "read": "40", "describe alice": "alice/alice"}

    # Under another key the token's HMAC is the new key's: it logs in with
    # that one, no longer with the old one.
    token_broker.stop()
    token_broker.extra_args = token_broker_args("second-secret")
    token_broker.start()
    # Shard 0 gives the token new credentials right after start-up.
    deadline = time.monotonic() + 30
    while "given the current key's credentials" not in token_broker.log_text():
        assert time.monotonic() < deadline, token_broker.log_tail()
        time.sleep(0.05)
    new_hmac = base64.b64encode(hmac.new(b"second-secret", token_id.encode(), hashlib.sha512).digest()).decode()
    login = {"JAVA_CLIENT_TOKEN": f"{token_id} {new_hmac} {token_hmac}"}
    assert run_java(classpath, "token-login", token_broker, topic, env=login) == {
        "read": "40", "describe alice": "alice/alice",
        "other hmac": KAFKA_TOKEN_LIFE["token wrong hmac"]}


def test_expired_tokens_are_swept_every_check_interval(classpath, tmp_path, topic):  # noqa: F811
    broker = Broker(tmp_path, cores=2, listen_protocol="SASL_PLAINTEXT",
                    extra_args=token_broker_args("secret", "--delegation-token-expiry-check-interval-ms", "1000"))
    for running in serve(broker):
        seen = run_java(classpath, "token-sweep", running, topic)
    # Kafka 4.1.1 with delegation.token.expiry.check.interval.ms=1000 gave
    # the same, but for a first describe that missed the new token.
    assert seen == {"described at first": "1", "described at last": "0",
                    "renew once swept": "DelegationTokenNotFoundException"}


def test_franz_go_logs_in_with_a_token_it_asked_for(franzclient, tmp_path, topic):  # noqa: F811
    """franz-go asks for a token with kmsg and logs in with it (scram.Auth's
    IsToken) with either mechanism: it produces and reads back as alice,
    and is refused token requests on that session and a wrong HMAC. Kafka
    4.1.1 gave the same (alice a super user there)."""
    args = ["--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512",
            "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--delegation-token-secret-key", "secret"]
    broker = Broker(tmp_path, cores=2, listen_protocol="SASL_PLAINTEXT", extra_args=args)
    for running in serve(broker):
        seen = run_franz(franzclient, "token", running, topic)
    assert seen == {
        "created": "", "owner": "User:alice", "read": 10,
        "SCRAM-SHA-256 describes": "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        "SCRAM-SHA-512 describes": "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
        "wrong hmac": "SASL_AUTHENTICATION_FAILED",
    }


@pytest.fixture(scope="module")
def tools_classpath(tmp_path_factory):
    return maven_classpath(TOOLS_DIR, tmp_path_factory, "the Kafka tools tests")


# What kafka-delegation-tokens (kafka-tools 4.1.1) printed against Kafka
# 4.1.1 for the same steps, ids, HMACs and dates replaced.
KAFKA_TOOL_OUTPUT = [
    """Calling create token operation with renewers :[User:bob] , max-life-time-period :-1
Created delegation token with tokenId : ID

TOKENID         HMAC                           OWNER           REQUESTER       RENEWERS                  ISSUEDATE       EXPIRYDATE      MAXDATE

ID HMAC User:alice      User:alice      [User:bob]                DATE DATE DATE""",
    """Calling describe token operation for owners: [User:carol]
Total number of tokens : 0
TOKENID         HMAC                           OWNER           REQUESTER       RENEWERS                  ISSUEDATE       EXPIRYDATE      MAXDATE""",
    """Calling renew token operation with hmac :HMAC , renew-time-period :60000
Completed renew operation. New expiry date : DATE""",
    """Calling expire token operation with hmac :HMAC , expire-time-period :-1
Completed expire operation. New expiry date : DATE""",
    """Calling expire token operation with hmac :HMAC , expire-time-period :-1
org.apache.kafka.common.errors.DelegationTokenNotFoundException: Delegation Token is not found on server.
java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.DelegationTokenNotFoundException:"""
    """ Delegation Token is not found on server.
Caused by: org.apache.kafka.common.errors.DelegationTokenNotFoundException: Delegation Token is not found on server.
""",
]


def test_kafka_delegation_tokens_tool_creates_describes_renews_and_expires_like_kafka(tools_classpath, tmp_path):
    args = ["--sasl-enabled-mechanisms", "SCRAM-SHA-256",
            "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
            "--delegation-token-secret-key", "secret"]
    config = tmp_path / "alice.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                      "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required"
                      " username=\"alice\" password=\"alice-secret\";\n")
    broker = Broker(tmp_path / "broker", cores=2, listen_protocol="SASL_PLAINTEXT", extra_args=args)
    outputs = []
    for running in serve(broker):
        def tool(*words):
            completed = subprocess.run(
                ["java", "-cp", tools_classpath, "org.apache.kafka.tools.DelegationTokenCommand",
                 "--bootstrap-server", running.bootstrap, "--command-config", str(config), *words],
                capture_output=True, text=True, timeout=120)
            return normalize(completed.stdout + completed.stderr, running.bootstrap)

        created = tool("--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
        token_id = re.search(r"tokenId : (\S+)", created).group(1)
        row = next(line for line in created.splitlines() if line.startswith(token_id + " "))
        token_hmac = row.split()[1]
        outputs.append(created)
        outputs.append(tool("--describe", "--owner-principal", "User:carol"))
        outputs.append(tool("--renew", "--hmac", token_hmac, "--renew-time-period", "60000"))
        outputs.append(tool("--expire", "--hmac", token_hmac, "--expiry-time-period", "-1"))
        outputs.append(tool("--expire", "--hmac", token_hmac, "--expiry-time-period", "-1"))
    # The token's dates: expiry a day after issue, max a week after.
    issue, expiry, max_date = (datetime.datetime.fromisoformat(d) for d in row.split()[-3:])
    assert (expiry - issue, max_date - issue) == (datetime.timedelta(days=1), datetime.timedelta(days=7))

    def replaced(text):
        text = text.replace(token_id, "ID").replace(token_hmac, "HMAC")
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d", "DATE", text)

    assert [replaced(output) for output in outputs] == KAFKA_TOOL_OUTPUT
