"""Who may talk to the server, and what every response carries.

The server is meant for the person who started it, through their browser. Other web pages
open in that same browser can send it requests too (a form posted to 127.0.0.1, a page whose
name is rebound to 127.0.0.1), so every request passes :func:`guard_middleware`:

- its ``Host`` must be the bound address with its port (the IP, or ``localhost`` for a
  loopback address, or the name given to ``--host``); else 403 (DNS rebinding: the attacker's
  page reaches us under its own name);
- its ``Origin``, when sent, must be this server's; else 403 (a page elsewhere posting here);
- a request that changes something (any method but GET and HEAD) carries the token printed
  at start-up, in the ``X-Harness-Token`` header or the cookie; else 403. With a host other
  than loopback, every request needs it, reads included;
- ``?token=...`` (the URL printed at start-up) is answered with a redirect to the same page
  without it, setting the cookie (HttpOnly: no script reads it; SameSite=Strict: no other
  site's request carries it; named with the port, as cookies are shared between the ports
  of a host), so the token leaves the address bar and the history.

Every response carries ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``,
``Cache-Control: no-store`` and a Content-Security-Policy (the page's own, set by the page,
or one that allows nothing).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.typedefs import Middleware
from yarl import URL

TOKEN_COOKIE = "harness_view_token"  # then the port: cookies do not tell ports apart
TOKEN_HEADER = "X-Harness-Token"
TOKEN_QUERY = "token"
READ_METHODS = frozenset({"GET", "HEAD"})
NOTHING_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP or a name) is this machine's loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split_host(value: str) -> tuple[str, str]:
    """``Host`` header → (name, port as text); IPv6 in brackets."""
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        return name.lower(), rest[1:] if rest.startswith(":") else ""
    name, _, port = value.rpartition(":") if ":" in value else (value, "", "")
    return name.lower(), port


@dataclass
class Guard:
    """The server's access rules, once its address is known. ``host`` is what ``--host``
    named, ``port`` the port bound (known only once listening: port 0 picks one)."""

    token: str
    host: str
    port: int = 0
    names: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        host = self.host.strip("[]").lower()
        self.names = {host}
        if is_loopback(host):
            self.names |= {"localhost", "127.0.0.1", "::1"}
        elif host in ("0.0.0.0", "::"):  # every interface: this machine's own names
            self.names |= {socket.gethostname().lower(), socket.getfqdn().lower(),
                           "localhost"}

    @property
    def reads_need_token(self) -> bool:
        """Off loopback, anyone on the network can connect: every request needs the token."""
        return not is_loopback(self.host.strip("[]"))

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server: one of its names, or,
        bound to every interface, any IP address (a DNS name can be rebound to us; an IP
        address in the ``Host`` cannot come from another site's name), with the port."""
        if not header:
            return False
        name, port = _split_host(header)
        if port != str(self.port) and not (port == "" and self.port == 80):  # 80 is implied
            return False
        wildcard = self.host.strip("[]") in ("0.0.0.0", "::")
        return name in self.names or (wildcard and _is_ip(name))

    def origin_allowed(self, origin: str, host_header: str) -> bool:
        """Whether ``origin`` is this server's own (the scheme and the ``Host`` asked for)."""
        return origin.lower() == f"http://{host_header}".lower()

    @property
    def cookie_name(self) -> str:
        """The token's cookie: one per port, as a browser sends a cookie of 127.0.0.1 to
        every port of it (two servers would otherwise overwrite each other's token)."""
        return f"{TOKEN_COOKIE}_{self.port}"

    def token_ok(self, request: web.Request) -> bool:
        given = (request.headers.get(TOKEN_HEADER) or request.cookies.get(self.cookie_name)
                 or "")
        # a header may carry any byte: one that is no character is simply not the token
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("utf-8"))

    def url(self, path: str = "/") -> str:
        """The address to open, with the token (it becomes a cookie on arrival)."""
        name = self.host.strip("[]")
        if name in ("0.0.0.0", "::"):  # every interface: this machine's name reaches it
            name = socket.gethostname().lower()
        shown = f"[{name}]" if ":" in name else name
        return f"http://{shown}:{self.port}{path}?{TOKEN_QUERY}={self.token}"


def _refuse(why: str) -> web.Response:
    return web.json_response({"error": why}, status=403)


def _secure_headers(response: web.StreamResponse) -> None:
    response.headers.setdefault("Content-Security-Policy", NOTHING_POLICY)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Frame-Options"] = "DENY"


def guard_middleware(guard: Guard) -> Middleware:
    """The middleware applying ``guard`` to every request (see the module docstring)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await _checked(guard, request, handler)
        _secure_headers(response)
        return response

    return check


async def _checked(guard: Guard, request: web.Request,
                   handler: Handler) -> web.StreamResponse:
    host = request.headers.get("Host", "")
    if not guard.host_allowed(host):
        return _refuse("this server answers only at its own address (Host)")
    origin = request.headers.get("Origin")
    if origin is not None and not guard.origin_allowed(origin, host):
        return _refuse("requests from other sites are refused (Origin)")
    if TOKEN_QUERY in request.query:
        return _arrive(guard, request)
    if (request.method not in READ_METHODS or guard.reads_need_token) \
            and not guard.token_ok(request):
        return _refuse("this request needs the token printed when `harness view` started "
                       "(open the URL it printed)")
    try:
        return await handler(request)
    except web.HTTPException as err:  # 404s and the like, as responses given the headers too
        return web.Response(status=err.status, reason=err.reason, text=err.text,
                            headers={k: v for k, v in err.headers.items()
                                     if k.lower() != "content-length"})


def _arrive(guard: Guard, request: web.Request) -> web.StreamResponse:
    """The printed URL: the token becomes a cookie, and the page is asked for again
    without it."""
    given = request.query.get(TOKEN_QUERY, "")
    if not hmac.compare_digest(given.encode("utf-8", "replace"),
                               guard.token.encode("utf-8")):
        return _refuse("wrong token: open the URL `harness view` printed")
    query = {k: v for k, v in request.query.items() if k != TOKEN_QUERY}
    # "//host/..." would send the browser to another site: the path stays on this one
    path = "/" + request.rel_url.raw_path.lstrip("/")
    target = URL(path, encoded=True).with_query(query or None)
    response = web.Response(status=303, headers={"Location": str(target)})
    response.set_cookie(guard.cookie_name, guard.token, httponly=True, samesite="Strict",
                        path="/")
    return response
