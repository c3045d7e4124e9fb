"""The sandbox's network: a domain allow-list enforced by a filtering proxy (issue 16).

With ``sandbox.network.mode = "limited"`` a command's network namespace has no route out;
a tiny relay (:mod:`.relay`) makes the proxy's listening socket inside that namespace and
hands it to codingcode through an inherited unix socket, then runs the command. The proxy
(:mod:`.proxy`) runs in codingcode, outside the sandbox, one listener per call; it decides
every connection by name (:mod:`.domains`) and address (:mod:`.addresses`).

This package is imported by the relay inside the sandbox, so it imports nothing heavy here.
"""
