"""Who may use a `trt-tui serve` page: the checks made on every HTTP request and WebSocket upgrade.

The page starts, cancels and forces builds, so three checks come before any handler (none of them
starts an app process when it refuses):

- Host: only the names this server is reached by (the address it listens on, the loopback names when
  that is loopback, this host's names and addresses when it listens on every interface). A page on
  another site cannot then reach it through DNS rebinding (its name resolving to 127.0.0.1).
- Origin: where a browser sends one (it always does on a WebSocket upgrade), it must be this page's
  own origin, so a page elsewhere cannot drive the server from a visitor's browser.
- The token, unless `--no-token` was asked for on loopback: `?token=` on the printed URL (answered
  with a cookie and a redirect that drops it from the address bar), the cookie, or an
  `Authorization: Bearer` header for scripts.

Cookies are not scoped by port, so the cookie's name carries the port (two servers on one host keep
their own) and its value is derived from the token, not the token: the other services of the host
that see it do not learn a token the user may have given other servers too.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import re
import socket
from urllib.parse import urlencode, urlsplit

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})
TOKEN_CHARS = re.compile(r"[A-Za-z0-9._~-]+")  # what a URL carries as it is, and a header too
_TOKEN_IN_TEXT = re.compile(r"(token=)[^&\s\"'#]*", re.IGNORECASE)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    return host in ("", "0.0.0.0", "::")


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


def host_addresses() -> list[str]:
    """This host's addresses on its interfaces, loopback last (for the start-up line and the Host check)."""
    import psutil

    found: list[str] = []
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                address = entry.address.split("%", 1)[0]  # a link-local address's zone is no part of a Host
                if address not in found:
                    found.append(address)
    return sorted(found, key=lambda a: (is_loopback(a), ":" in a))


def served_names(host: str) -> frozenset[str]:
    """The names (as a Host header writes them, without the port) a browser may use for this server."""
    names = {_bracketed(host.lower())}
    if is_loopback(host) or is_wildcard(host):
        names |= LOOPBACK_NAMES
    if not is_loopback(host):
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    if is_wildcard(host):
        names |= {_bracketed(address) for address in host_addresses()}
    return frozenset(name.rstrip(".") for name in names if name)


def host_name(header: str) -> str:
    """`Host`'s name without its port: `[::1]:8000` -> `[::1]`, `Box.:8000` -> `box`."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else ""
    if value.count(":") == 1:
        value = value.rsplit(":", 1)[0]
    return value.rstrip(".")


def redact(text: str, token: str | None) -> str:
    """`text` with every `token=` value and the token itself masked (for the server's log)."""
    text = _TOKEN_IN_TEXT.sub(r"\1…", text)
    return text.replace(token, "…") if token and len(token) >= 4 else text  # a shorter one is in every word


class RedactingFormatter(logging.Formatter):
    """The serve process's log lines (the access log, tracebacks included) never show the token."""

    def __init__(self, token: str | None) -> None:
        super().__init__("%(message)s")
        self.token = token

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.token)


def _bytes(value: str) -> bytes | None:
    """A header or query value as the bytes that came in (aiohttp keeps undecodable bytes as
    surrogates); None when it cannot be one (then it is no token)."""
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeError:
        return None


class Access:
    """The checks for one server: `port` names its cookie; `token` None means none is required."""

    def __init__(self, host: str, port: int, token: str | None) -> None:
        self.names = served_names(host)
        self.token = token
        self.cookie = f"trt_tui_token_{port}"
        self.cookie_value = (hmac.new(token.encode(), f"trt-tui cookie {port}".encode(), hashlib.sha256).hexdigest()
                             if token is not None else None)

    def refusal(self, request) -> str | None:
        """Why `request` is refused (403), or None."""
        host = request.headers.get("Host", "")
        if host_name(host) not in self.names:
            return "this server does not answer to that name (Host); open the URL it printed"
        origin = request.headers.get("Origin")
        if origin is not None and not self._same_origin(origin, host):
            return "requests from other sites' pages are refused (Origin)"
        if self.token is not None and not self._authorised(request):
            return "this server needs its token (open the URL it printed)"
        return None

    @staticmethod
    def _same_origin(origin: str, host: str) -> bool:
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme == "http" and parts.netloc.lower() == host.strip().lower()

    def _authorised(self, request) -> bool:
        if self.token is None or self.cookie_value is None:
            return True  # no token is required
        header = request.headers.get("Authorization", "")
        bearer = header[len("Bearer "):].strip() if header.startswith("Bearer ") else ""
        if self._matches(request.query.get("token", ""), self.token) or self._matches(bearer, self.token):
            return True
        return self._matches(request.cookies.get(self.cookie, ""), self.cookie_value)

    @staticmethod
    def _matches(given: str, expected: str) -> bool:
        data = _bytes(given) if given else None
        return data is not None and hmac.compare_digest(data, expected.encode())

    def middleware(self):
        """The aiohttp middleware that makes the checks, and moves a `?token=` on the page into the cookie."""
        from aiohttp import web

        @web.middleware
        async def check_access(request, handler):
            try:
                reason = self.refusal(request)
            except Exception:  # a request the checks cannot read is refused, never a 500 (nor a log line)
                reason = "malformed request"
            if reason is not None:
                raise web.HTTPForbidden(text=f"trt-tui: {reason}\n")
            if self.cookie_value is not None and "token" in request.query and request.path == "/":
                # Into the cookie and out of the address bar (and the browser's history): back to the page.
                query = urlencode([(k, v) for k, v in request.query.items() if k != "token"])
                moved = web.HTTPSeeOther("/" + (f"?{query}" if query else ""))
                moved.set_cookie(self.cookie, self.cookie_value, path="/", httponly=True, samesite="Strict")
                raise moved
            return await handler(request)

        return check_access
