"""The SDK clients bargein makes: the SDK's own HTTP clients, one TLS context per process."""

from __future__ import annotations

import ssl

import anthropic
import openai
import pytest

from bargein.llm.sdkclients import http_client, shared_ssl_context


@pytest.mark.parametrize("kind", ["aiohttp", "httpx"])
def test_every_client_bargein_makes_verifies_tls_with_one_shared_context(kind):
    """A client per event loop must not rebuild the CA store each time (~0.1 s of CPU), and the
    context it shares is the library's default: verification on, hostnames checked."""
    a = http_client(openai, 64, 30.0, kind)
    b = http_client(anthropic, 8, 30.0, kind)
    ctx = shared_ssl_context(openai)
    assert isinstance(ctx, ssl.SSLContext) and ctx is shared_ssl_context(anthropic)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.cert_store_stats()["x509_ca"] > 0          # the system's CA bundle is loaded
    for c in (a, b):
        transport = c._transport
        used = getattr(transport, "ssl_context", None) or transport._pool._ssl_context
        assert used is ctx


def test_a_changed_ca_bundle_variable_gives_a_new_context(monkeypatch, tmp_path):
    default = shared_ssl_context(openai)
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    other = shared_ssl_context(openai)
    assert other is not default and shared_ssl_context(openai) is other
