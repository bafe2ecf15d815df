"""One TLS context for the process's HTTP clients (httpx's defaults: its CA bundle, or
`SSL_CERT_FILE`): each client making its own would load the CA bundle again, about 0.1 s
apiece, in start-up or in a first model call."""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def shared_tls() -> ssl.SSLContext:
    return httpx.create_ssl_context()
