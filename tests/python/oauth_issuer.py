"""A small OAuth 2 / OIDC identity provider for the SASL/OAUTHBEARER tests.

It signs JWT access tokens with RSA keys (RS256) and serves, over HTTP on
127.0.0.1:
- ``/token``: the client-credentials grant (RFC 6749 4.4) that librdkafka's
  ``sasl.oauthbearer.method=oidc`` and the Java client's
  ``OAuthBearerLoginCallbackHandler`` use: the client id and secret come as
  HTTP Basic authentication (or form fields), the answer is
  ``{"access_token", "token_type", "expires_in"}``;
- ``/jwks``: the JSON Web Key Set of the keys tokens are signed with, which
  the broker reads from ``sasl.oauthbearer.jwks.endpoint.url``.

Tokens can also be minted directly (``mint``), with any claims, so a test
can hand a client an expired, foreign or malformed one.

Run as a script it serves until killed, printing its port: the same issuer
then serves a reference Kafka broker.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://issuer.ringbroker.test"
AUDIENCE = "kafka-broker"


class Issuer:
    """An identity provider with its own signing keys and HTTP endpoints."""

    def __init__(
        self,
        clients: dict[str, str],
        port: int = 0,
        lifetime_s: int = 3600,
        key_pem: bytes | None = None,
        client_claims: dict[str, dict] | None = None,
    ):
        self.clients = dict(clients)
        # Claims a client's tokens carry besides (or instead of) the usual.
        self.client_claims = dict(client_claims or {})
        self.lifetime_s = lifetime_s
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self._lock = threading.Lock()
        if key_pem is not None:
            self.keys["key-1"] = serialization.load_pem_private_key(key_pem, password=None)
            self.signing_kid = "key-1"
        else:
            self.signing_kid = self.add_key()
        self.tokens_issued = 0
        self.jwks_requests = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path.split("?")[0] == "/jwks":
                    with issuer._lock:
                        issuer.jwks_requests += 1
                    self._answer(200, issuer.jwks())
                else:
                    self._answer(404, {"error": "not_found"})

            def do_POST(self):
                if self.path.split("?")[0] != "/token":
                    self._answer(404, {"error": "not_found"})
                    return
                length = int(self.headers.get("Content-Length", "0"))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                client_id = form.get("client_id", [None])[0]
                secret = form.get("client_secret", [None])[0]
                basic = self.headers.get("Authorization", "")
                if basic.startswith("Basic "):
                    raw = base64.b64decode(basic[6:]).decode()
                    user, _, password = raw.partition(":")
                    client_id = urllib.parse.unquote_plus(user)
                    secret = urllib.parse.unquote_plus(password)
                if client_id is None or issuer.clients.get(client_id) != secret:
                    self._answer(401, {"error": "invalid_client"})
                    return
                scope = form.get("scope", [""])[0]
                token = issuer.mint(
                    client_id, scope=scope or None, claims=issuer.client_claims.get(client_id)
                )
                with issuer._lock:
                    issuer.tokens_issued += 1
                self._answer(
                    200,
                    {
                        "access_token": token,
                        "token_type": "Bearer",
                        "expires_in": issuer.lifetime_s,
                    },
                )

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    @property
    def jwks_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/jwks"

    def add_key(self) -> str:
        """Makes a new signing key, published in the JWKS; returns its kid."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with self._lock:
            kid = f"key-{len(self.keys) + 1}"
            self.keys[kid] = key
        return kid

    def jwks(self) -> dict:
        keys = []
        with self._lock:
            published = list(self.keys.items())
        for kid, key in published:
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            jwk.update({"kid": kid, "use": "sig", "alg": "RS256"})
            keys.append(jwk)
        return {"keys": keys}

    def mint(
        self,
        sub: str | None,
        scope: str | None = None,
        lifetime_s: float | None = None,
        kid: str | None = None,
        key: rsa.RSAPrivateKey | None = None,
        claims: dict | None = None,
        algorithm: str = "RS256",
    ) -> str:
        """A signed token for ``sub`` (left out when None)."""
        now = int(time.time())
        body = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "iat": now,
            "exp": now + int(self.lifetime_s if lifetime_s is None else lifetime_s),
        }
        if sub is not None:
            body["sub"] = sub
        if scope is not None:
            body["scope"] = scope
        body.update(claims or {})
        body = {k: v for k, v in body.items() if v is not None}
        kid = kid or self.signing_kid
        signer = key or self.keys[kid]
        return jwt.encode(body, signer, algorithm=algorithm, headers={"kid": kid})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def unsecured_token(sub: str | None, lifetime_s: float = 3600, **claims) -> str:
    """An unsecured JWS (alg none, empty signature), as Kafka's
    OAuthBearerUnsecuredLoginCallbackHandler and librdkafka's
    ``enable.sasl.oauthbearer.unsecure.jwt`` make."""

    def b64(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = time.time()
    body = {"iat": now, "exp": now + lifetime_s}
    if sub is not None:
        body["sub"] = sub
    body.update(claims)
    body = {k: v for k, v in body.items() if v is not None}
    return f"{b64({'alg': 'none'})}.{b64(body)}."


def key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


if __name__ == "__main__":
    # oauth_issuer.py PORT KEY_FILE: serves with the key in KEY_FILE (made
    # when missing), so tokens minted elsewhere with it verify.
    port, key_file = int(sys.argv[1]), sys.argv[2]
    try:
        pem = open(key_file, "rb").read()
    except FileNotFoundError:
        pem = key_pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))
        open(key_file, "wb").write(pem)
    issuer = Issuer(
        {"alice": "alice-secret", "bob": "bob-secret", "mallory": "mallory-secret"},
        port=port,
        key_pem=pem,
        client_claims={"mallory": {"aud": "another-service"}},
    )
    print(issuer.port, flush=True)
    threading.Event().wait()
